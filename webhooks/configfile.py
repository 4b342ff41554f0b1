"""Reading the YAML configuration file into the core's config model.

Why separate from the core: the core never touches files or YAML, and the server, ``review``
and ``check`` must read the same file the same way.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from webhooks.core.config import Config, ConfigError, load_config
from webhooks.manifests.syntax import problem
from webhooks.plugins import REGISTRY


def read_config(path: str | Path | None) -> Config:
    """Load ``path`` (``None``: built-in defaults); :class:`ConfigError` names file and key."""
    if path is None:
        return load_config(None, REGISTRY)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line, reason = problem(exc, text)  # worded as the manifest reader words it
        raise ConfigError(f"{path}:{line}: {reason}" if line else f"{path}: {reason}") from None
    try:
        return load_config(data, REGISTRY)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
