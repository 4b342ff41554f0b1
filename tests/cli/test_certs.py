"""``placement-webhooks certs generate|inspect``, checked with openssl as an operator would."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tests.certfiles import write_expired_pair
from tests.command import invoke_cli, run_cli
from webhooks.certs import pki

SANS = ["pw", "pw.placement", "pw.placement.svc", "pw.placement.svc.cluster.local"]
OPENSSL = shutil.which("openssl")
GENERATE = ["certs", "generate", "--service", "pw", "--namespace", "placement"]


def _openssl(*args: str) -> subprocess.CompletedProcess[str]:
    assert OPENSSL, "openssl is installed by `make test` (Makefile: system-deps)"
    return subprocess.run([OPENSSL, *args], capture_output=True, text=True, timeout=30, check=False)


def test_generate_as_a_new_user_gives_a_chain_openssl_accepts(tmp_path: Path) -> None:
    run = run_cli(*GENERATE, cwd=tmp_path, clean=True, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    out = tmp_path / "certs" / "pw.placement"
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    assert f"wrote {Path('certs/pw.placement/ca.crt')}" in run.stdout
    assert f"SANs: {', '.join(SANS)}" in run.stdout

    verify = _openssl("verify", "-CAfile", str(out / "ca.crt"), str(out / "tls.crt"))
    assert verify.returncode == 0, verify.stderr
    assert verify.stdout.strip() == f"{out / 'tls.crt'}: OK"
    text = _openssl("x509", "-in", str(out / "tls.crt"), "-noout", "-ext", "subjectAltName")
    assert ", ".join(f"DNS:{name}" for name in SANS) in text.stdout
    purpose = _openssl("x509", "-in", str(out / "tls.crt"), "-noout", "-purpose")
    assert "SSL server : Yes" in purpose.stdout


@pytest.mark.parametrize(
    ("args", "key_class", "days", "ca_days"),
    [
        ([], ec.EllipticCurvePrivateKey, 365, 3650),
        (["--key-type", "rsa", "--days", "30", "--ca-days", "90"], rsa.RSAPrivateKey, 30, 90),
    ],
    ids=["ECDSA keys, a year for the certificate and ten for the CA", "RSA and chosen validity"],
)
def test_generate_options(
    tmp_path: Path, args: list[str], key_class: type, days: int, ca_days: int
) -> None:
    result = invoke_cli([*GENERATE, "--out", str(tmp_path), *args])
    assert result.exit_code == 0, result.output
    key = serialization.load_pem_private_key((tmp_path / "tls.key").read_bytes(), password=None)
    assert isinstance(key, key_class)
    [leaf] = pki.inspect(tmp_path / "tls.crt")
    [ca] = pki.inspect(tmp_path / "ca.crt")
    assert round((leaf.not_after - leaf.not_before).total_seconds() / 86400) == days
    assert round((ca.not_after - ca.not_before).total_seconds() / 86400) == ca_days
    assert leaf.sans == tuple(SANS)


def test_extra_hosts_are_added_after_the_service_names(tmp_path: Path) -> None:
    result = invoke_cli([
            "certs", "generate", "--service", "pw", "--namespace", "placement",
            "--out", str(tmp_path), "--host", "hooks.example", "--host", "10.0.0.7",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert pki.inspect(tmp_path / "tls.crt")[0].sans == (*SANS, "hooks.example", "10.0.0.7")


@pytest.mark.parametrize(
    "args",
    [
        ["--namespace", "placement"],
        ["--service", "pw"],
        ["--service", "pw", "--namespace", "placement", "--days", "0"],
    ],
    ids=["the service is required", "the namespace is required", "zero days is refused"],
)
def test_generate_refuses_incomplete_arguments(tmp_path: Path, args: list[str]) -> None:
    result = invoke_cli(["certs", "generate", "--out", str(tmp_path), *args])
    assert result.exit_code == 2
    assert not (tmp_path / "tls.key").exists()


# --------------------------------------------------------------------------- inspect


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    pki.generate(tmp_path / "secret", hosts=SANS)
    return tmp_path / "secret"


def test_inspect_a_secret_directory(chain: Path) -> None:
    result = invoke_cli(["certs", "inspect", str(chain)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"{chain / 'ca.crt'}:" in out and f"{chain / 'tls.crt'}:" in out
    assert "Subject:    CN=placement-webhooks CA" in out
    assert "Subject:    CN=placement-webhooks\n" in out
    assert f"SANs:       {', '.join(SANS)}" in out
    assert "Not after:" in out and "Days left:  364" in out
    assert f"{chain / 'tls.key'}: matches {chain / 'tls.crt'}" in out
    assert f"{chain / 'tls.crt'}: issued by {chain / 'ca.crt'}" in out
    assert "problem" not in out


def test_inspect_a_single_file(chain: Path) -> None:
    result = invoke_cli(["certs", "inspect", str(chain / "tls.crt")])
    assert result.exit_code == 0
    assert "Certificate 1 of 1" in result.stdout
    assert "matches" not in result.stdout


@pytest.mark.parametrize(
    ("breakage", "problem"),
    [
        ("foreign key", "does not belong to"),
        ("foreign CA", "was not issued by any certificate in"),
        ("expired", "expired at"),
    ],
    ids=[
        "a key that does not fit the certificate exits 1",
        "a certificate from another CA exits 1",
        "an expired certificate exits 1",
    ],
)
def test_inspect_reports_problems_and_exits_1(
    tmp_path: Path, chain: Path, breakage: str, problem: str
) -> None:
    other = pki.generate(tmp_path / "other", hosts=["x"])
    target = chain
    if breakage == "foreign key":
        shutil.copy(other.key, chain / "tls.key")
    elif breakage == "foreign CA":
        shutil.copy(other.ca, chain / "ca.crt")
    else:
        target = tmp_path / "expired"
        write_expired_pair(target)
    result = invoke_cli(["certs", "inspect", str(target)])
    assert result.exit_code == 1, result.output
    assert "problem: " in result.stdout and problem in result.stdout


@pytest.mark.parametrize(
    "make",
    ["missing", "empty dir", "garbage"],
    ids=[
        "a missing path exits 2",
        "a directory without certificates exits 2",
        "an unparsable file exits 2",
    ],
)
def test_inspect_unusable_input_exits_2(tmp_path: Path, make: str) -> None:
    target = tmp_path / "x"
    if make == "empty dir":
        target.mkdir()
    elif make == "garbage":
        target.write_text("not a certificate")
    result = invoke_cli(["certs", "inspect", str(target)])
    assert result.exit_code == 2
    assert str(target) in result.stderr
