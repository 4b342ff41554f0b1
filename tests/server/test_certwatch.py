"""Readiness and expiry gauges from the certificate files, including a Secret-style swap."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.certfiles import SecretVolume, write_expired_pair
from webhooks.certs import pki
from webhooks.server.app import create_app
from webhooks.server.assemble import build_state
from webhooks.server.certwatch import CertificateWatch
from webhooks.server.runner import ServeOptions

DAY = 86400.0


def _watch(directory: Path) -> CertificateWatch:
    return CertificateWatch(directory / "tls.crt", directory / "tls.key", directory / "ca.crt")


def test_a_fresh_pair_is_ready_and_both_expiries_are_known(tmp_path: Path) -> None:
    pki.generate(tmp_path, hosts=["localhost"], days=30, ca_days=90)
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
        ("missing certificate", "No such file or directory"),
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
        pki.generate(served, hosts=["localhost"])
        other = pki.generate(tmp_path / "other", hosts=["localhost"])
        if breakage == "foreign key":
            shutil.copy(other.key, served / "tls.key")
        elif breakage == "missing certificate":
            (served / "tls.crt").unlink()
        else:
            (served / "tls.key").write_text("garbage")
    problem = _watch(served).problem()
    assert problem is not None and reason in problem


def test_a_secret_style_symlink_swap_is_noticed(tmp_path: Path) -> None:
    first = pki.generate(tmp_path / "first", hosts=["localhost"], days=300)
    second = pki.generate(tmp_path / "second", hosts=["localhost"], days=20)
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


# --------------------------------------------------------------------------- bad files at run time


def _garbage(directory: Path, other: pki.CertPaths) -> None:
    (directory / "tls.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END")


def _foreign_key(directory: Path, other: pki.CertPaths) -> None:
    shutil.copy(other.key, directory / "tls.key")


def _empty(directory: Path, other: pki.CertPaths) -> None:
    (directory / "tls.crt").write_bytes(b"")


def _over_a_mebibyte(directory: Path, other: pki.CertPaths) -> None:
    (directory / "tls.crt").write_bytes(other.cert.read_bytes() + b"#" * pki.MAX_PEM_BYTES)


def _fifo(directory: Path, other: pki.CertPaths) -> None:
    (directory / "tls.crt").unlink()
    os.mkfifo(directory / "tls.crt")


@pytest.mark.parametrize(
    ("breakage", "reason"),
    [
        pytest.param(_garbage, "no valid PEM certificate", id="a garbage tls.crt"),
        pytest.param(_foreign_key, "does not match", id="a tls.key of another certificate"),
        pytest.param(_empty, "no valid PEM certificate", id="an empty tls.crt"),
        pytest.param(
            _over_a_mebibyte, "over the limit of 1,048,576 bytes", id="a tls.crt over 1 MiB"
        ),
        pytest.param(_fifo, "not a regular file", id="a FIFO in tls.crt's place"),
    ],
)
def test_a_bad_pair_at_run_time_is_logged_once_and_the_served_expiry_kept(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    breakage: Callable[[Path, pki.CertPaths], None],
    reason: str,
) -> None:
    served = pki.generate(tmp_path / "served", hosts=["localhost"], days=30)
    other = pki.generate(tmp_path / "other", hosts=["localhost"], days=300)
    watch = _watch(served.ca.parent)
    before = watch.leaf_seconds()
    assert before is not None and watch.problem() is None
    breakage(served.ca.parent, other)
    with caplog.at_level(logging.WARNING, logger="webhooks.server.certwatch"):
        polls = [(watch.problem(), watch.leaf_seconds()) for _ in range(20)]
    for problem, leaf in polls:
        assert problem is not None and reason in problem  # /readyz still says what is wrong
        assert leaf is not None and before - 60 < leaf <= before  # the pair still served
    [record] = caplog.records  # once, not once per probe or scrape
    assert reason in record.getMessage()
    assert "keeps serving the certificate it last loaded (valid until" in record.getMessage()


def test_the_same_bad_content_swapped_in_again_is_not_logged_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = pki.generate(tmp_path / "good", hosts=["localhost"], days=30)
    bad = tmp_path / "bad"
    shutil.copytree(good.ca.parent, bad)
    (bad / "tls.crt").write_bytes(b"garbage one")
    worse = tmp_path / "worse"
    shutil.copytree(good.ca.parent, worse)
    (worse / "tls.crt").write_bytes(b"garbage two")
    volume = SecretVolume(tmp_path / "secret")
    volume.publish(good.ca.parent)
    watch = _watch(volume.root)
    assert watch.problem() is None
    with caplog.at_level(logging.WARNING, logger="webhooks.server.certwatch"):
        for source in (bad, bad, bad, worse, worse):  # each publish makes new files
            volume.publish(source)
            watch.problem()
            watch.leaf_seconds()
    assert len(caplog.records) == 2  # one per distinct bad content


def test_a_garbage_ca_file_keeps_the_ca_gauge_and_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    served = pki.generate(tmp_path, hosts=["localhost"], ca_days=90)
    watch = _watch(tmp_path)
    before = watch.ca_seconds()
    assert before is not None
    served.ca.write_bytes(b"not a certificate")
    with caplog.at_level(logging.WARNING, logger="webhooks.server.certwatch"):
        values = [watch.ca_seconds() for _ in range(5)]
        assert watch.problem() is None  # the CA file does not decide readiness
    assert all(v is not None and before - 60 < v <= before for v in values)
    [record] = caplog.records
    assert "the CA expiry gauge keeps its last value" in record.getMessage()


def test_the_metrics_keep_the_served_certificates_expiry(tmp_path: Path) -> None:
    served = tmp_path / "served"
    pki.generate(served, hosts=["localhost"], days=30)
    state = build_state(ServeOptions(cert_dir=served, runtime_dir=tmp_path))
    try:
        client = create_app(state).test_client()
        client.get("/metrics")
        (served / "tls.crt").write_bytes(b"garbage")
        ready = client.get("/readyz")
        metrics = client.get("/metrics").get_data(as_text=True)
    finally:
        state.close()
    assert ready.status_code == 503
    [line] = [
        ln
        for ln in metrics.splitlines()
        if ln.startswith("placement_webhooks_certificate_expiry_seconds ")
    ]
    assert 29 * DAY < float(line.split()[1]) <= 30 * DAY
