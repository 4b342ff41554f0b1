"""One translator per plugin: ``translate(settings) -> Translation``, keyed by plugin name.

Why a table: the assembler walks the registry in chain order and asks each enabled plugin's
translator, so a plugin without one is reported as not exported rather than forgotten.
Translators import their plugin's ``Settings`` and public constants (names, upstream
messages, default tolerations), never its functions, and no other translator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from webhooks.export.model import Translation
from webhooks.export.translators import (
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

Translator = Callable[[Any], Translation]

TRANSLATORS: Mapping[str, Translator] = {
    "pod-node-selector": pod_node_selector.translate,
    "default-toleration-seconds": default_toleration_seconds.translate,
    "pod-toleration-restriction": pod_toleration_restriction.translate,
    "extended-resource-toleration": extended_resource_toleration.translate,
    "runtime-class": runtime_class.translate,
    "daemonset-tolerations": daemonset_tolerations.translate,
    "dedicated-nodes": dedicated_nodes.translate,
    "taint-toleration-rules": taint_toleration_rules.translate,
    "anti-affinity-topology": anti_affinity_topology.translate,
}
