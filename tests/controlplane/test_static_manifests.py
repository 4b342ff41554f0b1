"""``export --static-manifests`` on the real API server (KEP-5793, beta and on in 1.37).

One API server is started with nothing but the exported directory: its six in-tree twins
off, ``--admission-control-config-file`` pointing at the AdmissionConfiguration the command
wrote, and no policy ever created through the API. Beside it, the webhooks' API server with
the same config. What is proven:

* the policies are in force on the first request the test sends once the server is ready:
  a pod is mutated and a pod is refused exactly as the webhooks do it;
* the API cannot delete, replace or shadow them: the names are reserved (422), and the
  static objects are not API objects (404);
* they are in neither the API nor etcd; the API server's reload metric is how they show.

Then ``webhook-config --url --static-manifests``: an API server whose webhook configurations
are static calls the webhook from its first request (failing closed while ``serve`` is not
yet up), and the API can neither delete nor shadow them.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.harness import ApiServerOptions, ControllerManagerOptions, ControlPlaneOptions
from controlplane.harness.admission import TWINS, AdmissionSetup
from controlplane.harness.modes import apiserver_options
from controlplane.harness.pki import HOSTS
from controlplane.harness.process import Component, free_port, wait_until
from controlplane.harness.rest import Answer, Rest, collection
from controlplane.harness.webhookserver import WebhookServer, ready, serve_args
from controlplane.release import RELEASE
from tests.controlplane.conftest import FIGURES, started_plane
from tests.controlplane.native import cases
from tests.controlplane.native.observe import reason_of, stored_fields
from tests.controlplane.native.pair import CONTROLLERS
from webhooks.certs.pki import generate
from webhooks.export.static import PLUGINS
from webhooks.k8s.releases import STATIC_ADMISSION

pytestmark = pytest.mark.skipif(
    not RELEASE.gate_on(STATIC_ADMISSION),
    reason=f"Kubernetes {RELEASE.name} does not load static admission manifests by default",
)

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).parent / "configs" / "static-manifests.yaml"
API = "/apis/admissionregistration.k8s.io/v1"
#: The refusing policy, as the export names it on disk and in the API server.
REFUSING = "placement-webhooks-dedicated-nodes-foreign-tolerations.static.k8s.io"
FOREIGN = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
POLICY_RESOURCES = (
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
)
RESERVED = (
    'names ending with ".static.k8s.io" are reserved for static manifest-based '
    "configurations and cannot be managed via the API"
)


@dataclass(slots=True)
class Servers:
    """The static API server and the webhooks' one, and what the first requests got."""

    static: Rest
    webhooks: Rest
    directory: Path
    etcd: str
    #: The static server's answers to the test's first two requests (refused, mutated).
    first: tuple[Answer, Answer]


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": cases.IMAGE}], **spec},
    }


REFUSED = _pod("foreign", tolerations=[FOREIGN])
MUTATED = _pod("plain")


def _export(directory: Path) -> subprocess.CompletedProcess[str]:
    """The command a user runs, as a process."""
    command = [
        sys.executable,
        "-m",
        "webhooks",
        "export",
        f"--config={CONFIG}",
        f"--static-manifests={directory}",
    ]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    directory = tmp_path_factory.mktemp("static")
    done = _export(directory)
    assert done.returncode in (0, 1), done.stderr
    flags = [line for line in done.stderr.splitlines() if line.startswith("kube-apiserver flags:")]
    assert flags == [
        f"kube-apiserver flags: --admission-control-config-file={directory}"
        "/admission-configuration.yaml"
    ]
    static = ApiServerOptions(
        name="static",
        admission=AdmissionSetup(disable=tuple(TWINS.values())),
        extra_args=(flags[0].removeprefix("kube-apiserver flags: "),),
    )
    options = ControlPlaneOptions(
        apiservers=(static, apiserver_options("webhooks", CONFIG)),
        scheduler=False,
        controller_manager=ControllerManagerOptions(controllers=CONTROLLERS),
        components_for="static",
    )
    with started_plane(options, "static manifests + webhooks") as plane:
        rest = Rest(plane.apiservers["static"])
        # The first requests this test sends to the static API server: nothing was
        # installed through its API, and nothing waited for a policy to load.
        first = (
            rest.create(collection(REFUSED), REFUSED),
            rest.create(collection(MUTATED), MUTATED),
        )
        webhooks = Rest(plane.apiservers["webhooks"])
        # The controller-manager serves the static API server; the other needs its
        # ServiceAccount by hand for pods to be admitted at all.
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        webhooks.create("/api/v1/namespaces/default/serviceaccounts", account)
        assert plane.etcd is not None
        yield Servers(rest, webhooks, directory, plane.etcd.url, first)


def test_the_export_writes_one_directory_per_admission_plugin(servers: Servers) -> None:
    found = sorted(str(p.relative_to(servers.directory)) for p in servers.directory.rglob("*"))
    assert found == [
        "admission-configuration.yaml",
        "mutating-policies",
        "mutating-policies/placement-webhooks-daemonsets.static.k8s.io.yaml",
        "mutating-policies/placement-webhooks.static.k8s.io.yaml",
        "mutating-webhooks",
        "validating-policies",
        f"validating-policies/{REFUSING}.yaml",
        "validating-policies/placement-webhooks-dedicated-nodes-pinning.static.k8s.io.yaml",
        "validating-policies/placement-webhooks-taint-toleration-rules.static.k8s.io.yaml",
        "validating-webhooks",
    ]


def test_the_first_request_is_refused_as_the_webhook_refuses_it(servers: Servers) -> None:
    static = servers.first[0]
    webhook = servers.webhooks.create(collection(REFUSED), REFUSED)
    assert (static.status, webhook.status) == (403, 403)
    assert f"ValidatingAdmissionPolicy '{REFUSING}'" in static.message
    assert reason_of(static.message) == reason_of(webhook.message)


def test_the_first_admitted_pod_is_mutated_as_the_webhook_mutates_it(servers: Servers) -> None:
    static = servers.first[1]
    webhook = servers.webhooks.create(collection(MUTATED), MUTATED)
    assert (static.status, webhook.status) == (201, 201)
    tolerations = stored_fields(static.body)["tolerations"]
    assert {t["key"] for t in tolerations} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    assert tolerations == stored_fields(webhook.body)["tolerations"]
    refused = servers.first[0].status
    FIGURES.append(f"static manifests: first request refused ({refused}), next one mutated")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        pytest.param(
            "DELETE",
            f"validatingadmissionpolicies/{REFUSING}",
            None,
            404,
            f'validatingadmissionpolicies.admissionregistration.k8s.io "{REFUSING}" not found',
            id="deleting the static policy finds nothing to delete",
        ),
        pytest.param(
            "DELETE",
            f"validatingadmissionpolicybindings/{REFUSING}",
            None,
            404,
            "not found",
            id="deleting its binding finds nothing to delete",
        ),
        pytest.param(
            "PUT",
            f"validatingadmissionpolicies/{REFUSING}",
            "policy",
            404,
            "not found",
            id="replacing it finds nothing to replace",
        ),
        pytest.param(
            "POST",
            "validatingadmissionpolicies",
            "policy",
            422,
            RESERVED,
            id="a policy of the same name is refused: the suffix is reserved",
        ),
        pytest.param(
            "POST",
            "validatingadmissionpolicybindings",
            "binding",
            422,
            RESERVED,
            id="a binding of the same name is refused: the suffix is reserved",
        ),
        pytest.param(
            "DELETE",
            "mutatingadmissionpolicies/placement-webhooks.static.k8s.io",
            None,
            404,
            "not found",
            id="deleting the static mutating policy finds nothing to delete",
        ),
    ],
)
def test_the_api_can_neither_delete_nor_change_a_static_policy(
    servers: Servers, method: str, path: str, body: str | None, status: int, message: str
) -> None:
    objects = {
        "policy": {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": REFUSING},
            "spec": {
                "matchConstraints": {"resourceRules": []},
                "validations": [{"expression": "true"}],
            },
        },
        "binding": {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": REFUSING},
            "spec": {"policyName": REFUSING, "validationActions": ["Deny"]},
        },
    }
    answer = servers.static.call(method, f"{API}/{path}", objects.get(body or ""))
    assert answer.status == status, answer.body
    assert message in answer.message
    again = servers.static.create(
        collection(REFUSED),
        {
            **REFUSED,
            "metadata": {"name": f"again-{method.lower()}-{status}", "namespace": "default"},
        },
    )
    assert again.status == 403 and REFUSING in again.message


@pytest.mark.parametrize("resource", POLICY_RESOURCES)
def test_static_policies_are_not_api_objects(servers: Servers, resource: str) -> None:
    listed = servers.static.call("GET", f"{API}/{resource}")
    assert listed.status == 200
    assert [item["metadata"]["name"] for item in listed.body["items"]] == []


def _etcd_keys(url: str, prefix: str) -> list[str]:
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    body = {
        "key": base64.b64encode(prefix.encode()).decode(),
        "range_end": base64.b64encode(end.encode()).decode(),
        "keys_only": True,
    }
    request = urllib.request.Request(
        url + "/v3/kv/range", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        found = json.load(answer)
    return [base64.b64decode(kv["key"]).decode() for kv in found.get("kvs", [])]


def test_static_policies_are_not_in_etcd(servers: Servers) -> None:
    keys = _etcd_keys(servers.etcd, "/registry-static/")
    assert any(key.startswith("/registry-static/namespaces/") for key in keys)
    resources = {key.removeprefix("/registry-static/").split("/")[0] for key in keys}
    assert resources.isdisjoint(POLICY_RESOURCES)
    assert [key for key in keys if ".static.k8s.io" in key] == []


def test_the_reload_metric_shows_every_plugin_loaded(servers: Servers) -> None:
    """The webhook plugins' directories are empty here, and load all the same."""
    metrics = servers.static.call("GET", "/metrics").body
    assert isinstance(metrics, str)
    lines = [
        line
        for line in metrics.splitlines()
        if line.startswith("apiserver_manifest_admission_config_controller_automatic_reloads_total")
        and 'status="success"' in line
    ]
    loaded = {line.split('plugin="')[1].split('"')[0] for line in lines if line.endswith(" 1")}
    assert loaded == set(PLUGINS), lines
    written = yaml.safe_load_all(
        (servers.directory / "admission-configuration.yaml").read_text(encoding="utf-8")
    )
    assert [p["name"] for p in next(iter(written))["plugins"]] == list(PLUGINS)


# --------------------------------------------------------------------------- webhooks


@dataclass(slots=True)
class StaticWebhooks:
    """An API server whose webhook configurations are static, and what it answered before
    and after ``serve`` was up."""

    rest: Rest
    before: Answer
    refused: Answer
    mutated: Answer


@pytest.fixture(scope="module")
def static_webhooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticWebhooks]:
    """``webhook-config --url --static-manifests``: the URL's port and the CA exist before
    the API server starts (it reads them at start-up), ``serve`` starts after it."""
    root = tmp_path_factory.mktemp("static-webhooks")
    certs = generate(root / "certs", hosts=HOSTS)
    port = free_port()
    directory = root / "manifests"
    command = [
        sys.executable,
        "-m",
        "webhooks",
        "webhook-config",
        f"--config={CONFIG}",
        f"--url=https://127.0.0.1:{port}",
        f"--ca-file={certs.ca}",
        f"--static-manifests={directory}",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    flag = done.stderr.strip().splitlines()[-1].removeprefix("kube-apiserver flags: ")
    static = ApiServerOptions(
        name="static-webhooks",
        admission=AdmissionSetup(disable=tuple(TWINS.values())),
        extra_args=(flag,),
    )
    options = ControlPlaneOptions(
        apiservers=(static,),
        scheduler=False,
        controller_manager=ControllerManagerOptions(controllers=CONTROLLERS),
    )
    with started_plane(options, "static webhook configurations") as plane:
        rest = Rest(plane.api)
        before = rest.create(collection(REFUSED), REFUSED)
        args, _, metrics = serve_args(
            root / "serve",
            plane.api,
            CONFIG,
            bind=f"127.0.0.1:{port}",
            cert_dir=certs.cert.parent,
        )
        serve = Component("placement-webhooks[static]", args, root / "serve.log", cwd=REPO)
        try:
            webhook = WebhookServer(serve, f"https://127.0.0.1:{port}", certs.ca, metrics, CONFIG)
            wait_until(lambda: ready(webhook), timeout=60, components=[serve])
            refused = rest.create(collection(REFUSED), REFUSED)
            mutated = rest.create(collection(MUTATED), MUTATED)
            yield StaticWebhooks(rest, before, refused, mutated)
        finally:
            serve.stop()


def test_a_static_webhook_is_called_from_start_up_and_fails_closed_until_serve_is_up(
    static_webhooks: StaticWebhooks,
) -> None:
    before = static_webhooks.before
    assert before.status == 500, before.body
    assert 'failed calling webhook "validate.placement-webhooks.svc"' in before.message


def test_once_serve_is_up_the_static_webhooks_refuse_and_mutate(
    static_webhooks: StaticWebhooks,
) -> None:
    refused, mutated = static_webhooks.refused, static_webhooks.mutated
    assert refused.status == 403
    assert 'admission webhook "validate.placement-webhooks.svc" denied' in refused.message
    assert "lets this pod onto the nodes dedicated to group gpu" in refused.message
    assert mutated.status == 201
    keys = {t["key"] for t in stored_fields(mutated.body)["tolerations"]}
    assert keys == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        pytest.param(
            "DELETE",
            "validatingwebhookconfigurations/placement-webhooks.static.k8s.io",
            404,
            "not found",
            id="deleting the static validating configuration finds nothing",
        ),
        pytest.param(
            "DELETE",
            "mutatingwebhookconfigurations/placement-webhooks.static.k8s.io",
            404,
            "not found",
            id="deleting the static mutating configuration finds nothing",
        ),
        pytest.param(
            "POST",
            "validatingwebhookconfigurations",
            422,
            RESERVED,
            id="a configuration of the same name is refused: the suffix is reserved",
        ),
    ],
)
def test_the_api_can_neither_delete_nor_shadow_a_static_webhook_configuration(
    static_webhooks: StaticWebhooks, method: str, path: str, status: int, message: str
) -> None:
    body = None
    if method == "POST":
        body = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "placement-webhooks.static.k8s.io"},
            "webhooks": [],
        }
    answer = static_webhooks.rest.call(method, f"{API}/{path}", body)
    assert answer.status == status, answer.body
    assert message in answer.message
    listed = static_webhooks.rest.call("GET", f"{API}/{path.split('/', maxsplit=1)[0]}")
    assert listed.body["items"] == []
