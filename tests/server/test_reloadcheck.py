"""A reload's config check: whatever reading a file does in the checking child, the caller
gets the parsed config or a refusal with a bounded reason, never the failure itself.

The files that broke the master before (and others of the same families) are a table here,
used again against a real server in tests/e2e/test_reloads.py."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import specialfiles
from webhooks.configfile import read_config
from webhooks.server.reloadcheck import REASON_CHARS, Refused, describe, excerpt, run_checked
from webhooks.server.runner import config_for_reload

GOOD = "plugins:\n  default-toleration-seconds:\n    notReadySeconds: {seconds}\n"


def _alias_bomb() -> str:
    """Nine levels of ten aliases each: a billion strings once expanded, 532 bytes written."""
    value = "&a0 [" + ",".join(['"xxxxxxxxxx"'] * 10) + "]"
    for level in range(1, 9):
        value = f"&a{level} [{value}," + ",".join([f"*a{level - 1}"] * 9) + "]"
    return GOOD.format(seconds=value)


def _write(data: str | bytes) -> Callable[[Path], object]:
    def make(path: Path) -> None:
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")

    return make


def _deleted(path: Path) -> None:
    path.unlink(missing_ok=True)


def _unreadable(path: Path) -> None:
    path.write_text(GOOD.format(seconds=7), encoding="utf-8")
    path.chmod(0)


#: (how the file is made, what the refusal says); ids are what the file is.
BAD_FILES = [
    pytest.param(
        _write(b"plugins:\n  default-toleration-seconds:\n    notReadySeconds: 7\n# \xff\xfe\n"),
        "not UTF-8 text: byte 0xFF cannot be decoded",
        id="a file that is not UTF-8",
    ),
    pytest.param(
        _write(GOOD.format(seconds="9" * 5000)),
        "notReadySeconds: must be an integer",
        id="an integer of 5,000 digits",
    ),
    pytest.param(
        _write("plugins: " + "[" * 50_000 + "]" * 50_000 + "\n"),
        "exceeded max depth of 10000",
        id="a list nested 50,000 deep",
    ),
    pytest.param(
        _write(_alias_bomb()),
        "excessive aliasing",
        id="an alias bomb of a billion strings",
    ),
    pytest.param(
        specialfiles.directory,
        "a directory, not a regular file",
        id="a directory instead of a file",
    ),
    pytest.param(_deleted, "No such file or directory", id="a file deleted"),
    pytest.param(
        _unreadable,
        "Permission denied",
        id="a file nobody may read",
        marks=pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file"),
    ),
    pytest.param(
        specialfiles.link_to("/proc/self/mem"), "Input/output error", id="a file whose read fails"
    ),
    pytest.param(
        specialfiles.sparse(300 << 20), "over the limit of 1,048,576 bytes", id="a file of 300 MiB"
    ),
    pytest.param(
        specialfiles.link_to("/dev/zero"),
        "over the limit of 1,048,576 bytes",
        id="a symlink to /dev/zero",
    ),
    pytest.param(_write("plugins: [unclosed\n"), "invalid YAML", id="YAML that does not parse"),
    pytest.param(_write("plugin: {}\n"), "plugin: unknown key", id="an unknown key"),
    pytest.param(
        _write("cluster:\n  source: kubeconfig\n  kubeconfig: /nonexistent/kubeconfig\n"),
        "cluster: kubeconfig /nonexistent/kubeconfig",
        id="a cluster source that cannot be set up",
    ),
]


@pytest.mark.parametrize(("make", "reason"), BAD_FILES)
def test_a_config_the_server_cannot_use_is_refused_with_the_reason(
    tmp_path: Path, make: Callable[[Path], object], reason: str
) -> None:
    path = tmp_path / "config.yaml"
    make(path)
    with pytest.raises(Refused) as refused:
        run_checked(lambda: config_for_reload(str(path)))
    message = str(refused.value)
    assert reason in message
    assert len(message) <= REASON_CHARS + len("… (999999999 characters)")


def test_a_config_the_server_can_use_comes_back_as_read(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(Path("bench/configs/full.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    assert run_checked(lambda: config_for_reload(str(path))) == read_config(path)


def test_a_file_that_never_ends_is_refused_at_the_deadline(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    specialfiles.fifo(path)
    # A writer that holds the FIFO open and says nothing: the read blocks until the child
    # is stopped (with no writer at all, the reader refuses the FIFO at once).
    writer = os.open(path, os.O_RDWR)
    try:
        with pytest.raises(Refused, match=r"took longer than 0\.5 s \(the reload check's limit\)"):
            run_checked(lambda: config_for_reload(str(path)), seconds=0.5)
    finally:
        os.close(writer)


def _raise(exc: BaseException) -> Callable[[], object]:
    def check() -> object:
        raise exc

    return check


def _allocate() -> object:
    return bytearray(1 << 30)


def _sleep() -> object:
    time.sleep(60)
    return None


def _crash() -> object:
    os.kill(os.getpid(), signal.SIGSEGV)
    return None


def _exit_silently() -> object:
    os._exit(3)


def _print_loudly() -> object:
    raise ValueError("x" * 1_000_000)


@pytest.mark.parametrize(
    ("check", "reason"),
    [
        (_raise(ValueError("bad value")), "ValueError: bad value"),
        (_raise(Refused("path: key: must be an integer")), "path: key: must be an integer"),
        (_raise(RecursionError()), "RecursionError"),
        (_raise(KeyboardInterrupt()), "KeyboardInterrupt"),
        (
            _print_loudly,
            f"{('ValueError: ' + 'x' * REASON_CHARS)[:REASON_CHARS]}… (1000012 characters)",
        ),
        (_allocate, "reading it needs more than 64 MiB (the reload check's limit)"),
        (_sleep, "reading it took longer than 0.5 s (the reload check's limit)"),
        (_crash, "the check died of SIGSEGV"),
        (_exit_silently, "the check ended without an answer (exit status 3)"),
    ],
    ids=[
        "an exception: its type and message",
        "a refusal: its message alone",
        "an exception without a message: its type",
        "even what is not an Exception",
        "a message of a million characters: an excerpt and its length",
        "an allocation past the memory cap: the cap named",
        "a check past the deadline: the deadline named",
        "a crash (a stack overflow in C): the signal named",
        "an exit without an answer: the status named",
    ],
)
def test_whatever_the_check_does_the_caller_gets_a_refusal(
    check: Callable[[], object], reason: str
) -> None:
    with pytest.raises(Refused) as refused:
        run_checked(check, seconds=0.5, memory=64 << 20)
    assert str(refused.value) == reason


def test_the_checked_value_crosses_back_whole() -> None:
    value = {"exceptions": [f"exc-{i}" for i in range(10_000)]}
    assert run_checked(lambda: value) == value


@pytest.mark.parametrize(
    ("text", "shown"),
    [("short", "short"), ("y" * 600, "y" * REASON_CHARS + "… (600 characters)")],
    ids=["a short reason is shown whole", "a long one is cut, saying how long it was"],
)
def test_excerpt(text: str, shown: str) -> None:
    assert excerpt(text) == shown


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise MemoryError


def test_an_exception_whose_message_cannot_be_rendered_is_described_by_its_type() -> None:
    assert describe(_Unprintable()) == "_Unprintable"
