"""Upstream's validation of tolerations and taints (ValidateTolerations, validateNodeTaints).

Why in ``k8s/``: the taint-toleration-rules plugin applies them to objects, and plugins that
take tolerations in their settings (PodTolerationRestriction's defaults and whitelist) check
those settings with the same rules and the same messages; a plugin imports no other plugin.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from webhooks.k8s.fielderr import (
    Raw,
    duplicate,
    invalid,
    required,
    taint_struct,
    unsupported,
)
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.names import EMPTY_ERROR, label_value_errors, qualified_name_errors
from webhooks.k8s.tolerations import EFFECTS, EQUAL, EXISTS, FIELDS, NO_EXECUTE

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
#: The longest field a toleration may have for its errors to be kept (:func:`_well_formed_errors`):
#: the longest valid key (a 253-byte prefix, "/", a 63-byte name part) and then some.
_CACHED_FIELD_MAX = 512

#: A field error before it becomes a Violation: (dotted path, full rendered message).
FieldError = tuple[str, str]


def shown(value: Any) -> Any:
    # Scalars print as upstream prints them; containers by their JSON type name, because
    # Python's repr of a dict has no upstream counterpart.
    if isinstance(value, MAPPING):
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
    errors.append((path, invalid(path, shown(value), NOT_A_STRING_MSG)))
    return None


def _seconds_set(entry: Mapping[str, Any], at: str, errors: list[FieldError]) -> bool | None:
    """Whether ``tolerationSeconds`` is set; None when it is not a 64-bit integer."""
    value = entry.get("tolerationSeconds")
    if value is None:
        return False
    path = f"{at}.tolerationSeconds"
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append((path, invalid(path, shown(value), NOT_AN_INTEGER_MSG)))
        return None
    if not INT64_MIN <= value <= INT64_MAX:
        errors.append((path, invalid(path, shown(value), INT64_RANGE_MSG)))
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


def _operator_errors(operator: str, value: str, path: str, comparisons: bool) -> list[str]:
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


def _rule_errors(
    key: str | None,
    operator: str | None,
    value: str | None,
    effect: str | None,
    seconds: bool | None,
    at: str,
    comparisons: bool,
    errors: list[FieldError],
) -> None:
    """Upstream's rules for one toleration at ``at``, in upstream's order; a field that is
    None was malformed (already reported) and no rule reading it is checked."""
    key_path, op_path, effect_path = f"{at}.key", f"{at}.operator", f"{at}.effect"
    if key:
        errors.extend((key_path, invalid(key_path, key, m)) for m in qualified_name_errors(key))
    if key == "" and operator is not None and operator != EXISTS:
        errors.append((op_path, invalid(op_path, operator, EMPTY_KEY_MSG)))
    if seconds and effect is not None and effect != NO_EXECUTE:
        errors.append((effect_path, invalid(effect_path, effect, SECONDS_EFFECT_MSG)))
    if operator is not None and value is not None:
        found = _operator_errors(operator, value, op_path, comparisons)
        errors.extend((op_path, message) for message in found)
    if effect and effect not in EFFECTS:
        errors.append((effect_path, unsupported(effect_path, effect, EFFECTS)))


@functools.lru_cache(maxsize=4096)
def _well_formed_errors(
    key: str,
    operator: str,
    value: str,
    effect: str,
    seconds: bool,
    path: str,
    index: int,
    comparisons: bool,
) -> tuple[FieldError, ...]:
    # The errors of one well-formed toleration (every field a string or absent, seconds an
    # int64 or absent) are a pure function of these values. Why kept: the same tolerations
    # (a Namespace's defaults, not-ready and unreachable) recur on pod after pod, and the
    # key and value patterns with the messages were most of taint-toleration-rules' cost.
    # A tuple, so no caller can change the shared answer.
    errors: list[FieldError] = []
    _rule_errors(key, operator, value, effect, seconds, f"{path}[{index}]", comparisons, errors)
    return tuple(errors)


def _well_formed(key: Any, operator: Any, value: Any, effect: Any, seconds: Any) -> bool:
    """Whether :func:`_well_formed_errors` answers for these fields: each string field absent
    or a plain str no longer than :data:`_CACHED_FIELD_MAX` (what the cache holds stays a few
    KB per entry whatever a request carries), the seconds absent or an int64."""
    for field in (key, operator, value, effect):
        if field is not None and (field.__class__ is not str or len(field) > _CACHED_FIELD_MAX):
            return False
    return seconds is None or (seconds.__class__ is int and INT64_MIN <= seconds <= INT64_MAX)


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
        return [(path, invalid(path, shown(tolerations), NOT_A_TOLERATION_LIST_MSG))]
    errors: list[FieldError] = []
    for i, item in enumerate(tolerations):
        if item.__class__ is dict:
            # The common case, answered from the cache: a well-formed toleration.
            get = item.get
            key, operator, value = get("key"), get("operator"), get("value")
            effect, seconds = get("effect"), get("tolerationSeconds")
            if _well_formed(key, operator, value, effect, seconds):
                found = _well_formed_errors(
                    key or "",
                    operator or "",
                    value or "",
                    effect or "",
                    seconds is not None,
                    path,
                    i,
                    comparisons,
                )
                if found:
                    errors.extend(found)
                continue
        at = f"{path}[{i}]"
        entry = {} if item is None else item  # null decodes to the zero Toleration upstream
        if not isinstance(entry, MAPPING):
            errors.append((at, invalid(at, shown(entry), NOT_A_TOLERATION_MSG)))
            continue
        key_read = _string(entry, "key", at, errors)
        operator_read = _string(entry, "operator", at, errors)
        value_read = _string(entry, "value", at, errors)
        effect_read = _string(entry, "effect", at, errors)
        seconds_set = _seconds_set(entry, at, errors)
        _rule_errors(
            key_read, operator_read, value_read, effect_read, seconds_set, at, comparisons, errors
        )
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
        return [(path, invalid(path, shown(taints), NOT_A_TAINT_LIST_MSG))]
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(taints):
        at = f"{path}[{i}]"
        entry = {} if item is None else item
        if not isinstance(entry, MAPPING):
            errors.append((at, invalid(at, shown(entry), NOT_A_TAINT_MSG)))
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


def toleration_setting_problems(items: Any) -> list[str]:
    """Why configured tolerations would be refused: unknown fields, then ValidateTolerations.

    Upstream validates a plugin's configured tolerations with the Pod rules (spec §9), so
    the same messages are given, with paths relative to the list (``[0].operator``).
    """
    for index, item in enumerate(items):
        unknown = [n for n in item if n not in FIELDS] if isinstance(item, MAPPING) else []
        if unknown:
            return [f"[{index}]: unknown field {unknown[0]!r} (known: {', '.join(FIELDS)})"]
    return [message for _, message in toleration_errors(list(items), "")]
