"""``check`` with ``enforce`` guarding the GPU nodes' taint, as docs/gpu.md shows it: a MIG
pod and a mesh agent pass, a web pod tolerating the GPU taint is refused, and the old
``enforce: true`` stops with the way to migrate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.command import invoke_cli

FIXTURES = Path(__file__).parent.parent / "fixtures" / "enforce"
CONFIG = str(FIXTURES / "config.yaml")
PODS = str(FIXTURES / "pods.yaml")
ERT = "extended-resource-toleration"


def refusals(output: str) -> list[str]:
    """The ``path:line`` of each refusal by extended-resource-toleration."""
    return [
        line.split(f": {ERT}: ")[0].rsplit(":", 1)[1]
        for line in output.splitlines()
        if f": {ERT}: toleration " in line
    ]


def test_only_the_pod_that_earns_nothing_is_refused() -> None:
    result = invoke_cli(["check", "--config", CONFIG, PODS])
    assert result.exit_code == 1
    assert refusals(result.output) == ["35"]  # the web pod's toleration key
    assert "any nvidia.com/* resource, a claim of device class gpu.nvidia.com" in result.output


@pytest.mark.parametrize(
    ("section", "message"),
    [
        pytest.param(
            "{enforce: true}",
            f"plugins.{ERT}.enforce: true names no taint key to guard",
            id="enforce: true stops check and says how to name the keys",
        ),
        pytest.param(
            "{enforce: {guarded: [{taintKey: nvidia.com/gpu,"
            " earnedBy: {resourcePrefixes: [nv]}}]}}",
            f"plugins.{ERT}.enforce.guarded[0].earnedBy.resourcePrefixes[0]:",
            id="a prefix without its domain stops check naming the key",
        ),
    ],
)
def test_unusable_enforce_settings_stop_check_naming_the_key(
    tmp_path: Path, section: str, message: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"plugins:\n  {ERT}: {section}\n", encoding="utf-8")
    result = invoke_cli(["check", "--config", str(config), PODS])
    assert result.exit_code == 2
    assert message in result.output
