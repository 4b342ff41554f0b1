"""Required node affinity on plain dicts: the scheduler's matching rules and the algebra of
adding a requirement to them.

``nodeSelectorTerms`` are ORed and the ``matchExpressions`` inside one term are ANDed, so a
requirement that must hold for every placement (a dedicated group's label) has to be ANDed
into *every* term: appending it to one term, or appending a new term, widens placement
instead. A null or empty term matches no node at all (upstream ``isEmptyNodeSelectorTerm``),
so adding an expression to it would widen it too; such terms are left alone.

Matching mirrors ``component-helpers/scheduling/corev1/nodeaffinity`` and apimachinery's
``labels.Requirement``: a term whose expressions do not parse (unknown operator, wrong value
count, a Gt/Lt value that is not an int64, an invalid key or value) matches nothing, and
``matchFields`` only knows ``metadata.name``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.names import is_qualified_name, is_valid_label_value

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)

NODE_NAME_FIELD = "metadata.name"

#: Path of the required node selector inside a pod spec.
REQUIRED_PATH: tuple[str, ...] = (
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
)

Term = Mapping[str, Any]
Expression = Mapping[str, Any]

_INT64_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: an optional sign and decimal digits, in range.

    Why not ``int()``: Python accepts spaces and underscores, which the scheduler does not, so
    Gt/Lt would match labels that never match on a real node.
    """
    if _INT64_RE.fullmatch(text) is None:
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def requirement(key: str, value: str) -> dict[str, Any]:
    """The expression ``key In [value]``; why a function: every caller must build it alike."""
    return {"key": key, "operator": IN, "values": [value]}


def _values(expr: Expression) -> list[str] | None:
    values = expr.get("values")
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return None
    return values


def expression_is_valid(expr: Expression) -> bool:
    """Whether ``labels.NewRequirement`` accepts the label expression (key, operator, values).

    Why it matters: the scheduler drops a whole term when one of its expressions fails to
    parse, so such a term matches no node.
    """
    key, operator, values = expr.get("key"), expr.get("operator"), _values(expr)
    if not isinstance(key, str) or not is_qualified_name(key) or values is None:
        return False
    if not all(is_valid_label_value(v) for v in values):
        return False
    if operator in (IN, NOT_IN):
        return bool(values)
    if operator in (EXISTS, DOES_NOT_EXIST):
        return not values
    if operator in (GT, LT):
        return len(values) == 1 and parse_int64(values[0]) is not None
    return False


def expression_matches(expr: Expression, labels: Mapping[str, str]) -> bool:
    """Whether a node with ``labels`` satisfies one label expression (``Requirement.Matches``).

    Why NotIn matches a missing label but Gt/Lt do not: that is the scheduler's rule, and a
    dedicated-group check that disagreed with it would deny or admit the wrong pods.
    """
    if not expression_is_valid(expr):
        return False
    key, operator, values = expr["key"], expr["operator"], _values(expr) or []
    present = key in labels
    if operator == IN:
        return present and labels[key] in values
    if operator == NOT_IN:
        return not present or labels[key] not in values
    if operator == EXISTS:
        return present
    if operator == DOES_NOT_EXIST:
        return not present
    if not present:
        return False
    actual = parse_int64(labels[key])
    if actual is None:
        return False
    bound = parse_int64(values[0])
    assert bound is not None  # checked by expression_is_valid
    return actual > bound if operator == GT else actual < bound


def _list(term: Term, name: str) -> list[Any] | None:
    value = term.get(name)
    if value is None:
        return []
    return value if isinstance(value, list) else None


def is_empty_term(term: Any) -> bool:
    """A null or empty term (no expressions, no fields) matches no node at all.

    Why a named rule: it is the one term an added requirement would *widen*.
    """
    if not isinstance(term, MAPPING):
        return term is None
    return not term.get("matchExpressions") and not term.get("matchFields")


def _field_failures(fields: list[Any], node_name: str) -> list[str]:
    selectors: list[tuple[str, str, str]] = []
    for expr in fields:
        values = _values(expr) if isinstance(expr, MAPPING) else None
        if (
            not isinstance(expr, MAPPING)
            or expr.get("operator") not in (IN, NOT_IN)
            or values is None
            or len(values) != 1
        ):
            return [f"matchFields {_shown(expr)} is not valid (In or NotIn with one value)"]
        key = expr.get("key")
        selectors.append((key if isinstance(key, str) else "", str(expr["operator"]), values[0]))
    if not node_name:
        return []  # upstream only applies field selectors when the node has fields
    known = {NODE_NAME_FIELD: node_name}
    return [
        f"matchFields {key} {operator} [{value}]: "
        + (f"the node is named {node_name}" if key in known else f"{key} is not a node field")
        for key, operator, value in selectors
        if (known.get(key, "") == value) != (operator == IN)
    ]


def _shown(expr: Any) -> str:
    return describe_expression(expr) if isinstance(expr, MAPPING) else repr(expr)


def _why_not(expr: Expression, labels: Mapping[str, str]) -> str:
    key = expr["key"]
    if key not in labels:
        return f"the node has no label {key}"
    if expr["operator"] in (GT, LT) and parse_int64(labels[key]) is None:
        return f"the node's {key}={labels[key]} is not an integer"
    return f"the node has {key}={labels[key]}"


#: Why an empty term fails, as :func:`term_failures` says it.
EMPTY_TERM = "the term is empty, and an empty term matches no node"


def term_failures(term: Any, labels: Mapping[str, str], node_name: str = "") -> list[str]:
    """Why one nodeSelectorTerm does not match a node: one reason per unmet requirement.

    Empty when the term matches. Why reasons and not a yes/no: ``explain`` must say which
    expression failed; :func:`term_matches` is defined by this function, so they never
    disagree. A term with a malformed expression reports only that: upstream records a
    parse error for the whole term and skips it, whatever the node's labels.
    """
    if is_empty_term(term) or not isinstance(term, MAPPING):
        return [EMPTY_TERM]
    expressions, fields = _list(term, "matchExpressions"), _list(term, "matchFields")
    if expressions is None or fields is None:
        return ["the term cannot be read: matchExpressions and matchFields must be lists"]
    invalid = [e for e in expressions if not (isinstance(e, MAPPING) and expression_is_valid(e))]
    if invalid:
        return [
            f"{_shown(e)} is not a valid requirement, so the whole term matches no node"
            for e in invalid
        ]
    failures = _field_failures(fields, node_name)
    failures.extend(
        f"{describe_expression(e)}: {_why_not(e, labels)}"
        for e in expressions
        if not expression_matches(e, labels)
    )
    return failures


def term_matches(term: Any, labels: Mapping[str, str], node_name: str = "") -> bool:
    """Whether one nodeSelectorTerm matches a node: all its expressions and fields hold.

    Why a term with one malformed expression matches nothing: upstream records a parse error
    for the whole term and skips it.
    """
    return not term_failures(term, labels, node_name)


def required_terms(spec: Mapping[str, Any]) -> list[Any] | None:
    """The pod spec's required ``nodeSelectorTerms``, or ``None`` when there is no required
    node affinity at all.

    Why the distinction: no required affinity allows every node, while a required affinity
    with no terms allows none.
    """
    node: Any = spec
    for part in REQUIRED_PATH:
        node = node.get(part) if isinstance(node, MAPPING) else None
        if node is None:
            return None
    if not isinstance(node, MAPPING):
        return []
    terms = node.get("nodeSelectorTerms")
    return terms if isinstance(terms, list) else []


def selector_failures(node_labels: Mapping[str, str], pod_spec: Mapping[str, Any]) -> list[str]:
    """The pod's nodeSelector pairs a node does not carry, each with what the node has.

    Why one reason per pair: an operator fixing a label needs to know every missing one.
    """
    selector = pod_spec.get("nodeSelector")
    if not isinstance(selector, MAPPING):
        return []
    return [
        f"nodeSelector {key}={value}: "
        + (
            f"the node has {key}={node_labels[key]}"
            if key in node_labels
            else f"the node has no label {key}"
        )
        for key, value in selector.items()
        if node_labels.get(key) != value
    ]


def affinity_failures(
    node_labels: Mapping[str, str], pod_spec: Mapping[str, Any], node_name: str = ""
) -> list[list[str]] | None:
    """Per required nodeSelectorTerm, why it does not match (``[]`` for a term that does).

    ``None`` when the pod has no required node affinity. Why per term: terms are ORed, so
    the node fits when any list is empty, and the shortest list is what is closest to fit.
    """
    terms = required_terms(pod_spec)
    if terms is None:
        return None
    return [term_failures(t, node_labels, node_name) for t in terms]


def term_conflict(term: Any, key: str, value: str) -> tuple[int, Expression] | None:
    """The first expression of ``term`` that no node labelled ``key=value`` can satisfy.

    Returns (index in matchExpressions, expression), or ``None`` when such a node can match
    (other labels being free). In/NotIn/Exists/DoesNotExist decide directly; Gt/Lt need
    ``value`` to be an integer on the right side of the bound. Why only expressions on
    ``key``: the question is whether the term can ever land on the group's nodes at all.
    """
    expressions = _list(term, "matchExpressions") if isinstance(term, MAPPING) else None
    for index, expr in enumerate(expressions or []):
        if not isinstance(expr, MAPPING) or expr.get("key") != key:
            continue
        if expr.get("operator") not in OPERATORS:
            continue  # unknown operators are API validation's to reject, not a conflict
        if not expression_matches(expr, {key: value}):
            return index, expr
    return None


def term_has(term: Any, key: str, value: str) -> bool:
    """Whether ``term`` already requires ``key`` to equal ``value`` (``key In [value]``).

    Why a set comparison: ``In [g, g]`` says the same thing, and adding the requirement again
    would only grow the pod; a wider ``In [g, h]`` still needs narrowing.
    """
    expressions = _list(term, "matchExpressions") if isinstance(term, MAPPING) else None
    for expr in expressions or []:
        if (
            isinstance(expr, MAPPING)
            and expr.get("key") == key
            and expr.get("operator") == IN
            and isinstance(expr.get("values"), list)
            and set(expr["values"]) == {value}
        ):
            return True
    return False


def with_requirement(term: Any, key: str, value: str) -> dict[str, Any] | None:
    """``term`` with ``key In [value]`` ANDed into its expressions, or ``None`` to leave it.

    Why ``None`` so often: a term that already has it needs nothing, an empty term matches
    nothing and would be widened, and a term whose shape cannot be read must not be "fixed".
    The original expressions keep their order and the new one comes last, so a patch appends.
    """
    if not isinstance(term, MAPPING) or is_empty_term(term) or term_has(term, key, value):
        return None
    expressions = _list(term, "matchExpressions")
    if expressions is None:
        return None
    return {**term, "matchExpressions": [*expressions, requirement(key, value)]}


def and_requirement(
    node_selector: Mapping[str, Any] | None, key: str, value: str
) -> dict[str, Any]:
    """The required NodeSelector with ``key In [value]`` ANDed into every term.

    With no required affinity the result has one term holding just the requirement. Why not
    append a term: terms are ORed, so a new term would *add* nodes instead of restricting.
    """
    if node_selector is None:
        return {"nodeSelectorTerms": [{"matchExpressions": [requirement(key, value)]}]}
    terms = node_selector.get("nodeSelectorTerms")
    if not isinstance(terms, list):
        return dict(node_selector)
    new_terms = []
    for term in terms:
        changed = with_requirement(term, key, value)
        new_terms.append(term if changed is None else changed)
    return {**node_selector, "nodeSelectorTerms": new_terms}


def describe_expression(expr: Expression) -> str:
    """One-line form such as ``dedicated In [gpu-team]`` or ``gpu DoesNotExist``.

    Why: denials and warnings quote the user's own expression so it can be found in the YAML.
    """
    key, operator = expr.get("key", ""), expr.get("operator", "")
    values = expr.get("values")
    text = f"{key} {operator}"
    if isinstance(values, list) and values:
        shown = ", ".join(str(v) for v in values)
        text += f" {values[0]}" if operator in (GT, LT) and len(values) == 1 else f" [{shown}]"
    return text
