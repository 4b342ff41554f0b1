"""The serving context: built from bounded reads of the pair, never from what OpenSSL opens.

A FIFO or a device in a certificate file's place must neither hang the master at start nor
the worker's loop when the files change; each case runs in a thread with a deadline, so a
reader that blocks shows as a failure instead of a stuck suite.
"""

from __future__ import annotations

import shutil
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import specialfiles
from webhooks.certs import pki
from webhooks.server.runner import prime_context
from webhooks.server.tls import ContextCache, TLSFiles

#: How long a step may take before it counts as hung (a good pair loads in milliseconds).
DEADLINE = 20.0


def _within_deadline(call: Callable[[], Any]) -> Any:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE)
    assert outcome, f"still running after {DEADLINE} s: the file was read as a stream"
    return outcome[0]


def _pair(directory: Path) -> TLSFiles:
    pki.generate(directory, hosts=["localhost"])
    return TLSFiles(str(directory / pki.CERT_FILE), str(directory / pki.KEY_FILE))


def _garbage(path: Path) -> Path:
    path.write_bytes(b"not a certificate\n")
    return path


BAD = [
    pytest.param(specialfiles.fifo, "a FIFO (named pipe), not a regular file", id="a FIFO"),
    pytest.param(
        specialfiles.link_to("/dev/zero"),
        "a character device, not a regular file",
        id="a link to /dev/zero",
    ),
    pytest.param(
        specialfiles.sparse(pki.MAX_PEM_BYTES + 1),
        "over the limit of 1,048,576 bytes",
        id="a file over MAX_PEM_BYTES",
    ),
    pytest.param(_garbage, "", id="text that is no certificate"),
]


@pytest.mark.parametrize(("spoil", "reason"), BAD)
def test_an_unusable_certificate_stops_start_up_with_a_reason_instead_of_hanging(
    tmp_path: Path, spoil: Callable[[Path], Path], reason: str
) -> None:
    files = _pair(tmp_path)
    spoil(Path(files.certfile))
    outcome = _within_deadline(lambda: prime_context(files))
    assert isinstance(outcome, RuntimeError), outcome
    assert f"cannot serve TLS with {files.certfile}" in str(outcome)
    assert reason in str(outcome)


@pytest.mark.parametrize(("spoil", "reason"), BAD)
def test_a_certificate_spoiled_at_run_time_keeps_the_last_context_without_blocking(
    tmp_path: Path, spoil: Callable[[Path], Path], reason: str
) -> None:
    files = _pair(tmp_path)
    cache = ContextCache(files, interval=0.0)
    served = cache.get()
    spoil(Path(files.certfile))
    assert _within_deadline(cache.get) is served
    assert cache.builds == 1


def test_a_rotated_pair_is_served_on_the_next_check(tmp_path: Path) -> None:
    files = _pair(tmp_path / "old")
    cache = ContextCache(files, interval=0.0)
    served = cache.get()
    _pair(tmp_path / "new")
    for name in (pki.CERT_FILE, pki.KEY_FILE):
        shutil.copyfile(tmp_path / "new" / name, tmp_path / "old" / name)
    assert cache.get() is not served
    assert cache.builds == 2


def test_a_client_ca_is_read_bounded_too(tmp_path: Path) -> None:
    files = _pair(tmp_path)
    ca = specialfiles.fifo(tmp_path / pki.CA_FILE)
    with_ca = TLSFiles(files.certfile, files.keyfile, str(ca))
    outcome = _within_deadline(lambda: prime_context(with_ca))
    assert isinstance(outcome, RuntimeError)
    assert "client CA file" in str(outcome)


def test_a_context_verifies_client_certificates_against_the_client_ca(tmp_path: Path) -> None:
    files = _pair(tmp_path)
    with_ca = TLSFiles(files.certfile, files.keyfile, str(tmp_path / pki.CA_FILE))
    context = ContextCache(with_ca).get()
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert context.cert_store_stats()["x509_ca"] == 1
