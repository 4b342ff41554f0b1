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

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhooks.core.plugin import RESOURCE_KINDS, Context, GroupResource, Half, Plugin
from webhooks.core.result import Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.fielderr import (
    Raw,
    duplicate,
    invalid,
    required,
    taint_struct,
    unsupported,
)
from webhooks.k8s.names import EMPTY_ERROR, label_value_errors, qualified_name_errors
from webhooks.k8s.podspec import POD_SPEC_PATHS, PodSpecPath, dotted
from webhooks.k8s.tolerations import EFFECTS, EQUAL, EXISTS, NO_EXECUTE

NODE = "Node"
LESS_THAN = "Lt"
GREATER_THAN = "Gt"
COMPARISONS = (LESS_THAN, GREATER_THAN)
OPERATORS = (EQUAL, EXISTS)

# --- upstream messages (spec §9, §10) -------------------------------------------------------
EMPTY_KEY_MSG = (
    'operator must be Exists when `key` is empty, which means "match all values and all keys"'
)
SECONDS_EFFECT_MSG = "effect must be 'NoExecute' when `tolerationSeconds` is set"
EXISTS_VALUE_MSG = "value must be empty when `operator` is 'Exists'"
DUPLICATE_TAINT_MSG = "taints must be unique by key and effect pair"

# --- comparison-operator value messages (upstream IsDecimalInteger + an int64 range) --------
DECIMAL_INTEGER_MSG = "must be a valid decimal integer in canonical form"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT64_RANGE_MSG = f"must be between {INT64_MIN} and {INT64_MAX}, inclusive"

# --- shapes no API server could decode ------------------------------------------------------
NOT_AN_OBJECT_MSG = "must be an object"
NOT_A_STRING_MSG = "must be a string"
NOT_AN_INTEGER_MSG = "must be an integer"
NOT_A_TOLERATION_LIST_MSG = "must be a list of tolerations"
NOT_A_TOLERATION_MSG = "must be a toleration object"
NOT_A_TAINT_LIST_MSG = "must be a list of taints"
NOT_A_TAINT_MSG = "must be a taint object"

_CANONICAL_INTEGER_RE = re.compile("0|-?[1-9][0-9]*")
_INT64_DIGITS = 19
_PRINTABLE_BITS = 4096

#: A field error before it becomes a Violation: (dotted path, full rendered message).
FieldError = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Settings:
    """``comparisonOperators`` models the v1.35 alpha gate TaintTolerationComparisonOperators.

    Off by default, as upstream: ``Lt``/``Gt`` are then Unsupported except on an UPDATE whose
    old pod spec already used them.
    """

    comparison_operators: bool = False


def _shown(value: Any) -> Any:
    # Scalars print as upstream prints them; containers by their JSON type name, because
    # Python's repr of a dict has no upstream counterpart.
    if isinstance(value, Mapping):
        return Raw("object")
    if isinstance(value, list | tuple):
        return Raw("array")
    if isinstance(value, int) and value.bit_length() > _PRINTABLE_BITS:
        return Raw("integer")  # str() refuses ints past ~4300 digits; a YAML file can hold one
    return value


def _string(entry: Mapping[str, Any], name: str, at: str, errors: list[FieldError]) -> str | None:
    """The string field ``name`` ("" when absent or null, Go's zero value); None when malformed."""
    value = entry.get(name)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    path = f"{at}.{name}"
    errors.append((path, invalid(path, _shown(value), NOT_A_STRING_MSG)))
    return None


def _seconds_set(entry: Mapping[str, Any], at: str, errors: list[FieldError]) -> bool | None:
    """Whether ``tolerationSeconds`` is set; None when it is not a 64-bit integer."""
    value = entry.get("tolerationSeconds")
    if value is None:
        return False
    path = f"{at}.tolerationSeconds"
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append((path, invalid(path, _shown(value), NOT_AN_INTEGER_MSG)))
        return None
    if not INT64_MIN <= value <= INT64_MAX:
        errors.append((path, invalid(path, _shown(value), INT64_RANGE_MSG)))
        return None
    return True


def comparison_value_errors(value: str) -> list[str]:
    """Messages for a ``Lt``/``Gt`` toleration value; empty when it is a usable integer.

    The scheduler compares such values numerically with the taint's, so anything it could
    not parse (or would read ambiguously, like ``0700``) must be refused at admission.
    """
    if not value:
        return [EMPTY_ERROR]
    if _CANONICAL_INTEGER_RE.fullmatch(value) is None:
        return [DECIMAL_INTEGER_MSG]
    digits = len(value) - value.startswith("-")
    # Length first: int() refuses very long digit strings, and they are out of range anyway.
    if digits > _INT64_DIGITS or not INT64_MIN <= int(value) <= INT64_MAX:
        return [INT64_RANGE_MSG]
    return []


def _operator_errors(
    entry: Mapping[str, Any], operator: str, value: str, path: str, comparisons: bool
) -> list[str]:
    # Spec §9 item 4: every value problem is reported on the operator path.
    if operator in ("", EQUAL):
        errs = label_value_errors(value)
        return [invalid(path, value, ";".join(errs))] if errs else []
    if operator == EXISTS:
        # Upstream printed the whole toleration struct here until v1.32 and prints only the
        # value since; we follow current releases.
        return [invalid(path, value, EXISTS_VALUE_MSG)] if value else []
    if comparisons and operator in COMPARISONS:
        errs = comparison_value_errors(value)
        return [invalid(path, value, ";".join(errs))] if errs else []
    supported = OPERATORS + COMPARISONS if comparisons else OPERATORS
    return [unsupported(path, operator, supported)]


def toleration_errors(
    tolerations: Any, path: str, *, comparisons: bool = False
) -> list[FieldError]:
    """Upstream ValidateTolerations (spec §9) over a toleration list found at ``path``.

    Every applicable error is reported, in upstream's order per toleration, so one answer
    lists everything to fix. A rule is checked only when the fields it reads are well-formed;
    malformed ones are reported once instead of cascading into misleading rule errors.
    """
    if tolerations is None:
        return []
    if not isinstance(tolerations, list):
        return [(path, invalid(path, _shown(tolerations), NOT_A_TOLERATION_LIST_MSG))]
    errors: list[FieldError] = []
    for i, item in enumerate(tolerations):
        at = f"{path}[{i}]"
        entry = {} if item is None else item  # null decodes to the zero Toleration upstream
        if not isinstance(entry, Mapping):
            errors.append((at, invalid(at, _shown(entry), NOT_A_TOLERATION_MSG)))
            continue
        key = _string(entry, "key", at, errors)
        operator = _string(entry, "operator", at, errors)
        value = _string(entry, "value", at, errors)
        effect = _string(entry, "effect", at, errors)
        seconds = _seconds_set(entry, at, errors)
        key_path, op_path, effect_path = f"{at}.key", f"{at}.operator", f"{at}.effect"
        if key:
            errors.extend((key_path, invalid(key_path, key, m)) for m in qualified_name_errors(key))
        if key == "" and operator is not None and operator != EXISTS:
            errors.append((op_path, invalid(op_path, operator, EMPTY_KEY_MSG)))
        if seconds and effect is not None and effect != NO_EXECUTE:
            errors.append((effect_path, invalid(effect_path, effect, SECONDS_EFFECT_MSG)))
        if operator is not None and value is not None:
            found = _operator_errors(entry, operator, value, op_path, comparisons)
            errors.extend((op_path, message) for message in found)
        if effect and effect not in EFFECTS:
            errors.append((effect_path, unsupported(effect_path, effect, EFFECTS)))
    return errors


def taint_errors(taints: Any, path: str) -> list[FieldError]:
    """Upstream validateNodeTaints (spec §10) over a taint list found at ``path``.

    The key is always checked (an empty one gets two messages), an empty effect is Required,
    and only the second and later taints with the same (key, effect) are duplicates: the
    scheduler keys taints by that pair, so a second value for it is meaningless.
    """
    if taints is None:
        return []
    if not isinstance(taints, list):
        return [(path, invalid(path, _shown(taints), NOT_A_TAINT_LIST_MSG))]
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(taints):
        at = f"{path}[{i}]"
        entry = {} if item is None else item
        if not isinstance(entry, Mapping):
            errors.append((at, invalid(at, _shown(entry), NOT_A_TAINT_MSG)))
            continue
        key = _string(entry, "key", at, errors)
        value = _string(entry, "value", at, errors)
        effect = _string(entry, "effect", at, errors)
        key_path, value_path, effect_path = f"{at}.key", f"{at}.value", f"{at}.effect"
        if key is not None:
            errors.extend((key_path, invalid(key_path, key, m)) for m in qualified_name_errors(key))
        if value:
            errs = label_value_errors(value)
            if errs:
                errors.append((value_path, invalid(value_path, value, ";".join(errs))))
        if effect == "":
            errors.append((effect_path, required(effect_path)))
        elif effect is not None and effect not in EFFECTS:
            errors.append((effect_path, unsupported(effect_path, effect, EFFECTS)))
        if key is None or effect is None:
            continue
        if (key, effect) in seen:
            errors.append((at, duplicate(at, taint_struct(entry), DUPLICATE_TAINT_MSG)))
        else:
            seen.add((key, effect))
    return errors


def _locate(
    obj: Mapping[str, Any], path: PodSpecPath
) -> tuple[Mapping[str, Any] | None, FieldError | None]:
    """Follow ``path``: the mapping there, or None and the error when a step is not an object."""
    node: Any = obj
    for depth, part in enumerate(path):
        node = node.get(part)
        if node is None:
            return None, None
        if not isinstance(node, Mapping):
            at = dotted(path[: depth + 1])
            return None, (at, invalid(at, _shown(node), NOT_AN_OBJECT_MSG))
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
    return any(isinstance(t, Mapping) and t.get("operator") in COMPARISONS for t in tolerations)


def _violations(errors: list[FieldError]) -> list[Violation]:
    return [Violation(message, field, 422, "Invalid") for field, message in errors]


def validate(request: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
    """Check the object's tolerations (pod specs) or taints (Nodes); one Violation per error.

    Each Violation carries the real dotted path, so offline tools can point at the line.
    """
    settings: Settings = ctx.settings
    kind = RESOURCE_KINDS.get(request.group_resource, "")
    if kind == NODE:
        spec_path: PodSpecPath = ("spec",)
        list_name = "taints"
    else:
        spec_path = POD_SPEC_PATHS.get(kind, ())
        list_name = "tolerations"
        if not spec_path:
            return []
    spec, problem = _locate(obj, spec_path)
    if spec is None:
        return _violations([problem] if problem else [])
    items = spec.get(list_name)
    path = dotted(spec_path, list_name)
    if kind == NODE:
        return _violations(taint_errors(items, path))
    comparisons = settings.comparison_operators or (
        request.operation == "UPDATE" and uses_comparisons(request.old_object, spec_path)
    )
    return _violations(toleration_errors(items, path, comparisons=comparisons))


_KINDS = {*POD_SPEC_PATHS, NODE}
RESOURCES: frozenset[GroupResource] = frozenset(
    resource for resource, kind in RESOURCE_KINDS.items() if kind in _KINDS
)

PLUGIN = Plugin(
    name="taint-toleration-rules",
    summary="Rejects invalid toleration and taint keys, values, operators and effects.",
    settings=Settings,
    validate=Half(validate, RESOURCES, frozenset({"CREATE", "UPDATE"})),
)
