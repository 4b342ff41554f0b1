"""The plugins, and ORDER: the one place that decides the chain order.

Order follows the in-tree chain (spec §0): namespace-driven placement first, then the
default tolerations, extended-resource tolerations, RuntimeClass (whose superset merge may
absorb what came before), the DaemonSet defaults, and the pure validators last.
"""

from __future__ import annotations

from webhooks.core.plugin import Plugin, Registry
from webhooks.plugins import (
    anti_affinity_topology,
    daemonset_tolerations,
    dedicated_nodes,
    default_toleration_seconds,
    extended_resource_toleration,
    runtime_class,
    taint_toleration_rules,
)

ORDER: tuple[Plugin, ...] = (
    dedicated_nodes.PLUGIN,
    default_toleration_seconds.PLUGIN,
    extended_resource_toleration.PLUGIN,
    runtime_class.PLUGIN,
    daemonset_tolerations.PLUGIN,
    taint_toleration_rules.PLUGIN,
    anti_affinity_topology.PLUGIN,
)

REGISTRY = Registry(ORDER)
