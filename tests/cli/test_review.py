"""The CLI: `review` through click's runner and as a real subprocess."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.command import ROOT, invoke_cli, run_cli
from tests.reviews import container, pod, review
from webhooks.server.framing import MAX_BODY


def _patch(out: dict[str, Any]) -> list[dict[str, Any]]:
    raw = out["response"].get("patch")
    return orjson.loads(base64.b64decode(raw)) if raw else []


def test_review_reads_stdin_and_prints_the_response(tmp_path: Path) -> None:
    proc = run_cli("review", "-", stdin=orjson.dumps(review(pod(), uid="cli-1")), text=False)
    assert proc.returncode == 0, proc.stderr
    out = orjson.loads(proc.stdout)
    assert out["response"]["uid"] == "cli-1"
    assert len(_patch(out)[0]["value"]) == 2


def test_review_with_configured_seconds_and_one_plugin(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("plugins:\n  default-toleration-seconds:\n    notReadySeconds: 60\n")
    body = tmp_path / "r.json"
    body.write_bytes(orjson.dumps(review(pod())))
    proc = run_cli(
        "review",
        "--plugin",
        "default-toleration-seconds",
        "--config",
        str(cfg),
        str(body),
        text=False,
    )
    assert proc.returncode == 0, proc.stderr
    added = _patch(orjson.loads(proc.stdout))[0]["value"]
    assert added[0] == {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 60,
    }


def test_review_of_a_gpu_pod_with_the_extended_resource_plugin() -> None:
    obj = pod(containers=[container(requests={"nvidia.com/gpu": "1"})])
    result = invoke_cli(
        ["review", "--plugin", "extended-resource-toleration", "-"],
        stdin=orjson.dumps(review(obj)),
    )
    assert result.exit_code == 0, result.output
    assert _patch(orjson.loads(result.stdout))[0]["value"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


UNUSABLE = [
    ("input that is not JSON", ["review", "-"], b"{", "not valid JSON"),
    ("an unknown plugin", ["review", "--plugin", "nope", "-"], b"{}", "unknown plugin 'nope'"),
    ("a missing review file", ["review", "/nonexistent/review.json"], None, "cannot read"),
    (
        "a missing objects file",
        ["review", "--objects", "/nonexistent/o.yaml", "-"],
        b"{}",
        "cannot read",
    ),
    (
        "a review without a uid",
        ["review", "-"],
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}',
        "uid",
    ),
]


@pytest.mark.parametrize(
    ("args", "stdin", "reason"), [u[1:] for u in UNUSABLE], ids=[u[0] for u in UNUSABLE]
)
def test_unusable_input_exits_2_with_the_reason_on_stderr(
    args: list[str], stdin: bytes | None, reason: str
) -> None:
    result = invoke_cli(args, stdin=stdin)
    assert result.exit_code == 2
    assert reason in result.stderr
    assert result.stdout == ""


def test_an_unusable_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("plugins:\n  default-toleration-seconds:\n    bogus: 1\n")
    result = invoke_cli(["review", "--config", str(cfg), "-"], stdin=b"{}")
    assert result.exit_code == 2
    assert "plugins.default-toleration-seconds.bogus: unknown key" in result.stderr


def test_python_dash_m_is_the_same_command() -> None:
    proc = run_cli("--help", text=False)
    assert proc.returncode == 0
    assert b"review" in proc.stdout and b"serve" in proc.stdout


NODES_FILE = str(ROOT / "tests" / "fixtures" / "as-kubectl-reads" / "nodes" / "nodes.yaml")
EMPTY_ARGUMENTS = [
    pytest.param(["check", ""], "PATH", id="check with an empty PATH"),
    pytest.param(["check", NODES_FILE, ""], "PATH", id="check with an empty PATH among good ones"),
    pytest.param(["check", "--objects", "", NODES_FILE], "--objects", id="check --objects empty"),
    pytest.param(["mutate", ""], "PATH", id="mutate with an empty PATH"),
    pytest.param(["test", ""], "PATH", id="test with an empty PATH"),
    pytest.param(["explain", "--nodes", NODES_FILE, ""], "PATH", id="explain with an empty PATH"),
    pytest.param(["explain", "--nodes", ""], "--nodes", id="explain --nodes empty"),
    pytest.param(
        ["explain", "--nodes", NODES_FILE, "--node-templates", ""],
        "--node-templates",
        id="explain --node-templates empty",
    ),
]


@pytest.mark.parametrize(("args", "what"), EMPTY_ARGUMENTS)
def test_an_empty_path_argument_exits_2_with_one_line(args: list[str], what: str) -> None:
    result = invoke_cli(args, stdin=b"")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f'placement-webhooks: an empty {what} argument (""): give ')


def _fifo(tmp_path: Path) -> list[str]:
    path = tmp_path / "review.json"
    os.mkfifo(path)
    return ["review", str(path)]


def _dev_zero(tmp_path: Path) -> list[str]:
    path = tmp_path / "review.json"
    path.symlink_to("/dev/zero")
    return ["review", str(path)]


def _over_the_body_limit(tmp_path: Path) -> list[str]:
    path = tmp_path / "review.json"
    with path.open("wb") as out:  # sparse: no disk used
        out.truncate(MAX_BODY + 1)
    return ["review", str(path)]


@pytest.mark.parametrize(
    ("make", "stdin", "reason"),
    [
        pytest.param(
            _fifo,
            None,
            "a FIFO (named pipe), not a regular file",
            id="a FIFO is refused, not waited on",
        ),
        pytest.param(
            _dev_zero,
            None,
            "a character device, not a regular file",
            id="a link to /dev/zero is refused, not read",
        ),
        pytest.param(
            _over_the_body_limit,
            None,
            f"over the limit of {MAX_BODY:,} bytes for an AdmissionReview",
            id="a file over the server's body limit is refused by its size",
        ),
        pytest.param(
            lambda _: ["review", "-"],
            b"{" * (MAX_BODY + 1),
            f"over the limit of {MAX_BODY:,} bytes for an AdmissionReview: stdin holds more",
            id="stdin past the server's body limit is refused after the limit",
        ),
    ],
)
def test_a_review_is_read_only_from_a_regular_file_or_stdin_within_the_body_limit(
    tmp_path: Path, make: Callable[[Path], list[str]], stdin: bytes | None, reason: str
) -> None:
    # A real process with a deadline: an input that is never refused would hang or exhaust
    # memory, and the deadline turns that into a failure instead of a stuck suite.
    proc = run_cli(*make(tmp_path), stdin=stdin, text=False, timeout=30)
    assert proc.returncode == 2
    assert reason in proc.stderr.decode()
    assert proc.stdout == b""
