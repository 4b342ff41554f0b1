"""The configuration model: one loader for the server, ``review`` and ``check``.

Input is the already-parsed YAML document (a dict), so this module stays free of file and
YAML handling. Every key is optional, defaults equal upstream defaults, and any problem —
an unknown key, a wrong type, a value a plugin rejects — raises :class:`ConfigError` naming
the full key path, because an operator fixing a ConfigMap needs to know *which* line.

Plugin settings are frozen dataclasses declared by each plugin; their snake_case field
names appear in YAML as camelCase, like Kubernetes' own configuration files.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from webhooks.core.plugin import Plugin, Registry


class ConfigError(ValueError):
    """The configuration cannot be used; the message starts with the offending key path."""


def camel(name: str) -> str:
    """``not_ready_seconds`` → ``notReadySeconds``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """Whether a plugin runs in the full chain, and its settings."""

    enabled: bool
    settings: Any


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """Where RuntimeClasses and Namespaces come from when serving.

    ``source``: ``auto`` uses the in-cluster service account when present, else no cluster;
    ``kubeconfig`` uses the file named in ``kubeconfig``; ``none`` never asks a cluster.
    ``lookup_timeout_seconds`` bounds every lookup so a review never hangs on the API.
    """

    source: Literal["auto", "in-cluster", "kubeconfig", "none"] = "auto"
    kubeconfig: str = ""
    context: str = ""
    lookup_timeout_seconds: float = 2.0

    def __post_init__(self) -> None:
        if self.lookup_timeout_seconds <= 0:
            raise ValueError("lookupTimeoutSeconds: must be greater than 0")
        if self.source == "kubeconfig" and not self.kubeconfig:
            raise ValueError("kubeconfig: is required when source is 'kubeconfig'")


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration, resolved against a registry."""

    plugins: Mapping[str, PluginConfig]
    cluster: ClusterSettings = field(default_factory=ClusterSettings)

    def settings(self, name: str) -> Any:
        """The settings of plugin ``name``."""
        return self.plugins[name].settings

    def chain(self, registry: Registry, only: str | None = None) -> list[Plugin]:
        """The plugins to run, in chain order: the enabled ones, or just ``only``.

        Why ``only`` ignores ``enabled``: ``/mutate/<plugin>`` and ``review --plugin`` name a
        plugin explicitly, which is an instruction to run it.
        """
        if only is not None:
            return [registry.get(only)]
        return [p for p in registry if self.plugins[p.name].enabled]


def _convert(value: Any, hint: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin is Literal:
        if value not in args:
            allowed = ", ".join(repr(a) for a in args)
            raise ConfigError(f"{key}: must be one of {allowed}, got {value!r}")
        return value
    if origin in (types.UnionType, typing.Union):
        errors = []
        for arg in args:
            if arg is type(None) and value is None:
                return None
            try:
                return _convert(value, arg, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0])
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: must be an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: must be a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: must be a string, got {value!r}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise ConfigError(f"{key}: must be a list, got {value!r}")
        item = args[0] if args else Any
        return tuple(_convert(v, item, f"{key}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping) or hint is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: must be a mapping, got {value!r}")
        kt, vt = args if args else (Any, Any)
        return {_convert(k, kt, f"{key}"): _convert(v, vt, f"{key}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return build_settings(hint, value, key)
    raise ConfigError(f"{key}: unsupported setting type {hint!r}")  # pragma: no cover


def build_settings(cls: type[Any], data: Any, key: str, also: tuple[str, ...] = ()) -> Any:
    """Build settings dataclass ``cls`` from a YAML mapping, naming ``key`` in every error.

    ``also`` lists keys the caller handles itself, so the "known keys" hint stays complete.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{key}: must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {camel(f.name): f for f in dataclasses.fields(cls)}
    kwargs = {}
    for name, value in data.items():
        if name not in fields:
            known = ", ".join(sorted([*fields, *also])) or "none"
            raise ConfigError(f"{key}.{name}: unknown key (known keys: {known})")
        f = fields[name]
        kwargs[f.name] = _convert(value, hints[f.name], f"{key}.{name}")
    try:
        return cls(**kwargs)
    except ValueError as exc:
        text = str(exc)
        sub, _, rest = text.partition(": ")
        if rest and sub in fields:
            raise ConfigError(f"{key}.{sub}: {rest}") from None
        raise ConfigError(f"{key}: {text}") from None


TOP_LEVEL = ("plugins", "cluster")


def load_config(data: Any, registry: Registry) -> Config:
    """Resolve a parsed config document (or ``None`` for all defaults) against ``registry``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"<root>: must be a mapping, got {type(data).__name__}")
    for key in data:
        if key not in TOP_LEVEL:
            raise ConfigError(f"{key}: unknown key (known keys: {', '.join(TOP_LEVEL)})")
    plugins_data = data.get("plugins")
    plugins_data = {} if plugins_data is None else plugins_data
    if not isinstance(plugins_data, dict):
        raise ConfigError("plugins: must be a mapping")
    for name in plugins_data:
        if name not in registry:
            raise ConfigError(
                f"plugins.{name}: unknown plugin (known plugins: {', '.join(registry.names)})"
            )
    plugins: dict[str, PluginConfig] = {}
    for plugin in registry:
        key = f"plugins.{plugin.name}"
        section = plugins_data.get(plugin.name)
        section = {} if section is None else section
        if not isinstance(section, dict):
            raise ConfigError(f"{key}: must be a mapping, got {section!r}")
        section = dict(section)
        for name in section:
            if name in plugin.moved_settings:
                target = plugin.moved_settings[name]
                raise ConfigError(
                    f"{key}.{name}: moved to plugins.{target}.{name} (the {target} plugin "
                    "now holds this setting; enable it there)"
                )
        enabled = section.pop("enabled", plugin.enabled_by_default)
        if not isinstance(enabled, bool):
            raise ConfigError(f"{key}.enabled: must be true or false, got {enabled!r}")
        plugins[plugin.name] = PluginConfig(
            enabled, build_settings(plugin.settings, section, key, ("enabled",))
        )
    cluster = build_settings(ClusterSettings, data.get("cluster"), "cluster")
    return Config(plugins=plugins, cluster=cluster)
