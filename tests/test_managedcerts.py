"""Certificates the server manages itself: the lifecycle as pure decisions on a fixed clock,
then the shared Secret, the files and the caBundle against the fake API server."""

from __future__ import annotations

import base64
import datetime as dt
import threading
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from tests.command import invoke_cli
from tests.fakeapi import FakeApiServer, running
from webhooks.certs import pki
from webhooks.certs.managed import (
    ManageError,
    Manager,
    SecretStore,
    from_secret,
    split_bundle,
    to_secret,
)
from webhooks.certs.rotation import Material, Policy, bundle_pem, plan
from webhooks.install.webhookconfig import FIELD_MANAGER, WebhookSettings, configurations

T0 = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
HOSTS = tuple(pki.service_hosts("pw", "placement"))
POLICY = Policy(hosts=HOSTS)
DAY = dt.timedelta(days=1)


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def _verifies(leaf: bytes, bundle: tuple[bytes, ...]) -> bool:
    """Whether ``leaf`` is directly signed by a certificate of ``bundle`` (what TLS checks)."""
    for ca in bundle:
        try:
            _cert(leaf).verify_directly_issued_by(_cert(ca))
        except Exception:
            continue
        return True
    return False


def _fresh() -> Material:
    material, changes = plan(Material(), POLICY, T0, published=False)
    assert changes == ["created a CA", "issued a serving certificate (there was none)"]
    return material


# --------------------------------------------------------------------------- the lifecycle


def test_from_nothing_a_ca_and_a_leaf_for_the_services_names() -> None:
    material = _fresh()
    assert material.leaf is not None and material.signing_key is not None
    [ca] = material.bundle
    assert _verifies(material.leaf.cert, material.bundle)
    leaf = _cert(material.leaf.cert)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == list(HOSTS)
    assert leaf.not_valid_after_utc == T0 + 90 * DAY
    assert _cert(ca).not_valid_after_utc == T0 + 1825 * DAY


def test_nothing_changes_while_nothing_is_due() -> None:
    material = _fresh()
    again, changes = plan(material, POLICY, T0 + 59 * DAY, published=True)
    assert changes == []
    assert again == material


def test_the_leaf_is_renewed_before_it_expires_under_the_same_ca() -> None:
    material = _fresh()
    renewed, changes = plan(material, POLICY, T0 + 61 * DAY, published=True)
    assert changes == ["issued a serving certificate (it expires within 30 days)"]
    assert renewed.bundle == material.bundle
    assert renewed.leaf != material.leaf
    assert _verifies(renewed.leaf.cert, renewed.bundle)  # type: ignore[union-attr]


def test_new_service_names_get_a_new_leaf() -> None:
    material = _fresh()
    moved = Policy(hosts=tuple(pki.service_hosts("pw", "elsewhere")))
    _, changes = plan(material, moved, T0, published=True)
    assert changes == ["issued a serving certificate (the Service's names changed)"]


def _rotating() -> tuple[Material, Material]:
    """A material, and the same once its CA is due for renewal (a successor staged)."""
    material = _fresh()
    due = T0 + (1825 - 365) * DAY
    staged, changes = plan(material, POLICY, due, published=True)
    assert "staged a new CA beside the signing one" in changes
    return material, staged


def test_a_ca_due_for_renewal_gets_a_successor_trusted_beside_it_but_not_signing() -> None:
    material, staged = _rotating()
    assert len(staged.bundle) == 2
    assert staged.bundle[0] == material.bundle[0]  # the old CA still signs
    assert staged.next_key is not None
    assert _verifies(staged.leaf.cert, (staged.bundle[0],))  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("after", "published", "promoted"),
    [
        (dt.timedelta(minutes=30), True, False),
        (dt.timedelta(hours=2), False, False),
        (dt.timedelta(hours=2), True, True),
    ],
    ids=[
        "not before the overlap has passed",
        "not while the configurations may lack the new CA",
        "once the overlap has passed and the bundle is published",
    ],
)
def test_the_staged_ca_signs_only_once_every_api_server_trusts_it(
    after: dt.timedelta, published: bool, promoted: bool
) -> None:
    old, staged = _rotating()
    assert staged.next_since is not None
    result, changes = plan(staged, POLICY, staged.next_since + after, published=published)
    assert (result.next_key is None) is promoted
    if promoted:
        assert changes[0] == "promoted the staged CA to signing; the old CA stays trusted"
        assert result.bundle[0] == staged.bundle[1]
        assert old.bundle[0] in result.bundle  # pods still serving the old leaf keep working
        assert _verifies(result.leaf.cert, (result.bundle[0],))  # type: ignore[union-attr]
        assert _verifies(old.leaf.cert, result.bundle)  # type: ignore[union-attr]
    else:
        assert result == staged


def test_the_old_ca_leaves_the_bundle_once_no_leaf_it_signed_can_be_served() -> None:
    _, staged = _rotating()
    assert staged.next_since is not None
    switched = staged.next_since + 2 * dt.timedelta(hours=1)
    promoted, _ = plan(staged, POLICY, switched, published=True)
    kept, changes = plan(promoted, POLICY, staged.next_since + 89 * DAY, published=True)
    assert len(kept.bundle) == 2
    assert "retired a CA no leaf in use was signed by" not in changes
    later, changes = plan(promoted, POLICY, staged.next_since + 91 * DAY, published=True)
    assert "retired a CA no leaf in use was signed by" in changes
    assert later.bundle == promoted.bundle[:1]
    # Months before the old CA itself expires: no expiry alert about a CA nothing uses.
    old_expiry = _cert(promoted.bundle[1]).not_valid_after_utc
    assert old_expiry - (staged.next_since + 91 * DAY) > 200 * DAY


def test_an_expired_ca_leaves_the_bundle() -> None:
    _, staged = _rotating()
    later, changes = plan(staged, POLICY, T0 + 1826 * DAY, published=True)
    assert changes[0] == "dropped expired or repeated certificates from the bundle"
    assert later.bundle == staged.bundle[1:]


def test_a_staged_ca_is_promoted_at_once_when_the_signing_one_is_gone() -> None:
    _, staged = _rotating()
    past, changes = plan(staged, POLICY, T0 + 1826 * DAY, published=False)
    assert "promoted the staged CA early: the signing CA was gone" in changes
    assert past.bundle == staged.bundle[1:]


def test_a_secret_with_garbage_is_repaired_not_crashed_on() -> None:
    data = {"ca.crt": "bm90IGEgY2VydA==", "ca.key": "!!!", "tls.crt": "", "tls.key": "eA=="}
    material = from_secret(data)
    repaired, changes = plan(material, POLICY, T0, published=False)
    assert changes[0] == "created a CA"
    assert repaired.leaf is not None


def test_the_secret_round_trips_the_material() -> None:
    _, staged = _rotating()
    assert from_secret(to_secret(staged)) == staged
    split = split_bundle(b"junk" + bundle_pem(staged) + b"more")
    assert split.blocks == staged.bundle and split.other and not split.more


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hosts": ()}, "host"),
        ({"leaf_days": 30, "leaf_renew_days": 30}, "leaf renewal"),
        ({"ca_days": 365, "ca_renew_days": 400}, "CA renewal"),
        ({"leaf_days": 400, "leaf_renew_days": 30}, "shorter-lived"),
    ],
    ids=[
        "a leaf needs names",
        "a leaf renewed the day it is issued is refused",
        "a CA renewed before it is made is refused",
        "a leaf outliving the CA's renewal window is refused",
    ],
)
def test_lifetimes_that_cannot_work_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Policy(**{"hosts": HOSTS, **kwargs})


# --------------------------------------------------------------------------- against the API


def _configurations() -> list[dict[str, Any]]:
    settings = WebhookSettings(name="pw", namespace="placement", service="pw")
    table = [
        {"name": "a", "mutate": {"pods": ["CREATE"]}},
        {"name": "b", "validate": {"pods": ["CREATE"]}},
    ]
    return configurations(settings, table, ["a", "b"])


def _empty_secret() -> dict[str, Any]:
    """The Secret the chart renders: no data (the pods fill it)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": "pw-certs",
            "namespace": "placement",
            "labels": {"app": "pw"},
            "annotations": {"meta.helm.sh/release-name": "pw"},
        },
    }


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


def _manager(api: FakeApiServer, tmp_path: Path, name: str, clock: Clock | None = None) -> Manager:
    from webhooks.install.webhookconfig import api_client

    client = api_client(str(api.kubeconfig(tmp_path / f"kubeconfig-{name}")))
    return Manager(
        api=client,
        store=SecretStore(client, "placement", "pw-certs"),
        policy=POLICY,
        cert_dir=tmp_path / name,
        webhook_configuration="pw",
        clock=clock or Clock(),
    )


def _secret(api: FakeApiServer) -> Material:
    [secret] = api.stored("secrets", "placement")
    return from_secret(secret.get("data"))


def _bundles(api: FakeApiServer) -> set[str]:
    with api.lock:
        return {
            h["clientConfig"].get("caBundle")
            for (plural, _), obj in api.objects.items()
            if plural.endswith("webhookconfigurations")
            for h in obj["webhooks"]
        }


def test_a_first_step_fills_the_secret_the_files_and_the_ca_bundle(tmp_path: Path) -> None:
    with running(_empty_secret(), *_configurations()) as api:
        manager = _manager(api, tmp_path, "pod-a")
        step = manager.step()
        stored = _secret(api)
        bundles = _bundles(api)
        writes = [(r.method, r.kind) for r in api.requests if r.method in ("PUT", "POST")]
        patches = [r for r in api.requests if r.method == "PATCH"]
        metadata = api.stored("secrets", "placement")[0]["metadata"]
    assert step.changes[:2] == ["created a CA", "issued a serving certificate (there was none)"]
    assert writes == [("PUT", "replace")]  # the chart's Secret is replaced, never re-created
    # Labels and annotations (Helm's ownership among them) are written back as read.
    assert metadata["labels"] == {"app": "pw"}
    assert metadata["annotations"] == {"meta.helm.sh/release-name": "pw"}
    assert bundles == {base64.b64encode(bundle_pem(stored)).decode()}
    assert {p.query["fieldManager"][0] for p in patches} == {FIELD_MANAGER}
    directory = tmp_path / "pod-a"
    assert (directory / "tls.crt").read_bytes() == stored.leaf.cert  # type: ignore[union-attr]
    assert (directory / "ca.crt").read_bytes() == bundle_pem(stored)
    assert (directory / "tls.key").stat().st_mode & 0o077 == 0
    assert not (directory / "ca.key").exists()  # the CA key stays in the Secret
    pair = pki.load_pair(directory / "tls.crt", directory / "tls.key")
    assert pair.matches_key


def test_a_missing_secret_is_created(tmp_path: Path) -> None:
    with running(*_configurations()) as api:
        _manager(api, tmp_path, "pod-a").step()
        writes = [r.kind for r in api.requests if r.method in ("PUT", "POST")]
        assert _secret(api).leaf is not None
    assert writes == ["create"]


def test_two_replicas_starting_at_once_agree_on_one_ca(tmp_path: Path) -> None:
    with running(_empty_secret(), *_configurations()) as api:
        first = _manager(api, tmp_path, "pod-a")
        second = _manager(api, tmp_path, "pod-b")
        raced = threading.Event()

        def race(plural: str) -> None:
            # Between pod-a's read and its write, pod-b does a whole step of its own.
            if plural == "secrets" and not raced.is_set():
                raced.set()
                second.step()

        api.before_write = race
        first.step()
        api.before_write = None
        replaces = [r for r in api.requests if r.kind == "replace"]
        stored = _secret(api)
    assert raced.is_set()
    assert len(replaces) == 2  # pod-b's write won; pod-a's was refused with 409, then adopted
    for pod in ("pod-a", "pod-b"):
        assert (tmp_path / pod / "ca.crt").read_bytes() == bundle_pem(stored)
        assert (tmp_path / pod / "tls.crt").read_bytes() == stored.leaf.cert  # type: ignore[union-attr]


def test_a_second_step_writes_nothing(tmp_path: Path) -> None:
    with running(_empty_secret(), *_configurations()) as api:
        manager = _manager(api, tmp_path, "pod-a")
        manager.step()
        count = len(api.requests)
        step = manager.step()
        later = [r.method for r in api.requests[count:]]
    assert step.changes == [] and not step.files_written and step.injected == []
    assert set(later) == {"GET"}


def test_a_reset_ca_bundle_is_written_again(tmp_path: Path) -> None:
    with running(_empty_secret(), *_configurations()) as api:
        manager = _manager(api, tmp_path, "pod-a")
        manager.step()
        with api.lock:  # what a `kubectl apply` of configurations without caBundle does
            for (plural, _), obj in api.objects.items():
                if plural == "validatingwebhookconfigurations":
                    obj["webhooks"][0]["clientConfig"].pop("caBundle")
        step = manager.step()
        assert len(_bundles(api)) == 1
    assert step.injected == ["ValidatingWebhookConfiguration pw"]


def test_a_ca_rotation_end_to_end(tmp_path: Path) -> None:
    clock = Clock()
    with running(_empty_secret(), *_configurations()) as api:
        manager = _manager(api, tmp_path, "pod-a", clock)
        manager.step()
        old = _secret(api)
        clock.now = T0 + (1825 - 365) * DAY
        manager.step()
        staged = _secret(api)
        assert len(staged.bundle) == 2
        assert _bundles(api) == {base64.b64encode(bundle_pem(staged)).decode()}
        served = (tmp_path / "pod-a" / "tls.crt").read_bytes()
        assert _verifies(served, old.bundle)  # renewed, but still by the old CA
        clock.now += dt.timedelta(minutes=10)
        manager.step()
        assert _secret(api).next_key is not None  # still within the overlap
        clock.now += dt.timedelta(hours=1)
        manager.step()
        promoted = _secret(api)
    assert promoted.next_key is None
    assert promoted.bundle[0] == staged.bundle[1]
    assert _verifies(promoted.leaf.cert, (promoted.bundle[0],))  # type: ignore[union-attr]
    assert (tmp_path / "pod-a" / "tls.crt").read_bytes() == promoted.leaf.cert  # type: ignore[union-attr]
    assert old.bundle[0] in promoted.bundle


def test_without_configurations_nothing_is_published_and_nothing_fails(tmp_path: Path) -> None:
    with running(_empty_secret()) as api:
        step = _manager(api, tmp_path, "pod-a").step()
    assert step.injected == [] and step.files_written


def test_an_unreachable_api_server_is_a_manage_error(tmp_path: Path) -> None:
    with running() as api:
        manager = _manager(api, tmp_path, "pod-a")
    with pytest.raises(ManageError, match="read Secret placement/pw-certs: API server unreachable"):
        manager.step()


def test_certs_manage_once(tmp_path: Path) -> None:
    with running(_empty_secret(), *_configurations()) as api:
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        args = [
            "certs", "manage", "--once", "--secret=pw-certs", "--namespace=placement",
            "--service=pw", "--webhook-config=pw", f"--cert-dir={tmp_path / 'tls'}",
            f"--kubeconfig={kubeconfig}",
        ]  # fmt: skip
        result = invoke_cli(args)
        again = invoke_cli(args)
    assert result.exit_code == 0, result.output
    assert "Secret: created a CA" in result.stdout
    assert "files: wrote ca.crt, tls.crt and tls.key" in result.stdout
    assert "ValidatingWebhookConfiguration pw: caBundle updated" in result.stdout
    assert again.exit_code == 0 and again.stdout == ""
    inspected = invoke_cli(["certs", "inspect", str(tmp_path / "tls")])
    assert inspected.exit_code == 0, inspected.output


def test_certs_manage_once_exits_1_when_the_api_refuses(tmp_path: Path) -> None:
    with running() as api:
        api.fault = lambda request: 403
        result = invoke_cli([
                "certs", "manage", "--once", "--secret=pw-certs", "--namespace=placement",
                "--service=pw", f"--cert-dir={tmp_path / 'tls'}",
                f"--kubeconfig={api.kubeconfig(tmp_path / 'kubeconfig')}",
            ],
        )  # fmt: skip
    assert result.exit_code == 1
    assert "read Secret placement/pw-certs: refused (403) (HTTP 403)" in result.stderr
