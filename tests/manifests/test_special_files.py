"""What the reader does with paths that are not regular files, or hold more than the cap.

Every case is a real FIFO, socket, device link or sparse file in ``tmp_path``, read through
:func:`load` in a thread that the test waits for with a timeout, so a reader that blocks
fails the test instead of hanging the run. In each, the unusable file is one problem in
the report, named by its path, and the ordinary file beside it is still read.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from webhooks.manifests import reader
from webhooks.manifests.files import Unreadable, read_file
from webhooks.manifests.limits import MAX_FILE_BYTES
from webhooks.manifests.reader import Manifests, load

POD = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: good\n"
#: How long a read may take before the test calls it a hang.
HANG = 10.0


@pytest.fixture
def fifos() -> Iterator[list[Path]]:
    """FIFOs a test makes; each is opened for writing at the end, to free a blocked reader."""
    made: list[Path] = []
    yield made
    for path in made:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def loaded(paths: list[str], stdin: reader.Stdin = None) -> Manifests:
    """:func:`load` in a thread, failing the test if it has not returned within :data:`HANG`."""
    outcome: list[Manifests | BaseException] = []

    def run() -> None:
        try:
            outcome.append(load(paths, stdin))
        except BaseException as exc:  # handed back to the test, whatever it is
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG)
    if thread.is_alive():
        pytest.fail(f"reading blocked for {HANG:g} s (a hang, not a refusal)")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _fifo(path: Path, fifos: list[Path]) -> None:
    os.mkfifo(path)
    fifos.append(path)


def _socket(path: Path, fifos: list[Path]) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()


def _to(target: str) -> Callable[[Path, list[Path]], None]:
    def make(path: Path, fifos: list[Path]) -> None:
        path.symlink_to(target)

    return make


def _pipe_of_this_process(path: Path, fifos: list[Path]) -> None:
    read_end, write_end = os.pipe()
    path.symlink_to(f"/proc/self/fd/{read_end}")
    fifos.append(path)  # the fixture frees a reader blocked on it...
    # ...and closing the write end ends it; the read end stays open for the test's duration.
    os.close(write_end)


def _loop(path: Path, fifos: list[Path]) -> None:
    path.symlink_to(path.name)


def _sparse_over_cap(path: Path, fifos: list[Path]) -> None:
    with path.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # holes: nothing is written, nothing need be read


FILE_CASES = [
    pytest.param(
        _fifo,
        "x.yaml: a FIFO (named pipe), not a regular file",
        id="a FIFO named x.yaml is refused, not read",
    ),
    pytest.param(
        _to("/dev/zero"),
        "x.yaml: a character device, not a regular file",
        id="a link to /dev/zero is refused, not read until memory runs out",
    ),
    pytest.param(
        _to("/dev/urandom"),
        "x.yaml: a character device, not a regular file",
        id="a link to /dev/urandom is refused",
    ),
    pytest.param(
        _to("/dev/null"),
        "x.yaml: a character device, not a regular file",
        id="a link to /dev/null is refused, not read as empty",
    ),
    pytest.param(
        _pipe_of_this_process,
        "x.yaml: a FIFO (named pipe), not a regular file",
        id="a link into /proc/self/fd naming a pipe is refused",
    ),
    pytest.param(_socket, "x.yaml: a socket, not a regular file", id="a socket is refused"),
    pytest.param(
        _loop,
        "x.yaml: cannot read: Too many levels of symbolic links",
        id="a symbolic link loop is a problem, not a crash",
    ),
    pytest.param(
        _sparse_over_cap,
        f"x.yaml: over the limit of {MAX_FILE_BYTES:,} bytes for a manifest: it holds "
        f"{MAX_FILE_BYTES + 1:,} bytes",
        id="a sparse file past the cap is refused from its size",
    ),
]
#: Named on the command line, a directory is walked: this one is refused only inside a walk.
CASES = [
    *FILE_CASES,
    pytest.param(
        _to("/"),
        "x.yaml: a directory, not a regular file",
        id="a link to a directory outside, named x.yaml, is refused",
    ),
]


@pytest.mark.parametrize(("make", "problem"), CASES)
def test_a_special_file_in_a_directory_is_one_problem_and_the_rest_is_read(
    tmp_path: Path, fifos: list[Path], make: Callable[[Path, list[Path]], None], problem: str
) -> None:
    root = tmp_path / "manifests"
    root.mkdir()
    (root / "a.yaml").write_bytes(POD)
    make(root / "x.yaml", fifos)
    (root / "z.yaml").write_bytes(POD)
    manifests = loaded([str(root)])
    [refused] = manifests.problems
    assert str(refused).startswith(f"{root}/{problem}")
    assert [doc.path for doc in manifests.documents] == [f"{root}/a.yaml", f"{root}/z.yaml"]


@pytest.mark.parametrize(("make", "problem"), FILE_CASES)
def test_a_special_file_named_on_the_command_line_is_one_problem(
    tmp_path: Path, fifos: list[Path], make: Callable[[Path, list[Path]], None], problem: str
) -> None:
    (tmp_path / "a.yaml").write_bytes(POD)
    make(tmp_path / "x.yaml", fifos)
    manifests = loaded([str(tmp_path / "x.yaml"), str(tmp_path / "a.yaml")])
    [refused] = manifests.problems
    assert str(refused).startswith(f"{tmp_path}/{problem}")
    assert [doc.path for doc in manifests.documents] == [f"{tmp_path}/a.yaml"]


def test_a_link_to_a_directory_inside_the_walk_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_bytes(POD)
    (tmp_path / "up").symlink_to(tmp_path)  # a loop, if it were followed
    manifests = loaded([str(tmp_path)])
    assert manifests.problems == []
    assert [doc.path for doc in manifests.documents] == [f"{tmp_path}/a.yaml"]


def test_a_file_one_byte_over_the_cap_is_refused_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "MAX_FILE_BYTES", len(POD) - 1)
    (tmp_path / "a.yaml").write_bytes(POD)
    manifests = loaded([str(tmp_path / "a.yaml")])
    assert [p.reason for p in manifests.problems] == [
        f"over the limit of {len(POD) - 1} bytes for a manifest: it holds {len(POD)} bytes"
    ]
    assert manifests.documents == []


@pytest.mark.parametrize(
    ("size", "refused"),
    [
        pytest.param(len(POD), False, id="a file of exactly the limit is read"),
        pytest.param(len(POD) - 1, True, id="a file one byte over the limit is refused"),
    ],
)
def test_the_limit_is_inclusive(tmp_path: Path, size: int, refused: bool) -> None:
    (tmp_path / "a.yaml").write_bytes(POD)
    if refused:
        with pytest.raises(Unreadable, match=f"over the limit of {size} bytes"):
            read_file(tmp_path / "a.yaml", size, "a manifest")
    else:
        assert read_file(tmp_path / "a.yaml", size, "a manifest") == POD


def test_a_proc_file_that_claims_no_size_is_still_held_to_the_limit() -> None:
    # /proc files are regular and report size 0: the read itself stops past the limit.
    assert b"Name:" in read_file("/proc/self/status", MAX_FILE_BYTES, "a manifest")
    with pytest.raises(Unreadable, match="over the limit of 4 bytes for a manifest"):
        read_file("/proc/self/status", 4, "a manifest")


class Endless:
    """Stdin that never ends (``check - < /dev/zero``), counting the bytes it gave."""

    def __init__(self) -> None:
        self.given = 0

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            raise MemoryError("asked for everything of an endless stream")
        self.given += size
        return b"\0" * size


def test_endless_stdin_is_refused_after_the_cap_and_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 3 << 20)
    stdin = Endless()
    manifests = loaded(["-", "-"], stdin)  # type: ignore[arg-type]
    refusal = (
        f"<stdin>: over the limit of {3 << 20:,} bytes for a manifest: stdin holds more than that"
    )
    assert [str(p) for p in manifests.problems] == [refusal, refusal]
    assert stdin.given == (3 << 20) + 1, "read once, and one byte past the cap"


@pytest.mark.parametrize(
    ("given", "documents"),
    [
        pytest.param(POD, 1, id="stdin as bytes within the cap is read"),
        pytest.param(POD + b"#", 0, id="stdin as bytes over the cap is refused"),
    ],
)
def test_stdin_given_as_bytes_has_the_same_cap(
    monkeypatch: pytest.MonkeyPatch, given: bytes, documents: int
) -> None:
    monkeypatch.setattr(reader, "MAX_FILE_BYTES", len(POD))
    manifests = loaded(["-"], given)
    assert len(manifests.documents) == documents
    assert len(manifests.problems) == 1 - documents
