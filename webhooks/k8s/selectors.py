"""metav1.LabelSelector on plain dicts: validation and matching, as apimachinery does them.

Why here and not in ``affinity``: a LabelSelector (namespace selectors, object selectors in
policy exceptions) is a different type from a NodeSelectorTerm. Its operators are only
In, NotIn, Exists and DoesNotExist; ``matchLabels`` entries are ANDed with the expressions;
and the empty selector ``{}`` matches everything (a nil one matches nothing, which config
never produces: an absent selector means "no condition").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhooks.k8s.excerpt import show, show_key
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.names import label_value_errors, qualified_name_errors

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


def selector_problems(selector: Any) -> list[str]:
    """Why ``selector`` is not a usable LabelSelector; empty when it is.

    Why checked at load: a selector that can never parse would otherwise fail (or, worse,
    match nothing) on every request, far from the config line that caused it.
    """
    if not isinstance(selector, MAPPING):
        return ["must be a mapping with matchLabels and/or matchExpressions"]
    unknown = [k for k in selector if k not in ("matchLabels", "matchExpressions")]
    if unknown:
        return [f"{unknown[0]}: unknown key (known keys: matchExpressions, matchLabels)"]
    problems: list[str] = []
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, MAPPING):
        return ["matchLabels: must be a mapping"]
    for key, value in labels.items():
        if not isinstance(key, str) or qualified_name_errors(key):
            problems.append(f"matchLabels: {show(key)} is not a valid label key")
        elif not isinstance(value, str) or label_value_errors(value):
            where = f"matchLabels.{show_key(key)}"
            problems.append(f"{where}: {show(value)} is not a valid label value")
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return [*problems, "matchExpressions: must be a list"]
    for index, expr in enumerate(expressions):
        where = f"matchExpressions[{index}]"
        if not isinstance(expr, MAPPING):
            problems.append(f"{where}: must be a mapping")
            continue
        key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or qualified_name_errors(key):
            problems.append(f"{where}.key: {show(key)} is not a valid label key")
        if operator not in OPERATORS:
            problems.append(f"{where}.operator: must be one of {', '.join(OPERATORS)}")
        elif not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            problems.append(f"{where}.values: must be a list of strings")
        elif operator in (IN, NOT_IN) and not values:
            problems.append(f"{where}.values: must be non-empty for {operator}")
        elif operator in (EXISTS, DOES_NOT_EXIST) and values:
            problems.append(f"{where}.values: must be empty for {operator}")
    return problems


@dataclass(frozen=True, slots=True)
class Selector:
    """A LabelSelector read once: its label pairs and its expressions, values as sets.

    Why: a selector in the config (an exception's ``objectSelector``, an action override's
    ``namespaceSelector``) is matched against object after object and never changes.
    """

    labels: tuple[tuple[Any, Any], ...] = ()
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()

    def matches(self, labels: Mapping[str, Any]) -> bool:
        """Whether ``labels`` satisfy the selector (see :func:`matches`)."""
        for key, value in self.labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.expressions:
            value = labels.get(key)
            present = isinstance(value, str)
            if operator == IN and not (present and value in values):
                return False
            if operator == NOT_IN and present and value in values:
                return False
            if operator == EXISTS and not present:
                return False
            if operator == DOES_NOT_EXIST and present:
                return False
        return True


def compile_selector(selector: Mapping[str, Any]) -> Selector:
    """``selector`` (checked with :func:`selector_problems`) read into a :class:`Selector`."""
    expressions = tuple(
        (expr["key"], expr["operator"], frozenset(expr.get("values") or []))
        for expr in selector.get("matchExpressions") or []
    )
    return Selector(tuple((selector.get("matchLabels") or {}).items()), expressions)


def matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether ``labels`` satisfy ``selector`` (checked with :func:`selector_problems`).

    Why NotIn matches a missing label: that is apimachinery's rule, and a policy that
    disagreed with kubectl's ``-l`` about which namespaces match would surprise its author.
    """
    return compile_selector(selector).matches(labels)
