"""The README's NodePool example is what ``explain`` prints for the files it describes."""

from __future__ import annotations

import re
from pathlib import Path

from tests.command import invoke_cli

ROOT = Path(__file__).parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "explain"
README = (ROOT / "README.md").read_text()
SECTION = README[README.index("## Before you deploy: `explain`") : README.index("## Configuration")]


def block(kind: str) -> str:
    found = re.search(rf"```{kind}[^\n]*\n(.*?)```", SECTION, re.S)
    assert found is not None, kind
    return found.group(1)


def test_the_readme_nodepool_is_the_fixture() -> None:
    assert block("yaml") == (FIXTURES / "readme" / "nodepool-gpu.yaml").read_text()


def test_every_line_of_the_readme_output_is_printed() -> None:
    result = invoke_cli(
        [
            "explain",
            "--nodes",
            str(FIXTURES / "karpenter-nodes.yaml"),
            "--node-templates",
            str(FIXTURES / "readme" / "nodepool-gpu.yaml"),
            str(FIXTURES / "gpu-job.yaml"),
            str(FIXTURES / "readme" / "device-plugin.yaml"),
        ],
    )
    assert result.exit_code == 0, result.output
    printed = result.stdout.replace(str(FIXTURES / "gpu-job.yaml"), "train-job.yaml")
    lines = printed.splitlines()
    for line in block("text").splitlines():
        if line != "...":
            assert line in lines
