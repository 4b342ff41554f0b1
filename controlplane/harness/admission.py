"""The three admission modes, and our config file translated into the in-tree plugins' terms.

``make cluster`` and the tests build API servers through this one module, so what a person
tries by hand is what the suite checks:

* ``in-tree``: upstream's six plugins that ours reimplement, each on exactly when ours is
  enabled in the config and configured from it (PodNodeSelector's and
  PodTolerationRestriction's AdmissionConfiguration, DefaultTolerationSeconds' flags). A
  setting of ours with no in-tree counterpart is refused by its key path: silently dropping
  it would make the "reference" run a different policy.
* ``webhooks``: all six in-tree plugins off; ``serve`` with the config runs them instead.
* ``managed``: DefaultTolerationSeconds, ExtendedResourceToleration and RuntimeClass on in
  tree with upstream's defaults (as EKS runs them), the other three off; ``serve`` runs
  behind them with the config, as it would on such a cluster.

"Off" is always explicit (``--disable-admission-plugins``): DefaultTolerationSeconds and
RuntimeClass are on by default in kube-apiserver (``DefaultOffAdmissionPlugins`` in
``pkg/kubeapiserver/options/plugins.go``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from controlplane.release import RELEASE
from webhooks.core.config import Config, camel, load_config
from webhooks.k8s.releases import TOLERATION_COMPARISONS
from webhooks.plugins import REGISTRY

Mode = Literal["in-tree", "webhooks", "managed"]
MODES: tuple[str, ...] = get_args(Mode)

#: Our plugin name -> the in-tree admission plugin it reimplements.
TWINS: dict[str, str] = {p.name: p.upstream for p in REGISTRY if p.upstream}
#: What a managed cluster (EKS) runs in tree, in upstream's defaults.
MANAGED_IN_TREE = ("DefaultTolerationSeconds", "ExtendedResourceToleration", "RuntimeClass")

#: Settings that have an in-tree counterpart (the rest must keep their defaults).
_TRANSLATED: dict[str, frozenset[str]] = {
    "pod-node-selector": frozenset({"cluster_default_node_selector", "node_selector_whitelist"}),
    "default-toleration-seconds": frozenset({"not_ready_seconds", "unreachable_seconds"}),
    "pod-toleration-restriction": frozenset({"default_tolerations", "tolerations_whitelist"}),
    "taint-toleration-rules": frozenset({"comparison_operators"}),
}
#: Plugins that are not admission plugins upstream but always happen there.
_ALWAYS_ON = {
    "daemonset-tolerations": "the DaemonSet controller always adds these tolerations",
    "taint-toleration-rules": "the API server always validates tolerations and taints",
}


class Untranslatable(ValueError):
    """The config asks for something the in-tree plugins cannot do; names every such key."""


@dataclass(frozen=True, slots=True)
class AdmissionSetup:
    """What an API server is started with: plugins on and off, their configuration, flags."""

    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    configuration: Mapping[str, Any] | None = None
    flags: tuple[str, ...] = ()


def _feature_flags(config: Config) -> tuple[str, ...]:
    """Feature gates the config needs in every mode (the API server validates on its own)."""
    rules = config.plugins["taint-toleration-rules"]
    if rules.enabled and rules.settings.comparison_operators:
        if TOLERATION_COMPARISONS not in RELEASE.gates:
            raise Untranslatable(
                "plugins.taint-toleration-rules.comparisonOperators: "
                f"{TOLERATION_COMPARISONS} is {RELEASE.gate_state(TOLERATION_COMPARISONS)}"
            )
        return (f"--feature-gates={TOLERATION_COMPARISONS}=true",)
    return ()


def untranslatable(config: Config) -> list[str]:
    """Every key of ``config`` that has no in-tree counterpart, as ``key: why``.

    A disabled plugin's settings do nothing in either world and are not reported;
    ``exemptNamespaces`` only qualifies enforcement, which is reported on its own.
    """
    defaults = load_config(None, REGISTRY)
    problems: list[str] = []
    for plugin in REGISTRY:
        ours = config.plugins[plugin.name]
        key = f"plugins.{plugin.name}"
        if plugin.name in _ALWAYS_ON:
            if not ours.enabled:
                problems.append(f"{key}.enabled: false (in tree {_ALWAYS_ON[plugin.name]})")
        elif plugin.name not in TWINS:
            if ours.enabled:
                problems.append(f"{key}: no in-tree plugin does this")
            continue
        if not ours.enabled:
            continue
        if ours.action != "enforce":
            problems.append(f"{key}.action: {ours.action} (in-tree plugins only enforce)")
        if ours.action_overrides:
            problems.append(f"{key}.actionOverrides: in-tree plugins only enforce")
        if ours.mutation != "apply":
            problems.append(f"{key}.mutation: {ours.mutation} (in-tree plugins always apply)")
        default = defaults.plugins[plugin.name].settings
        for field in dataclasses.fields(ours.settings):
            if field.name in _TRANSLATED.get(plugin.name, ()):
                continue
            value = getattr(ours.settings, field.name)
            if value != getattr(default, field.name):
                problems.append(f"{key}.{camel(field.name)}: {value!r} (no in-tree setting)")
    for index, exception in enumerate(config.exceptions):
        if not exception.name.endswith(".exemptNamespaces"):
            problems.append(f"exceptions[{index}] ({exception.name}): in-tree plugins have none")
    return problems


def in_tree(config: Config) -> AdmissionSetup:
    """The in-tree plugins configured as ``config`` configures ours; :class:`Untranslatable`.

    PodNodeSelector reads ``podNodeSelectorPluginConfig`` (``clusterDefaultNodeSelector``
    plus one entry per namespace whitelist); PodTolerationRestriction reads
    ``podtolerationrestriction.admission.k8s.io/v1alpha1`` ``Configuration``
    (``default``, ``whitelist``); DefaultTolerationSeconds takes two flags.
    """
    problems = untranslatable(config)
    if problems:
        raise Untranslatable("no in-tree counterpart: " + "; ".join(problems))
    enable = [TWINS[name] for name in TWINS if config.plugins[name].enabled]
    disable = [TWINS[name] for name in TWINS if not config.plugins[name].enabled]
    plugins: list[dict[str, Any]] = []
    flags = list(_feature_flags(config))
    if config.plugins["pod-node-selector"].enabled:
        pns = config.settings("pod-node-selector")
        selectors = {"clusterDefaultNodeSelector": pns.cluster_default_node_selector}
        selectors.update(pns.node_selector_whitelist)
        plugins.append(
            {"name": "PodNodeSelector", "configuration": {"podNodeSelectorPluginConfig": selectors}}
        )
    if config.plugins["pod-toleration-restriction"].enabled:
        ptr = config.settings("pod-toleration-restriction")
        restriction: dict[str, Any] = {
            "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
            "kind": "Configuration",
        }
        if ptr.default_tolerations:
            restriction["default"] = [dict(t) for t in ptr.default_tolerations]
        if ptr.tolerations_whitelist:
            restriction["whitelist"] = [dict(t) for t in ptr.tolerations_whitelist]
        plugins.append({"name": "PodTolerationRestriction", "configuration": restriction})
    if config.plugins["default-toleration-seconds"].enabled:
        dts = config.settings("default-toleration-seconds")
        flags += [
            f"--default-not-ready-toleration-seconds={dts.not_ready_seconds}",
            f"--default-unreachable-toleration-seconds={dts.unreachable_seconds}",
        ]
    configuration = (
        {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AdmissionConfiguration",
            "plugins": plugins,
        }
        if plugins
        else None
    )
    return AdmissionSetup(tuple(enable), tuple(disable), configuration, tuple(flags))


def webhooks(config: Config) -> AdmissionSetup:
    """All six in-tree twins off; ``serve`` does their work."""
    return AdmissionSetup(disable=tuple(TWINS.values()), flags=_feature_flags(config))


def managed(config: Config) -> AdmissionSetup:
    """A managed cluster's in-tree plugins (upstream defaults) with ``serve`` behind them."""
    return AdmissionSetup(
        enable=MANAGED_IN_TREE,
        disable=tuple(name for name in TWINS.values() if name not in MANAGED_IN_TREE),
        flags=_feature_flags(config),
    )


def setup_for(mode: str, config: Config) -> AdmissionSetup:
    """The API server set-up of ``mode`` for ``config``."""
    builders = {"in-tree": in_tree, "webhooks": webhooks, "managed": managed}
    if mode not in builders:
        raise ValueError(f"unknown mode {mode!r} (modes: {', '.join(MODES)})")
    return builders[mode](config)


def read(path: Path | None) -> Config:
    """Our config file (``None``: the built-in defaults), read as ``serve`` reads it."""
    from webhooks.configfile import read_config

    return read_config(path)


def webhook_serving_config(path: Path | None, kubeconfig: Path) -> dict[str, Any]:
    """``path``'s document with its cluster source pointed at the harness's API server.

    ``serve`` reads Namespaces and RuntimeClasses through the cluster source; on a laptop
    ``auto`` finds no in-cluster account, so the harness names the kubeconfig it wrote.
    """
    import yaml

    data: dict[str, Any] = {}
    if path is not None:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    cluster = dict(data.get("cluster") or {})
    cluster.update({"source": "kubeconfig", "kubeconfig": str(kubeconfig)})
    cluster.pop("context", None)
    return {**data, "cluster": cluster}
