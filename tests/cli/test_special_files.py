"""Every command that takes paths, given a FIFO, a device link or endless stdin, as a real process.

Each run has a deadline and an address-space limit, so a command that blocks on a FIFO
or reads ``/dev/zero`` until memory runs out fails its test (killed at the deadline, or a
``MemoryError``) instead of hanging the run or the machine. What every command must do:
name the file and why it is refused, on stderr, exit 2 (unusable input), and not block.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from tests.command import ROOT
from webhooks.manifests.limits import MAX_FILE_BYTES

#: The most a command may take before the test calls it a hang.
DEADLINE = 60.0
#: The address space a command may use: room for the interpreter and one capped read, far
#: below what reading /dev/zero to its end would take.
ADDRESS_SPACE = 2 << 30

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: good}
spec:
  containers: [{name: a, image: nginx}]
"""
NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}
"""
SUITE = """\
name: s
resources: [pod.yaml]
expect:
- resource: {kind: Pod, name: good}
  result: pass
"""


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def command(args: list[str], cwd: Path, stdin: IO[bytes] | None = None) -> tuple[int, str, str]:
    """``python -m webhooks *args`` in ``cwd``, deadline and memory limited; fails on a hang."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "webhooks", *args],
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=DEADLINE,
            preexec_fn=_limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(args)} blocked for {DEADLINE:g} s (a hang, not a refusal)")
    return done.returncode, done.stdout, done.stderr


def fifo(path: Path) -> None:
    os.mkfifo(path)


def zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def sparse(path: Path) -> None:
    with path.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)


FIFO = "a FIFO (named pipe), not a regular file"
DEVICE = "a character device, not a regular file"
LARGE = f"over the limit of {MAX_FILE_BYTES:,} bytes for a manifest"


@pytest.mark.parametrize(
    ("make", "name", "args", "refusal"),
    [
        pytest.param(
            fifo,
            "in/x.yaml",
            ["check", "in"],
            FIFO,
            id="check on a directory holding a FIFO named x.yaml refuses it",
        ),
        pytest.param(
            zero,
            "in/x.yaml",
            ["check", "in"],
            DEVICE,
            id="check on a directory holding a link to /dev/zero refuses it",
        ),
        pytest.param(
            fifo,
            "x.yaml",
            ["check", "x.yaml", "in"],
            FIFO,
            id="check on a FIFO named on the command line refuses it",
        ),
        pytest.param(
            sparse,
            "in/x.yaml",
            ["check", "in"],
            LARGE,
            id="check on a sparse file past the cap refuses it",
        ),
        pytest.param(
            fifo,
            "in/x.yaml",
            ["mutate", "in"],
            FIFO,
            id="mutate on a directory holding a FIFO refuses it",
        ),
        pytest.param(
            zero,
            "x.yaml",
            ["check", "--objects", "x.yaml", "in"],
            DEVICE,
            id="check --objects given a link to /dev/zero refuses it",
        ),
        pytest.param(
            fifo,
            "x.yaml",
            ["explain", "--nodes", "x.yaml", "in"],
            FIFO,
            id="explain --nodes given a FIFO refuses it",
        ),
        pytest.param(
            zero,
            "in/x.yaml",
            ["explain", "--nodes", "nodes.yaml", "in"],
            DEVICE,
            id="explain on pods in a directory with a link to /dev/zero refuses it",
        ),
        pytest.param(
            fifo,
            "suites/x.test.yaml",
            ["test", "suites"],
            FIFO,
            id="test on a directory holding a FIFO named x.test.yaml refuses it",
        ),
        pytest.param(
            zero,
            "suites/pod.yaml",
            ["test", "suites"],
            DEVICE,
            id="test on a suite whose resources link to /dev/zero refuses it",
        ),
    ],
)
def test_a_command_names_the_special_file_and_exits_2(
    tmp_path: Path, make: Callable[[Path], None], name: str, args: list[str], refusal: str
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.yaml").write_text(POD)
    (tmp_path / "nodes.yaml").write_text(NODE)
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "good.test.yaml").write_text(SUITE)
    if name != "suites/pod.yaml":
        (tmp_path / "suites" / "pod.yaml").write_text(POD)
    make(tmp_path / name)
    code, _, err = command(args, tmp_path)
    assert f"{name}: {refusal}" in err
    assert code == 2, err


def test_check_still_reports_the_other_files_of_the_directory(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.yaml").write_text(POD)
    fifo(tmp_path / "in" / "x.yaml")
    code, out, err = command(["check", "in"], tmp_path)
    assert code == 2
    assert "in/a.yaml:1: default-toleration-seconds: Pod default/good: added" in out
    assert f"in/x.yaml: {FIFO}" in err


def test_check_refuses_endless_stdin_after_the_cap(tmp_path: Path) -> None:
    with Path("/dev/zero").open("rb") as endless:
        code, _, err = command(["check", "-"], tmp_path, stdin=endless)
    assert f"<stdin>: {LARGE}: stdin holds more than that" in err
    assert code == 2, err
