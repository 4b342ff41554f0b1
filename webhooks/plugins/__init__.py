"""The plugins, and ORDER: the one place that decides the chain order.

Upstream's plugins run in upstream's relative order (``AllOrderedPlugins`` in
kube-apiserver, spec §0): PodNodeSelector, DefaultTolerationSeconds,
PodTolerationRestriction, ExtendedResourceToleration, RuntimeClass, then the validators.
The order decides results: DefaultTolerationSeconds adds its 300 s tolerations before a
namespace's shorter defaults are merged (which the merge then drops as subsumed), and
RuntimeClass's superset merge runs last among them and may absorb what came before.

The DaemonSet defaults are the exception: on an in-tree cluster the DaemonSet controller
writes them into its pods before admission, so every upstream plugin sees them (a
memory-pressure merge drops a default a broader user entry subsumes, a RuntimeClass
wildcard absorbs them all, DefaultTolerationSeconds finds not-ready and unreachable
covered). ``daemonset-tolerations`` is therefore ``precedes_admission``: the chain runs its
mutating half before every other mutator, and its change asks for no second pass.

Our other plugins go after all of upstream's mutators, where a mutating webhook stands
upstream, so they never change what an upstream plugin decides on its first run. But they
are not seen only by the validators: when a webhook changes the object, the API server runs
every in-tree plugin once more and then reinvokes the webhook if that changed anything
(``reinvocationPolicy: IfNeeded``), and :mod:`webhooks.core.chain` does the same: one more
pass when one of ours changed the object (every in-tree mutator, and each of ours whose
output something changed since its call), and no third.

* ``dedicated-nodes``: the group's toleration and node affinity come last; it adds the
  toleration only when no superset is there already, so the second pass's merges keep it,
  and PodTolerationRestriction's validating half judges it on the final object like any
  other toleration.
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
