"""daemonset-tolerations as JSONPatch mutations of DaemonSet templates and DaemonSet pods (spec §4).

How: the six defaults (plus network-unavailable for a host-network pod spec) go through
AddOrUpdateTolerationInPodSpec (§1b) in upstream's order: an entry with a default's
identity loses its ``tolerationSeconds`` in place, and the defaults that are missing are
appended in order. Pods get it when their controller owner reference is an ``apps``
DaemonSet, DaemonSets in their template, unless the template already tolerates a missing
default more broadly (a §1c superset), as the plugin leaves such a template as written.
Nothing it reads is out of a policy's reach.
"""

from __future__ import annotations

from webhooks.export import cel
from webhooks.export.model import EXACT, Mutation, Translation
from webhooks.plugins.daemonset_tolerations import (
    DEFAULT_TAINTS,
    NETWORK_UNAVAILABLE,
    PLUGIN,
    Settings,
)

NAME = PLUGIN.name

#: Whether a pod's controller is an ``apps`` DaemonSet (``controlled_by_daemonset``).
CONTROLLED_BY_DAEMONSET = (
    "object.metadata.?ownerReferences.orValue([]).exists(r, r.?controller.orValue(false)"
    " && r.kind == 'DaemonSet' && r.apiVersion.startsWith('apps/'))"
)


def _defaults(spec: str) -> str:
    """The defaults for the pod spec at CEL path ``spec``, in upstream order."""
    fixed = cel.tolerations(
        {"key": key, "operator": "Exists", "effect": effect} for key, effect in DEFAULT_TAINTS
    )
    network = cel.toleration(
        {"key": NETWORK_UNAVAILABLE, "operator": "Exists", "effect": "NoSchedule"}
    )
    return f"{fixed} + ({spec}.?hostNetwork.orValue(false) ? [{network}] : [])"


def _mutation(target: str, spec: str, path: str, guard: str) -> Mutation:
    """The mutation for the pod spec at CEL ``spec`` and JSON pointer ``path``."""
    prefix = "dsPod" if target == "pods" else "dsTemplate"
    tolerations, defaults = f"variables.{prefix}Tolerations", f"variables.{prefix}Defaults"
    variables = (
        (f"{prefix}Tolerations", f"{spec}.?tolerations.orValue([])"),
        (f"{prefix}Defaults", _defaults(spec)),
        (
            f"{prefix}Missing",
            f"{defaults}.filter(d, !{tolerations}.exists(t, {cel.identity_equal('t', 'd')}))",
        ),
    )
    rewrite = (
        f"{tolerations}.transformList(i, e, has({tolerations}[i].tolerationSeconds)"
        f" && {defaults}.exists(d, {cel.identity_equal(f'{tolerations}[i]', 'd')}),"
        f" JSONPatch{{op: 'remove', path: '{path}/' + string(i) + '/tolerationSeconds'}})"
    )
    missing = f"variables.{prefix}Missing"
    append = cel.append(path, f"has({spec}.tolerations)", missing)
    expression = f"{guard} ? {rewrite} + {append} : []"
    return Mutation(target, frozenset({"CREATE", "UPDATE"}), expression, variables)  # type: ignore[arg-type]


def translate(settings: Settings) -> Translation:
    """Both mutations; there are no settings, and the plugin is exact."""
    pods = _mutation("pods", "object.spec", "/spec/tolerations", CONTROLLED_BY_DAEMONSET)
    # A template that already tolerates a missing default more broadly is left as written.
    broader = cel.superset("t", "d")
    templates = _mutation(
        "daemonsets",
        "object.spec.template.spec",
        "/spec/template/spec/tolerations",
        "!variables.dsTemplateMissing.exists(d, variables.dsTemplateTolerations"
        f".exists(t, {broader}))",
    )
    return Translation(NAME, mutations=(pods, templates), mutate=EXACT)
