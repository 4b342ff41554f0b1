"""The config file: a YAML mistake is one line of ours, ``file:line: reason``."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhooks.configfile import read_config
from webhooks.core.config import ConfigError

MISTAKES = [
    pytest.param(
        "plugins:\n  runtime-class: [\n",
        3,
        "invalid YAML: a value is missing here",
        id="an unclosed flow sequence",
    ),
    pytest.param(
        "plugins:\n\truntime-class: {}\n",
        2,
        "invalid YAML: a tab where YAML expects spaces (YAML indents with spaces only)",
        id="a tab indenting a key",
    ),
]


@pytest.mark.parametrize(("text", "line", "reason"), MISTAKES)
def test_a_config_file_that_is_not_yaml_is_named_with_its_line(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as refused:
        read_config(config)
    assert str(refused.value) == f"{config}:{line}: {reason}"
