"""The round-trip corpus (``tests/fixtures/roundtrip``) through the commands a user runs.

Each file holds one class of input that once broke the README's promise: ``mutate``'s
output, fed to ``check --fail-on-mutation``, finds nothing to change, and ``mutate`` run on
its own output prints it unchanged. Both with the default configuration and with the full
one, where every plugin is on. The files under ``refused/`` are documents kubectl refuses;
both commands refuse them too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.command import ROOT, invoke_cli

CORPUS = ROOT / "tests" / "fixtures" / "roundtrip"
FULL = ("--config", str(ROOT / "bench/configs/full.yaml"))
CLUSTER = ("--objects", str(ROOT / "bench/configs/cluster.yaml"))
CONFIGS = {"default": CLUSTER, "full": (*FULL, *CLUSTER)}
FILES = sorted(CORPUS.glob("*.yaml"))
REFUSED = sorted((CORPUS / "refused").glob("*.yaml"))


def test_the_corpus_is_there() -> None:
    assert len(FILES) >= 4 and len(REFUSED) >= 3


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_mutate_output_reads_back_with_nothing_to_change(path: Path, config: str) -> None:
    options = CONFIGS[config]
    once = invoke_cli(["mutate", *options, str(path)])
    assert once.exit_code in (0, 1), once.stderr
    assert "convergence" not in once.stderr
    checked = invoke_cli(
        ["check", *options, "--fail-on-mutation", "--output", "json", "-"], stdin=once.stdout
    )
    summary = json.loads(checked.stdout)["summary"]
    assert (summary["mutations"], summary["convergence"]) == (0, 0), once.stdout
    assert checked.exit_code == once.exit_code  # violations, if any, are the same ones
    twice = invoke_cli(["mutate", *options, "-"], stdin=once.stdout)
    assert twice.stdout == once.stdout


@pytest.mark.parametrize("command", ["check", "mutate"])
@pytest.mark.parametrize("path", REFUSED, ids=[p.stem for p in REFUSED])
def test_a_document_kubectl_refuses_is_refused(path: Path, command: str) -> None:
    result = invoke_cli([command, str(path)])
    assert result.exit_code == 2
    assert f"{path}:" in result.stderr and "not a Kubernetes object" in result.stderr
    if command == "mutate":
        assert result.stdout == ""
