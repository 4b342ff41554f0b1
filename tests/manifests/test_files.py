"""Reading one input file: regular files only, at most the cap, never blocking on a FIFO."""

from __future__ import annotations

import io
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from webhooks.manifests.files import CHUNK, MAX_FILE_BYTES, FileRefused, read_capped, read_regular

#: How long a read may take before the test calls it a hang (the old reader blocked forever).
HANG = 10.0


def within(call: Callable[[], object]) -> object:
    """``call()``'s result or exception, failing the test instead of hanging on a block."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed back to the test, whatever it is
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG)
    if thread.is_alive():
        pytest.fail("the read blocked (a hang, not a refusal)")
    return outcome[0]


def fifo(tmp: Path) -> Path:
    path = tmp / "x.yaml"
    os.mkfifo(path)
    return path


def unix_socket(tmp: Path) -> Path:
    path = tmp / "s.yaml"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()
    return path


def link(target: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "l.yaml"
        path.symlink_to(target)
        return path

    return make


def directory(tmp: Path) -> Path:
    path = tmp / "d.yaml"
    path.mkdir()
    return path


def link_to_fifo(tmp: Path) -> Path:
    target = fifo(tmp)
    path = tmp / "to-fifo.yaml"
    path.symlink_to(target)
    return path


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        pytest.param(fifo, "a FIFO", id="a FIFO named x.yaml is refused, not read"),
        pytest.param(link_to_fifo, "a FIFO", id="a symbolic link to a FIFO is refused"),
        pytest.param(link("/dev/zero"), "a character device", id="a link to /dev/zero is refused"),
        pytest.param(
            link("/dev/urandom"), "a character device", id="a link to /dev/urandom is refused"
        ),
        pytest.param(link("/dev/null"), "a character device", id="a link to /dev/null is refused"),
        pytest.param(
            link("/proc/self/fd/0"), None, id="a link to the reader's own stdin is refused or read"
        ),
        pytest.param(unix_socket, "a socket", id="a socket is refused"),
        pytest.param(directory, "a directory", id="a directory named x.yaml is refused"),
        pytest.param(link("/"), "a directory", id="a link to a directory outside is refused"),
    ],
)
def test_what_is_not_a_regular_file_is_refused_by_kind(
    tmp_path: Path, make: Callable[[Path], Path], kind: str | None
) -> None:
    path = make(tmp_path)
    outcome = within(lambda: read_regular(path))
    if kind is None:  # stdin of pytest may be anything; it must neither hang nor be endless
        assert isinstance(outcome, bytes | FileRefused | OSError)
        return
    assert isinstance(outcome, FileRefused), outcome
    assert outcome.reason.startswith(kind)
    assert "not a regular file" in outcome.reason


def test_a_link_loop_is_an_os_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    with pytest.raises(OSError, match="symbolic links"):
        read_regular(tmp_path / "a.yaml")


@pytest.mark.parametrize(
    ("size", "limit", "refused"),
    [
        pytest.param(0, 10, False, id="an empty file is read"),
        pytest.param(10, 10, False, id="a file of exactly the limit is read"),
        pytest.param(11, 10, True, id="a file one byte over the limit is refused"),
        pytest.param(3 * CHUNK + 1, 3 * CHUNK + 1, False, id="a file over many chunks is read"),
    ],
)
def test_the_cap_is_inclusive(tmp_path: Path, size: int, limit: int, refused: bool) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"a" * size)
    if refused:
        with pytest.raises(FileRefused, match=f"larger than the limit of {limit:,} bytes"):
            read_regular(path, limit)
    else:
        assert read_regular(path, limit) == b"a" * size


def test_a_sparse_huge_file_is_refused_from_its_size_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "sparse.yaml"
    with path.open("wb") as fh:
        fh.truncate(1 << 40)  # a terabyte of holes: reading it would take hours
    with pytest.raises(FileRefused, match=f"{MAX_FILE_BYTES:,} bytes"):
        read_regular(path)


def test_a_proc_file_that_reports_no_size_is_read_up_to_the_cap() -> None:
    # /proc files claim size 0 and are regular: the cap holds on what is read, not on st_size.
    data = read_regular("/proc/self/status")
    assert b"Name:" in data
    with pytest.raises(FileRefused, match="larger than the limit of 4 bytes"):
        read_regular("/proc/self/status", 4)


class Endless(io.RawIOBase):
    """A stream that never ends, counting what was asked of it."""

    def __init__(self) -> None:
        self.given = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert 0 < size <= CHUNK, "never asks for more than a chunk, nor for everything"
        self.given += size
        return b"\0" * size


def test_an_endless_stream_is_read_only_to_one_byte_past_the_cap() -> None:
    stream = Endless()
    with pytest.raises(FileRefused, match="larger than the limit of 2,500,000 bytes"):
        read_capped(stream.read, 2_500_000)
    assert stream.given == 2_500_001


def test_a_file_that_grows_while_read_stops_at_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "growing.yaml"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    with path.open("ab") as writer:

        def read(n: int) -> bytes:
            writer.write(b"x" * n)  # every read finds as much again appended
            writer.flush()
            return os.read(fd, n)

        try:
            with pytest.raises(FileRefused):
                read_capped(read, 3 * CHUNK)
        finally:
            os.close(fd)
    assert path.stat().st_size == 3 * CHUNK + 1, "read no further than one byte past the cap"
