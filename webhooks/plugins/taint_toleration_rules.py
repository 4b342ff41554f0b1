"""taint-toleration-rules: upstream ValidateTolerations and validateNodeTaints (spec §8–§10).

Why it exists: the API server applies these rules itself, but a manifest checked in CI never
reaches it, and a cluster that enables the alpha comparison operators cannot forbid them by
policy. This validator gives both the API server's own answer, every error at once, with the
exact upstream text, for Pods, every pod template and Node taints.

Two deliberate differences from the API server, both for the reader's benefit: a Node's
errors are reported under ``spec.taints[i]`` (upstream says ``metadata.taints[i]``, a quirk,
spec §10), and shapes a real API server could never decode (a toleration list that is not a
list, a key that is not a string, fractional ``tolerationSeconds``) are reported as
``Invalid value`` errors instead of failing the review: offline manifests can contain them.

Comparison operators (``comparisonOperators``, the v1.35 alpha gate
TaintTolerationComparisonOperators): when enabled, or on an UPDATE whose old pod spec already
used ``Lt``/``Gt`` (upstream's ratchet), those operators are accepted and their value must be
a decimal integer in canonical form (``0``, ``950``, ``-5``; no sign ``+``, no leading zeros,
as upstream's ``IsDecimalInteger``) within the signed 64-bit range. Those value errors are
reported on the operator path like every other toleration value error (spec §9 item 4):
``…operator: Invalid value: "0700": must be a valid decimal integer in canonical form``, or
``…: must be between -9223372036854775808 and 9223372036854775807, inclusive``. When
comparisons are allowed the Unsupported list names all four operators.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhooks.core.plugin import Context, GroupResource, Need, Plugin, Validator
from webhooks.core.result import Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.fielderr import invalid
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.podspec import POD_SPEC_PATHS, TEMPLATE_RESOURCES, PodSpecPath, dotted
from webhooks.k8s.releases import TOLERATION_COMPARISONS
from webhooks.k8s.validation import (
    COMPARISONS,
    NOT_AN_OBJECT_MSG,
    FieldError,
    shown,
    taint_errors,
    toleration_errors,
)

NODES: GroupResource = ("", "nodes")


@dataclass(frozen=True, slots=True)
class Settings:
    """``comparisonOperators`` models the v1.35 alpha gate TaintTolerationComparisonOperators.

    Off by default, as upstream: ``Lt``/``Gt`` are then Unsupported except on an UPDATE whose
    old pod spec already used them.
    """

    comparison_operators: bool = False


def _locate(
    obj: Mapping[str, Any], path: PodSpecPath
) -> tuple[Mapping[str, Any] | None, FieldError | None]:
    """Follow ``path``: the mapping there, or None and the error when a step is not an object."""
    node: Any = obj
    for depth, part in enumerate(path):
        node = node.get(part)
        if node is None:
            return None, None
        if not isinstance(node, MAPPING):
            at = dotted(path[: depth + 1])
            return None, (at, invalid(at, shown(node), NOT_AN_OBJECT_MSG))
    return node, None


def uses_comparisons(obj: Mapping[str, Any] | None, path: PodSpecPath) -> bool:
    """Whether the pod spec at ``path`` has a toleration with operator ``Lt`` or ``Gt``.

    Upstream ratchets on this: an object that already uses them stays updatable with the
    gate off, otherwise turning the gate off would freeze it.
    """
    spec = _locate(obj, path)[0] if obj is not None else None
    tolerations = spec.get("tolerations") if spec is not None else None
    if not isinstance(tolerations, list):
        return False
    return any(isinstance(t, MAPPING) and t.get("operator") in COMPARISONS for t in tolerations)


#: resource → (path of the spec, name of the list there, that list's dotted path); rendered
#: once here rather than on every review.
_WHERE: Mapping[GroupResource, tuple[PodSpecPath, str, str]] = {
    NODES: (("spec",), "taints", dotted(("spec",), "taints")),
    **{
        resource: (POD_SPEC_PATHS[kind], "tolerations", dotted(POD_SPEC_PATHS[kind], "tolerations"))
        for resource, kind in TEMPLATE_RESOURCES.items()
    },
}


def _violations(errors: list[FieldError]) -> list[Violation]:
    return [Violation(message, field, 422, "Invalid") for field, message in errors]


def validate(request: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
    """Check the object's tolerations (pod specs) or taints (Nodes); one Violation per error.

    Each Violation carries the real dotted path, so offline tools can point at the line.
    """
    settings: Settings = ctx.settings
    where = _WHERE.get(request.group_resource)
    if where is None:
        return []
    spec_path, list_name, path = where
    spec, problem = _locate(obj, spec_path)
    if spec is None:
        return _violations([problem] if problem else [])
    items = spec.get(list_name)
    if request.group_resource == NODES:
        return _violations(taint_errors(items, path))
    comparisons = settings.comparison_operators or (
        request.operation == "UPDATE" and uses_comparisons(request.old_object, spec_path)
    )
    return _violations(toleration_errors(items, path, comparisons=comparisons))


RESOURCES: frozenset[GroupResource] = frozenset(_WHERE)

#: ``comparisonOperators`` models the API server's gate; where the gate is off the API
#: server refuses ``Lt``/``Gt`` tolerations itself, whatever this setting accepts.
NEEDS = (
    Need(
        "comparisonOperators",
        TOLERATION_COMPARISONS,
        "tolerations with operator Lt or Gt",
        "the API server refuses them itself, whatever this setting accepts",
        lambda settings: bool(settings.comparison_operators),
    ),
)


PLUGIN = Plugin(
    name="taint-toleration-rules",
    summary="Rejects invalid toleration and taint keys, values, operators and effects.",
    settings=Settings,
    validate=Validator(
        validate,
        RESOURCES,
        frozenset({"CREATE", "UPDATE"}),
        # The API server has already applied these rules to the pod it passes on; only the
        # comparison operators can differ (its gate on, ``comparisonOperators`` off here).
        live_pods=(
            "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "
            "has(t.operator) && (t.operator == 'Lt' || t.operator == 'Gt'))"
        ),
    ),
    needs=NEEDS,
)
