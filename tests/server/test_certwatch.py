"""Readiness and expiry gauges from the certificate files, including a Secret-style swap."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.certfiles import SecretVolume, write_expired_pair
from webhooks import certs
from webhooks.server.app import create_app
from webhooks.server.assemble import build_state
from webhooks.server.certwatch import CertificateWatch
from webhooks.server.runner import ServeOptions

DAY = 86400.0


def _watch(directory: Path) -> CertificateWatch:
    return CertificateWatch(directory / "tls.crt", directory / "tls.key", directory / "ca.crt")


def test_a_fresh_pair_is_ready_and_both_expiries_are_known(tmp_path: Path) -> None:
    certs.generate(tmp_path, hosts=["localhost"], days=30, ca_days=90)
    watch = _watch(tmp_path)
    assert watch.problem() is None
    leaf, ca = watch.leaf_seconds(), watch.ca_seconds()
    assert leaf is not None and 29 * DAY < leaf <= 30 * DAY
    assert ca is not None and 89 * DAY < ca <= 90 * DAY


@pytest.mark.parametrize(
    ("breakage", "reason"),
    [
        ("foreign key", "does not match"),
        ("expired", "expired at"),
        ("missing certificate", "not found"),
        ("garbage key", "no valid PEM private key"),
    ],
    ids=[
        "a key of another certificate makes the pod unready",
        "an expired certificate makes the pod unready",
        "a missing certificate makes the pod unready",
        "an unparsable key makes the pod unready",
    ],
)
def test_an_unusable_pair_is_not_ready(tmp_path: Path, breakage: str, reason: str) -> None:
    served = tmp_path / "served"
    if breakage == "expired":
        write_expired_pair(served)
    else:
        certs.generate(served, hosts=["localhost"])
        other = certs.generate(tmp_path / "other", hosts=["localhost"])
        if breakage == "foreign key":
            shutil.copy(other.key, served / "tls.key")
        elif breakage == "missing certificate":
            (served / "tls.crt").unlink()
        else:
            (served / "tls.key").write_text("garbage")
    problem = _watch(served).problem()
    assert problem is not None and reason in problem


def test_a_secret_style_symlink_swap_is_noticed(tmp_path: Path) -> None:
    first = certs.generate(tmp_path / "first", hosts=["localhost"], days=300)
    second = certs.generate(tmp_path / "second", hosts=["localhost"], days=20)
    volume = SecretVolume(tmp_path / "secret")
    volume.publish(first.ca.parent)
    watch = _watch(volume.root)
    before = watch.leaf_seconds()
    assert before is not None and before > 299 * DAY

    volume.publish(second.ca.parent)

    after = watch.leaf_seconds()
    assert after is not None and after < 20 * DAY
    assert watch.problem() is None


def test_readyz_and_metrics_of_a_worker_report_the_certificate(tmp_path: Path) -> None:
    served = tmp_path / "served"
    write_expired_pair(served)
    state = build_state(ServeOptions(cert_dir=served, runtime_dir=tmp_path))
    try:
        client = create_app(state).test_client()
        ready = client.get("/readyz")
        metrics = client.get("/metrics").get_data(as_text=True)
    finally:
        state.close()
    assert ready.status_code == 503
    assert "expired at" in ready.get_data(as_text=True)
    [line] = [
        ln
        for ln in metrics.splitlines()
        if ln.startswith("placement_webhooks_certificate_expiry_seconds ")
    ]
    assert -2 * 3600 < float(line.split()[1]) < 0
    assert "placement_webhooks_ca_expiry_seconds " not in metrics  # no ca.crt in this directory
