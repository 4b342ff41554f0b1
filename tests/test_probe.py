"""``placement-webhooks probe``: a review round trip as the API server makes it, then the switch
to the configured failure policies. Against the real server (gunicorn, TLS) and the fake API."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from controlplane.harness.process import free_port
from tests.command import invoke_cli
from tests.e2e.serving import Server, serving
from tests.fakeapi import FakeApiServer, running
from webhooks.certs import pki
from webhooks.core.review import ReviewError, read_response
from webhooks.install.probe import Target, round_trip, targets
from webhooks.install.webhookconfig import POLICY_FIELD_MANAGER, WebhookSettings, configurations

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("probe")
    # A certificate for localhost only, so 127.0.0.1 is an address it does not name.
    chain = pki.generate(workdir / "tls", hosts=["localhost"])
    with serving(workdir, cert_dir=chain.ca.parent) as running_server:
        yield running_server


def _bundle(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _registered(server: Server, *, ca_bundle: str | None = None) -> list[dict[str, Any]]:
    """The configurations `webhook-config` writes, pointing at the test server by URL."""
    settings = WebhookSettings(
        name="pw",
        url=f"https://localhost:{server.port}",
        ca_bundle=_bundle(server.ca) if ca_bundle is None else ca_bundle,
    )
    return configurations(settings, [
        {"name": "a", "mutate": {"pods": ["CREATE"]}},
        {"name": "b", "validate": {"pods": ["CREATE"]}},
    ], ["a", "b"])  # fmt: skip


def _probe(api: FakeApiServer, tmp_path: Path, *args: str) -> Any:
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    return invoke_cli(["probe", "--name=pw", f"--kubeconfig={kubeconfig}", *args])


# --------------------------------------------------------------------------- targets


def test_targets_are_where_the_api_server_would_dial() -> None:
    config = {
        "webhooks": [
            {
                "name": "validate.pw.svc",
                "clientConfig": {
                    "service": {"name": "pw", "namespace": "ns", "path": "/validate", "port": 8443},
                    "caBundle": base64.b64encode(b"PEM").decode(),
                },
            },
            {
                "name": "nodes.validate.pw.svc",
                "clientConfig": {
                    "service": {"name": "pw", "namespace": "ns", "path": "/validate", "port": 8443},
                    "caBundle": base64.b64encode(b"PEM").decode(),
                },
            },
            {"name": "x", "clientConfig": {"url": "https://hooks.example/x"}},
        ]
    }
    both = ("validate.pw.svc", "nodes.validate.pw.svc")
    assert targets([config]) == [
        Target("https://pw.ns.svc:8443/validate", b"PEM", both),
        Target("https://hooks.example/x", b"", ("x",)),
    ]


# --------------------------------------------------------------------------- answers

UID = "6f1d4c8a-2b7e-4f0e-9a51-0c3d2e1f4a5b"


def _answer(**response: Any) -> bytes:
    return orjson.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>", "not JSON"),
        (orjson.dumps({"apiVersion": "v1", "kind": "Status"}), "not an admission.k8s.io/v1"),
        (_answer(uid="other", allowed=True), "for uid 'other'"),
        (_answer(uid=UID), "whether the request is allowed"),
        (_answer(uid=UID, allowed=True, patch="W10="), "patchType"),
        (
            orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
            "no response",
        ),
    ],
    ids=[
        "a body that is not JSON",
        "another kind of object",
        "an answer to another request",
        "an answer that does not decide",
        "a patch without its type",
        "a review without a response",
    ],
)
def test_answers_the_api_server_would_refuse_are_refused(body: bytes, problem: str) -> None:
    with pytest.raises(ReviewError, match=problem):
        read_response(body, UID)


def test_an_answer_the_api_server_accepts_is_read() -> None:
    assert read_response(_answer(uid=UID, allowed=False), UID)["allowed"] is False


# --------------------------------------------------------------------------- round trips


def test_a_round_trip_to_the_running_server(server: Server) -> None:
    target = Target(f"https://localhost:{server.port}/validate", server.ca.read_bytes(), ("v",))
    outcome = round_trip(target, "default")
    assert outcome.problem == ""
    assert outcome.allowed is True


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("another CA", "not trusted for localhost: unable to get local issuer"),
        (
            "an address the certificate does not name",
            "not trusted for 127.0.0.1: IP address mismatch",
        ),
        ("nothing listening", "no answer"),
        ("no caBundle yet", "no caBundle"),
        ("a path that is not a webhook", "HTTP 404"),
    ],
)
def test_what_would_fail_at_the_api_server_fails_the_probe(
    server: Server, tmp_path: Path, case: str, problem: str
) -> None:
    other = pki.generate(tmp_path, hosts=["localhost"]).ca.read_bytes()
    ca = server.ca.read_bytes()
    target = {
        "another CA": Target(f"https://localhost:{server.port}/validate", other, ()),
        "an address the certificate does not name": Target(
            f"https://127.0.0.1:{server.port}/validate", ca, ()
        ),
        "nothing listening": Target(f"https://localhost:{free_port()}/validate", ca, ()),
        "no caBundle yet": Target(f"https://localhost:{server.port}/validate", b"", ()),
        "a path that is not a webhook": Target(f"https://localhost:{server.port}/nothing", ca, ()),
    }[case]
    assert problem in round_trip(target, "default", timeout=5).problem


# --------------------------------------------------------------------------- the command


def test_probe_by_url_needs_no_cluster(server: Server) -> None:
    result = invoke_cli(
        ["probe", f"--url=https://localhost:{server.port}/mutate", f"--ca-file={server.ca}"],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"ok https://localhost:{server.port}/mutate: allowed in ")


def test_probe_then_switches_to_the_configured_policies(server: Server, tmp_path: Path) -> None:
    objects = _registered(server)
    for obj in objects:
        for hook in obj["webhooks"]:
            hook["failurePolicy"] = "Ignore"  # as `helm install` renders them
    with running(*objects) as api:
        result = _probe(api, tmp_path, "--failure-policy=validate.pw.svc=Fail")
        stored = api.stored("validatingwebhookconfigurations")
        mutating = api.stored("mutatingwebhookconfigurations")
        patches = [r for r in api.requests if r.method == "PATCH"]
    assert result.exit_code == 0, result.output
    assert "ok https://localhost" in result.stdout
    assert [h["failurePolicy"] for h in stored[0]["webhooks"]] == ["Fail"]
    assert [h["failurePolicy"] for h in mutating[0]["webhooks"]] == ["Ignore"]
    # The forced apply sets the policy; the second gives up every Fail it holds (the API's
    # default), so the release's next apply owns the field again and never conflicts.
    forced, released = patches
    assert forced.query["fieldManager"] == released.query["fieldManager"] == [POLICY_FIELD_MANAGER]
    assert forced.query["force"] == ["true"]
    assert forced.body["webhooks"] == [{"name": "validate.pw.svc", "failurePolicy": "Fail"}]
    assert "force" not in released.query
    assert "webhooks" not in released.body
    assert "ValidatingWebhookConfiguration pw: failurePolicy set validate.pw.svc=Fail" in (
        result.stdout
    )


def test_probe_waits_for_the_ca_bundle_to_be_injected(server: Server, tmp_path: Path) -> None:
    # tls.mode managed: the configurations start without a caBundle until the pods inject it.
    with running(*_registered(server, ca_bundle="")) as api:

        def inject() -> None:
            time.sleep(0.5)
            with api.lock:
                for (plural, _), obj in api.objects.items():
                    if plural.endswith("webhookconfigurations"):
                        for hook in obj["webhooks"]:
                            hook["clientConfig"]["caBundle"] = _bundle(server.ca)

        thread = threading.Thread(target=inject)
        thread.start()
        result = _probe(api, tmp_path, "--wait=20", "--interval=0.1")
        thread.join()
    assert result.exit_code == 0, result.output


def test_a_probe_that_never_succeeds_exits_1_and_switches_nothing(tmp_path: Path) -> None:
    settings = WebhookSettings(name="pw", url=f"https://localhost:{free_port()}", ca_bundle="UEVN")
    objects = configurations(settings, [{"name": "b", "validate": {"pods": ["CREATE"]}}], ["b"])
    with running(*objects) as api:
        result = _probe(
            api, tmp_path, "--wait=0.3", "--interval=0.1", "--failure-policy=validate.pw.svc=Fail"
        )
        patches = [r for r in api.requests if r.method == "PATCH"]
    assert result.exit_code == 1
    assert "failed https://localhost" in result.stderr
    assert patches == []


def test_missing_configurations_are_a_failure(tmp_path: Path) -> None:
    with running() as api:
        result = _probe(api, tmp_path)
    assert result.exit_code == 1
    assert "webhook configurations pw: not found" in result.stderr


def test_an_unknown_webhook_to_switch_exits_1(server: Server, tmp_path: Path) -> None:
    with running(*_registered(server)) as api:
        result = _probe(api, tmp_path, "--failure-policy=nodes.validate.pw.svc=Fail")
    assert result.exit_code == 1
    assert "no webhook nodes.validate.pw.svc" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--failure-policy=validate.pw.svc=fail"], "expected WEBHOOK=Ignore"),
        (["--url=https://localhost:1/validate"], "--url needs --ca-file"),
        (
            ["--url=https://x/v", "--ca-file=/nonexistent"],
            "--ca-file file /nonexistent: cannot read: No such file or directory",
        ),
    ],
    ids=[
        "a failure policy in the wrong case",
        "a URL without a CA",
        "a CA file that cannot be read",
    ],
)
def test_unusable_input_exits_2(args: list[str], message: str) -> None:
    result = invoke_cli(["probe", *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_the_probes_review_is_one_the_server_parses_back_unchanged() -> None:
    from webhooks.core.review import parse_review, request_dict
    from webhooks.install.probe import probe_request

    request = probe_request("placement")
    parsed = parse_review(request_dict(request))
    assert parsed == request._replace(user=dict(request.user))
    assert parsed.dry_run is True and parsed.operation == "CREATE"


def _owning(manager: str, operation: str, hooks: list[str]) -> dict[str, Any]:
    fields = {f'k:{{"name":"{hook}"}}': {".": {}, "f:failurePolicy": {}} for hook in hooks}
    return {
        "manager": manager,
        "operation": operation,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:webhooks": fields},
    }


@pytest.mark.parametrize(
    ("managed", "owned"),
    [
        pytest.param(
            [_owning(POLICY_FIELD_MANAGER, "Apply", ["v"])],
            {"v": "Ignore"},
            id="a policy the install manager applied is its own",
        ),
        pytest.param(
            [_owning("helm", "Apply", ["v", "m"])], {}, id="Helm's policies are not its own"
        ),
        pytest.param(
            [_owning(POLICY_FIELD_MANAGER, "Update", ["v"])],
            {},
            id="an update under the same name is another owner",
        ),
        pytest.param(
            [_owning(POLICY_FIELD_MANAGER, "Apply", ["gone"])],
            {},
            id="a webhook no longer in the configuration is ignored",
        ),
        pytest.param([], {}, id="no managed fields at all"),
    ],
)
def test_the_policies_the_install_manager_owns_are_read_from_managed_fields(
    managed: list[dict[str, Any]], owned: dict[str, str]
) -> None:
    from webhooks.install.webhookconfig import _owned_policies

    configuration = {
        "metadata": {"name": "pw", "managedFields": managed},
        "webhooks": [
            {"name": "v", "failurePolicy": "Ignore"},
            {"name": "m", "failurePolicy": "Fail"},
        ],
    }
    assert _owned_policies(configuration, POLICY_FIELD_MANAGER) == owned
