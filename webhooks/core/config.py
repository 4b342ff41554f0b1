"""The configuration model: one loader for the server, ``review`` and ``check``.

Input is the already-parsed YAML document (a dict), so this module stays free of file and
YAML handling. Every key is optional, defaults equal upstream defaults, and any problem —
an unknown key, a wrong type, a value a plugin rejects — raises :class:`ConfigError` naming
the full key path, because an operator fixing a ConfigMap needs to know *which* line. A
message quotes what it refuses as a bounded excerpt (:mod:`webhooks.k8s.excerpt`), and
loading costs time linear in the document: every check looks at each value once.

Plugin settings are frozen dataclasses declared by each plugin; their snake_case field
names appear in YAML as camelCase, like Kubernetes' own configuration files.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from webhooks.core.plugin import Plugin, Registry
from webhooks.core.policy import (
    ENFORCE,
    Action,
    ActionOverride,
    Mutation,
    PolicyException,
    parse_expiry,
)
from webhooks.k8s.excerpt import clip, show, show_key
from webhooks.k8s.selectors import selector_problems


class ConfigError(ValueError):
    """The configuration cannot be used; the message starts with the offending key path."""


def camel(name: str) -> str:
    """``not_ready_seconds`` → ``notReadySeconds``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """Whether a plugin runs in the full chain, its settings, and what its answers do.

    ``action`` and ``action_overrides`` decide what a violation does (see
    :mod:`webhooks.core.policy`); ``mutation`` whether a change is applied or only recorded.
    """

    enabled: bool
    settings: Any
    action: Action = "enforce"
    action_overrides: tuple[ActionOverride, ...] = ()
    mutation: Mutation = "apply"


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
    exceptions: tuple[PolicyException, ...] = ()

    def settings(self, name: str) -> Any:
        """The settings of plugin ``name``."""
        return self.plugins[name].settings

    def enforcing(self) -> Config:
        """This config with every action ``enforce`` and no overrides.

        Why: a pipeline that gates on the final policy (``check --enforce-all``) must fail
        on what warn and audit let through today.
        """
        plugins = {
            name: dataclasses.replace(p, action=ENFORCE, action_overrides=())
            for name, p in self.plugins.items()
        }
        return dataclasses.replace(self, plugins=plugins)

    def lookups(self, registry: Registry) -> frozenset[str]:
        """The cluster resources the enabled plugins' settings need cached (plurals).

        Why from the config: a DeviceClass or ResourceClaim cache costs memory and RBAC, so
        the server keeps one only when some enabled setting reads those objects.
        """
        needed: set[str] = set()
        for plugin in self.chain(registry):
            if plugin.lookups is not None:
                needed |= plugin.lookups(self.plugins[plugin.name].settings)
        return frozenset(needed)

    def chain(self, registry: Registry, only: str | None = None) -> list[Plugin]:
        """The plugins to run, in chain order: the enabled ones, or just ``only``.

        Why ``only`` ignores ``enabled``: ``/mutate/<plugin>`` and ``review --plugin`` name a
        plugin explicitly, which is an instruction to run it.
        """
        if only is not None:
            return [registry.get(only)]
        return [p for p in registry if self.plugins[p.name].enabled]


#: Integer settings are int64s upstream (``--default-not-ready-toleration-seconds``), and an
#: integer a setting writes into an object must fit the API's int64 fields.
INT64 = 1 << 63


def _convert(value: Any, hint: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin is Literal:
        if value not in args:
            allowed = ", ".join(show(a) for a in args)
            raise ConfigError(f"{key}: must be one of {allowed}, got {show(value)}")
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
            raise ConfigError(f"{key}: must be true or false, got {show(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: must be an integer, got {show(value)}")
        if not -INT64 <= value < INT64:
            raise ConfigError(f"{key}: must fit a 64-bit integer, got {show(value)}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: must be a number, got {show(value)}")
        if not math.isfinite(value):
            raise ConfigError(f"{key}: must be a finite number, got {show(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: must be a string, got {show(value)}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise ConfigError(f"{key}: must be a list, got {show(value)}")
        item = args[0] if args else Any
        return tuple(_convert(v, item, f"{key}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping) or hint is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: must be a mapping, got {show(value)}")
        kt, vt = args if args else (Any, Any)
        return {
            _convert(k, kt, f"{key}"): _convert(v, vt, f"{key}.{show_key(k)}")
            for k, v in value.items()
        }
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
        raise ConfigError(f"{key}: must be a mapping, got {show(data)}")
    hints = typing.get_type_hints(cls)
    # A field the constructor does not take is derived from the others, not a setting.
    fields = {camel(f.name): f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for name, value in data.items():
        if name not in fields:
            known = ", ".join(sorted([*fields, *also])) or "none"
            raise ConfigError(f"{key}.{show_key(name)}: unknown key (known keys: {known})")
        f = fields[name]
        kwargs[f.name] = _convert(value, hints[f.name], f"{key}.{name}")
    try:
        return cls(**kwargs)
    except ValueError as exc:
        # The settings' own checks word their messages; a bound keeps a value they quote
        # whole (upstream's wordings do) from flooding the one line.
        # A check naming an item or a nested key (``guarded[2].taintKey``) is placed under
        # its field too.
        text = clip(str(exc))
        sub, _, rest = text.partition(": ")
        if rest and sub.partition("[")[0].partition(".")[0] in fields:
            raise ConfigError(f"{key}.{sub}: {rest}") from None
        raise ConfigError(f"{key}: {text}") from None


TOP_LEVEL = ("plugins", "exceptions", "cluster")

#: Keys every plugin section may hold besides the plugin's own settings.
POLICY_KEYS = ("enabled", "action", "actionOverrides", "mutation", "exemptNamespaces")


def _moved(plugin: Plugin, key: str, section: Mapping[str, Any]) -> None:
    for name in section:
        if name in plugin.moved_settings:
            target = plugin.moved_settings[name]
            raise ConfigError(
                f"{key}.{name}: moved to plugins.{target}.{name} (the {target} plugin "
                "now holds this setting; enable it there)"
            )


def _offered(plugin: Plugin) -> dict[str, bool]:
    """Which policy keys ``plugin`` takes: actions if it can deny, a mode if it mutates."""
    return {
        "action": plugin.validate is not None,
        "actionOverrides": plugin.validate is not None,
        "mutation": plugin.mutate is not None,
        "exemptNamespaces": plugin.exempt_namespaces is not None,
    }


def _overrides(value: Any, key: str) -> tuple[ActionOverride, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"{key}: must be a list of {{namespaceSelector, action}}")
    out = []
    for index, item in enumerate(value):
        at = f"{key}[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{at}: must be a mapping with namespaceSelector and action")
        unknown = [k for k in item if k not in ("namespaceSelector", "action")]
        if unknown:
            raise ConfigError(
                f"{at}.{show_key(unknown[0])}: unknown key (known keys: action, namespaceSelector)"
            )
        if "namespaceSelector" not in item or "action" not in item:
            missing = "namespaceSelector" if "namespaceSelector" not in item else "action"
            raise ConfigError(f"{at}.{missing}: is required")
        problems = selector_problems(item["namespaceSelector"])
        if problems:
            raise ConfigError(f"{at}.namespaceSelector: {problems[0]}")
        action = _convert(item["action"], Action, f"{at}.action")
        out.append(ActionOverride(dict(item["namespaceSelector"]), action))
    return tuple(out)


def _plugin_config(
    plugin: Plugin, section: dict[str, Any], key: str
) -> tuple[PluginConfig, PolicyException | None]:
    """One plugin's section: its policy keys, then its own settings."""
    _moved(plugin, key, section)
    offered = _offered(plugin)
    for name in POLICY_KEYS[1:]:
        if name in section and not offered[name]:
            why = "it never denies" if name.startswith("action") else "it never mutates"
            if name == "exemptNamespaces":
                why = "it has no enforcement to exempt from (use exceptions)"
            raise ConfigError(f"{key}.{name}: not a setting of {plugin.name}: {why}")
    enabled = section.pop("enabled", plugin.enabled_by_default)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{key}.enabled: must be true or false, got {show(enabled)}")
    action = _convert(section.pop("action", ENFORCE), Action, f"{key}.action")
    overrides = _overrides(section.pop("actionOverrides", []), f"{key}.actionOverrides")
    mutation = _convert(section.pop("mutation", "apply"), Mutation, f"{key}.mutation")
    exempt: PolicyException | None = None
    if plugin.exempt_namespaces is not None:
        names = _convert(
            section.pop("exemptNamespaces", list(plugin.exempt_namespaces)),
            tuple[str, ...],
            f"{key}.exemptNamespaces",
        )
        if names:
            exempt = PolicyException(
                f"{plugin.name}.exemptNamespaces", (plugin.name,), names, phases=("validate",)
            )
    settings = build_settings(plugin.settings, section, key, POLICY_KEYS)
    return PluginConfig(enabled, settings, action, overrides, mutation), exempt


_EXCEPTION_KEYS = (
    "name",
    "plugins",
    "namespaces",
    "objectSelector",
    "serviceAccounts",
    "users",
    "groups",
    "expires",
)


def _strings(item: dict[str, Any], name: str, at: str) -> tuple[str, ...]:
    value = item.get(name)
    if value is None:
        return ()
    return tuple(_convert(value, tuple[str, ...], f"{at}.{name}"))


def _exception(item: Any, at: str, registry: Registry) -> PolicyException:
    if not isinstance(item, dict):
        raise ConfigError(f"{at}: must be a mapping (name, plugins and matchers)")
    unknown = [k for k in item if k not in _EXCEPTION_KEYS]
    if unknown:
        known = ", ".join(sorted(_EXCEPTION_KEYS))
        raise ConfigError(f"{at}.{show_key(unknown[0])}: unknown key (known keys: {known})")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{at}.name: is required (a non-empty string)")
    plugins = _strings(item, "plugins", at)
    if not plugins:
        raise ConfigError(f'{at}.plugins: is required (plugin names, or ["*"] for all)')
    for plugin in plugins:
        if plugin != "*" and plugin not in registry:
            known = ", ".join(registry.names)
            raise ConfigError(
                f"{at}.plugins: unknown plugin {show(plugin)} (known plugins: {known})"
            )
    selector = item.get("objectSelector")
    if selector is not None:
        problems = selector_problems(selector)
        if problems:
            raise ConfigError(f"{at}.objectSelector: {problems[0]}")
    accounts = _strings(item, "serviceAccounts", at)
    for account in accounts:
        namespace, sep, sa = account.partition(":")
        if not sep or not namespace or not sa or ":" in sa:
            raise ConfigError(f"{at}.serviceAccounts: {show(account)} must be namespace:name")
    expires = None
    if item.get("expires") is not None:
        try:
            expires = parse_expiry(item["expires"])
        except ValueError as exc:
            raise ConfigError(f"{at}.expires: {clip(str(exc))}") from None
    return PolicyException(
        name=name,
        plugins=plugins,
        namespaces=_strings(item, "namespaces", at),
        object_selector=dict(selector) if selector is not None else None,
        service_accounts=accounts,
        users=_strings(item, "users", at),
        groups=_strings(item, "groups", at),
        expires=expires,
    )


def _exceptions(data: Any, registry: Registry) -> list[PolicyException]:
    if data is None:
        return []
    if not isinstance(data, list):
        raise ConfigError(f"exceptions: must be a list, got {show(data)}")
    out: list[PolicyException] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        exception = _exception(item, f"exceptions[{index}]", registry)
        if exception.name in seen:
            raise ConfigError(f"exceptions[{index}].name: {show(exception.name)} is used twice")
        seen.add(exception.name)
        out.append(exception)
    return out


def load_config(data: Any, registry: Registry) -> Config:
    """Resolve a parsed config document (or ``None`` for all defaults) against ``registry``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"<root>: must be a mapping, got {type(data).__name__}")
    for key in data:
        if key not in TOP_LEVEL:
            raise ConfigError(f"{show_key(key)}: unknown key (known keys: {', '.join(TOP_LEVEL)})")
    plugins_data = data.get("plugins")
    plugins_data = {} if plugins_data is None else plugins_data
    if not isinstance(plugins_data, dict):
        raise ConfigError(f"plugins: must be a mapping, got {show(plugins_data)}")
    for name in plugins_data:
        if name not in registry:
            known = ", ".join(registry.names)
            raise ConfigError(f"plugins.{show_key(name)}: unknown plugin (known plugins: {known})")
    plugins: dict[str, PluginConfig] = {}
    exceptions = _exceptions(data.get("exceptions"), registry)
    for plugin in registry:
        key = f"plugins.{plugin.name}"
        section = plugins_data.get(plugin.name)
        section = {} if section is None else section
        if not isinstance(section, dict):
            raise ConfigError(f"{key}: must be a mapping, got {show(section)}")
        plugins[plugin.name], exempt = _plugin_config(plugin, dict(section), key)
        if exempt is not None:
            exceptions.append(exempt)
    cluster = build_settings(ClusterSettings, data.get("cluster"), "cluster")
    return Config(plugins=plugins, cluster=cluster, exceptions=tuple(exceptions))
