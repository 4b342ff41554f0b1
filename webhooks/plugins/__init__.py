"""The plugins, and ORDER: the one place that decides the chain order.

Upstream's plugins run in upstream's relative order (``AllOrderedPlugins`` in
kube-apiserver, spec §0): PodNodeSelector, DefaultTolerationSeconds,
PodTolerationRestriction, ExtendedResourceToleration, RuntimeClass, then the validators.
The order decides results: DefaultTolerationSeconds adds its 300 s tolerations before a
namespace's shorter defaults are merged (which the merge then drops as subsumed), and
RuntimeClass's superset merge runs last among them and may absorb what came before.

Every mutator runs once, as every in-tree plugin does (see :mod:`webhooks.core.chain`).

Our own plugins go after all of upstream's mutators, where they cannot change an upstream
plugin's result; whatever they add is seen only by the validators, as a mutating webhook's
change is seen upstream:

* ``daemonset-tolerations``: on a DaemonSet's pod the DaemonSet controller has already
  written these defaults before admission, so there it only confirms them (the identical
  entries are rewritten in place, and DefaultTolerationSeconds found not-ready and
  unreachable covered). On a pod that lacks them, what it appends comes after upstream's
  entries and is not merged by RuntimeClass, which ran before it.
* ``dedicated-nodes``: the group's toleration and node affinity come last, so a
  RuntimeClass or namespace default never absorbs them, and PodTolerationRestriction's
  validating half judges them on the final object like any other toleration.
* The pure validators last; they read the final object and change nothing.
"""

from __future__ import annotations

from webhooks.core.plugin import Plugin, Registry
from webhooks.plugins import (
    anti_affinity_topology,
    daemonset_tolerations,
    dedicated_nodes,
    default_toleration_seconds,
    extended_resource_toleration,
    pod_node_selector,
    pod_toleration_restriction,
    runtime_class,
    taint_toleration_rules,
)

ORDER: tuple[Plugin, ...] = (
    pod_node_selector.PLUGIN,
    default_toleration_seconds.PLUGIN,
    pod_toleration_restriction.PLUGIN,
    extended_resource_toleration.PLUGIN,
    runtime_class.PLUGIN,
    daemonset_tolerations.PLUGIN,
    dedicated_nodes.PLUGIN,
    taint_toleration_rules.PLUGIN,
    anti_affinity_topology.PLUGIN,
)

REGISTRY = Registry(ORDER)
