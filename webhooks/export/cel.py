"""CEL text for the upstream rules the translators share: literals, tolerations, selectors.

Why text builders and not a CEL library: the API server is the only CEL that counts (its
libraries, its cost limits, its typing of ``object``), so the translators write expressions
for it and the control-plane suite asks it what they do. Every builder here mirrors one
helper of :mod:`webhooks.k8s` and names it in its docstring, so the two can be read side by
side.

Conventions, each forced by how the API server types admission CEL:

* Tolerations built here are maps whose values are all ``dyn(...)``: a policy variable
  cannot name the ``Object.*`` types, and a map literal must be homogeneous, so ``dyn``
  lets a string and an integer share one map (and a list of them join the pod's own).
* A field that may be absent is read with ``.?field.orValue('')``: absent and empty are the
  same to every upstream rule here (``v1.Toleration`` omits empty strings).
* Expressions do not call each other (CEL has no functions); a helper returns text that the
  caller places where the value is needed, and anything used twice becomes a variable.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from webhooks.k8s.names import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    LABEL_VALUE_MAX_LENGTH,
    LABEL_VALUE_REGEX_MSG,
    LABEL_VALUE_TOO_LONG_MSG,
    NAME_PART_EMPTY_MSG,
    NAME_PART_REGEX_MSG,
    NAME_PART_TOO_LONG_MSG,
    PREFIX_EMPTY_MSG,
    PREFIX_REGEX_MSG,
    PREFIX_TOO_LONG_MSG,
    QUALIFIED_NAME_MAX_LENGTH,
    TOO_MANY_PARTS_MSG,
)
from webhooks.k8s.podspec import POD_SPEC_PATHS, PodSpecPath
from webhooks.k8s.releases import (
    CEL_LISTS,
    CEL_OPTIONAL,
    CEL_QUANTITY,
    CEL_STRINGS,
    CEL_TWO_VARIABLE,
)

#: What a qualified name (label key, toleration key) looks like, anchored: CEL's
#: ``matches`` finds the pattern anywhere, and RE2's ``$`` is the end of the text.
QUALIFIED_NAME_RE = (
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
LABEL_VALUE_RE = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(text: str) -> str:
    """``text`` as a CEL string literal (single-quoted, escaped).

    Why our own: config values (keys, values, namespace names) end up inside expressions,
    and a quote or backslash in one must not end the literal early.
    """
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def strings(values: Iterable[str]) -> str:
    """A CEL list of string literals, in the order given."""
    return "[" + ", ".join(quote(v) for v in values) + "]"


def string_map(mapping: Mapping[str, str]) -> str:
    """A CEL map of string literals; ``{}`` when empty."""
    return "{" + ", ".join(f"{quote(k)}: {quote(v)}" for k, v in mapping.items()) + "}"


def value(item: Any) -> str:
    """A config value (string, integer, boolean, list, mapping) as a CEL literal.

    Why lists and maps become ``dyn``: see the module docstring.
    """
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, str):
        return quote(item)
    if isinstance(item, Mapping):
        return "{" + ", ".join(f"{quote(k)}: dyn({value(v)})" for k, v in item.items()) + "}"
    if isinstance(item, list | tuple):
        return "[" + ", ".join(f"dyn({value(v)})" for v in item) + "]"
    raise TypeError(f"no CEL literal for {type(item).__name__}")  # pragma: no cover


# --------------------------------------------------------------------------- tolerations

TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")


def toleration(t: Mapping[str, Any]) -> str:
    """A toleration from the config as a CEL map, empty fields left out as the API stores it."""
    fields = [(k, t[k]) for k in TOLERATION_FIELDS if t.get(k) not in (None, "")]
    return "{" + ", ".join(f"{quote(k)}: dyn({value(v)})" for k, v in fields) + "}"


def tolerations(items: Iterable[Mapping[str, Any]]) -> str:
    """A CEL list of :func:`toleration` maps."""
    return "[" + ", ".join(toleration(t) for t in items) + "]"


def plain(items: str) -> str:
    """The toleration list ``items`` as plain maps, absent and empty fields left out.

    Why: a patch value must become JSON, and the API server cannot marshal a typed
    toleration (the pod's after an earlier mutation, a param's) with ``tolerationSeconds``
    set; plain maps always marshal.
    """
    fields = ", ".join(f"?'{f}': t.?{f}" for f in TOLERATION_FIELDS)
    return f"{items}.map(t, {{{fields}}})"


def append(path: str, present: str, items: str) -> str:
    """JSONPatch ops appending the list ``items`` to the array at JSON pointer ``path``.

    ``present`` is CEL saying whether the array exists: JSON Patch cannot append to an
    array that is not there, so a missing one is added whole (the architecture guide's rule
    for a webhook's patch holds for a policy's too).
    """
    return (
        f"({present} ? {items}.map(t, JSONPatch{{op: 'add', path: '{path}/-', value: t}})"
        f" : (size({items}) > 0 ? [JSONPatch{{op: 'add', path: '{path}', value: {items}}}] : []))"
    )


def text(t: str, name: str) -> str:
    """String field ``name`` of toleration (or any object) ``t``, ``''`` when absent."""
    return f"{t}.?{name}.orValue('')"


def identity_equal(a: str, b: str) -> str:
    """``identity(a) == identity(b)``: key, operator, value and effect (spec §1b)."""
    return " && ".join(
        f"{text(a, f)} == {text(b, f)}" for f in ("key", "operator", "value", "effect")
    )


def same(a: str, b: str) -> str:
    """Identical tolerations: the identity and ``tolerationSeconds`` (absent equals absent)."""
    return f"({identity_equal(a, b)} && {a}.?tolerationSeconds == {b}.?tolerationSeconds)"


def describe(t: str) -> str:
    """``describe(t)`` of :mod:`webhooks.k8s.tolerations`: ``key=value:effect (op) for Ns``."""
    key, value, effect, operator = (text(t, f) for f in ("key", "value", "effect", "operator"))
    return (
        f"({key} == '' ? '*' : {key}) + ({value} == '' ? '' : '=' + {value})"
        f" + ':' + ({effect} == '' ? '*' : {effect})"
        f" + ' (' + ({operator} == '' ? 'Equal' : {operator}) + ')'"
        f" + (has({t}.tolerationSeconds) ? ' for ' + string({t}.tolerationSeconds) + 's' : '')"
    )


def covers_no_execute(t: str, key: str) -> str:
    """DefaultTolerationSeconds' loose "already tolerates ``key``:NoExecute" (spec §1a)."""
    return f"({text(t, 'key')} in ['', {quote(key)}] && {text(t, 'effect')} in ['', 'NoExecute'])"


def superset(a: str, b: str) -> str:
    """``is_superset(a, b)`` of ``pkg/util/tolerations`` (spec §1c), asymmetries included.

    A NoExecute ``a`` with seconds needs ``b`` to have seconds no larger; an Equal or empty
    operator on ``a`` needs exactly ``Equal`` on ``b`` with the same value.
    """
    key_a, op_a, effect_a = text(a, "key"), text(a, "operator"), text(a, "effect")
    return (
        f"({same(a, b)} || ("
        f"({key_a} == {text(b, 'key')} || ({key_a} == '' && {op_a} == 'Exists'))"
        f" && ({effect_a} == {text(b, 'effect')} || {effect_a} == '')"
        f" && (!({effect_a} == 'NoExecute' && has({a}.tolerationSeconds))"
        f" || (has({b}.tolerationSeconds) && {b}.tolerationSeconds <= {a}.tolerationSeconds))"
        f" && ({op_a} in ['Equal', ''] ? ({text(b, 'operator')} == 'Equal'"
        f" && {text(a, 'value')} == {text(b, 'value')}) : {op_a} == 'Exists')))"
    )


def merge_variables(prefix: str, combined: str) -> list[tuple[str, str]]:
    """Variables computing MergeTolerations (spec §1c) of the list ``combined`` (first + second).

    Upstream keeps an element unless an element *already kept* is a superset of it, or a
    later, non-identical one is. "Already kept" makes that recursive; because the superset
    relation is transitive, it equals "no earlier element that no later element dominates
    is a superset of it" (``tests/export/test_cel.py`` checks this on every small case), which
    needs no recursion: ``<prefix>Dominated[i]`` says a later non-identical element is a
    superset of element ``i``, and ``<prefix>Merged`` keeps the survivors in order.

    Why the keys first: the merge compares every pair, and the API server bounds the cost
    of one expression. A superset has the same key or is a wildcard (an empty key with
    Exists), so pairs are first tested on the keys, read once into ``<prefix>Keys`` and
    ``<prefix>Wild``; only pairs that pass pay for the full test.
    When every key differs and none is a wildcard, no element is a superset of another and
    the merge keeps the list as it is; that is checked in linear cost first.
    Returns (name, expression) pairs; ``<prefix>Merged`` is the result.
    """
    c = f"variables.{prefix}Combined"
    d = f"variables.{prefix}Dominated"
    keys, wild = f"variables.{prefix}Keys", f"variables.{prefix}Wild"
    n = f"size({c})"

    def may(a: str, b: str) -> str:
        return f"({keys}[{a}] == {keys}[{b}] || {wild}[{a}])"

    dominated = (
        f"lists.range({n}).map(i, lists.range({n}).exists(k, k > i && {may('k', 'i')}"
        f" && !{same(f'{c}[k]', f'{c}[i]')} && {superset(f'{c}[k]', f'{c}[i]')}))"
    )
    merged = (
        f"size({keys}.distinct()) == {n} && !{wild}.exists(w, w) ? {c} : "
        f"lists.range({n}).filter(i, !{d}[i]"
        f" && !lists.range(i).exists(j, {may('j', 'i')} && !{d}[j]"
        f" && {superset(f'{c}[j]', f'{c}[i]')}))"
        f".map(i, {c}[i])"
    )
    return [
        (f"{prefix}Combined", combined),
        (f"{prefix}Keys", f"{c}.map(t, {text('t', 'key')})"),
        (
            f"{prefix}Wild",
            f"{c}.map(t, {text('t', 'key')} == '' && {text('t', 'operator')} == 'Exists')",
        ),
        (f"{prefix}Dominated", dominated),
        (f"{prefix}Merged", merged),
    ]


# --------------------------------------------------------------------------- names, labels


def qualified_name(expr: str) -> str:
    """``is_qualified_name(expr)`` (spec §8): the pattern, then the two length limits.

    Lengths are counted after the pattern matched, when the text is ASCII and characters
    are bytes, as upstream counts them.
    """
    name_part = f"{expr}.substring({expr}.lastIndexOf('/') + 1)"
    return (
        f"({expr}.matches('{QUALIFIED_NAME_RE}')"
        f" && size({name_part}) <= {QUALIFIED_NAME_MAX_LENGTH}"
        f" && size({expr}) - size({name_part}) - 1 <= {DNS1123_SUBDOMAIN_MAX_LENGTH})"
    )


def label_value(expr: str) -> str:
    """``is_valid_label_value(expr)`` (spec §8)."""
    return f"({expr}.matches('{LABEL_VALUE_RE}') && size({expr}) <= {LABEL_VALUE_MAX_LENGTH})"


def selector_matches(selector: Mapping[str, Any], labels: str) -> str:
    """``matches(selector, labels)`` of :mod:`webhooks.k8s.selectors` over the CEL map ``labels``.

    ``matchLabels`` and every expression are ANDed; NotIn and DoesNotExist hold for a
    missing label; the empty selector is ``true``.
    """
    parts = []
    for key, wanted in (selector.get("matchLabels") or {}).items():
        parts.append(f"({quote(key)} in {labels} && {labels}[{quote(key)}] == {quote(wanted)})")
    for expr in selector.get("matchExpressions") or []:
        key, operator, values = quote(expr["key"]), expr["operator"], expr.get("values") or []
        if operator == "In":
            parts.append(f"({key} in {labels} && {labels}[{key}] in {strings(values)})")
        elif operator == "NotIn":
            parts.append(f"(!({key} in {labels}) || !({labels}[{key}] in {strings(values)}))")
        elif operator == "Exists":
            parts.append(f"({key} in {labels})")
        else:
            parts.append(f"!({key} in {labels})")
    return "(" + " && ".join(parts) + ")" if parts else "true"


def labels_of(obj: str) -> str:
    """The labels of ``obj`` (``object``, ``namespaceObject``) as a map, empty when absent."""
    return f"({obj}.metadata.?labels.orValue({{}}))"


def annotations_of(obj: str) -> str:
    """The annotations of ``obj`` as a map, empty when absent."""
    return f"({obj}.metadata.?annotations.orValue({{}}))"


_NAME_RE = "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
_SUBDOMAIN_RE = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def bind(value: str, name: str, body: str) -> str:
    """CEL evaluating ``body`` with ``name`` bound to ``value`` (the API server offers no
    ``cel.bind``; a one-element list mapped and indexed does the same)."""
    return f"[{value}].map({name}, {body})[0]"


def _name_part_messages(n: str) -> str:
    return (
        f"(({n} == '' ? [{quote(NAME_PART_EMPTY_MSG)}]"
        f" : size(bytes({n})) > {QUALIFIED_NAME_MAX_LENGTH}"
        f" ? [{quote(NAME_PART_TOO_LONG_MSG)}] : []) + (!{n}.matches('{_NAME_RE}')"
        f" ? [{quote(NAME_PART_REGEX_MSG)}] : []))"
    )


def qualified_name_messages(expr: str) -> str:
    """CEL for ``qualified_name_errors(expr)``: upstream's messages, in its order (spec §8)."""
    prefix = (
        f"(p[0] == '' ? [{quote(PREFIX_EMPTY_MSG)}]"
        f" : (size(bytes(p[0])) > {DNS1123_SUBDOMAIN_MAX_LENGTH}"
        f" ? [{quote(PREFIX_TOO_LONG_MSG)}] : []) + (!p[0].matches('{_SUBDOMAIN_RE}')"
        f" ? [{quote(PREFIX_REGEX_MSG)}] : []))"
    )
    body = (
        f"size(p) > 2 ? [{quote(TOO_MANY_PARTS_MSG)}]"
        f" : size(p) == 1 ? {_name_part_messages('p[0]')}"
        f" : {prefix} + {_name_part_messages('p[1]')}"
    )
    return bind(f"{expr}.split('/')", "p", body)


def label_value_messages(expr: str) -> str:
    """CEL for ``label_value_errors(expr)`` (spec §8)."""
    return (
        f"((size(bytes({expr})) > {LABEL_VALUE_MAX_LENGTH}"
        f" ? [{quote(LABEL_VALUE_TOO_LONG_MSG)}] : [])"
        f" + (!{expr}.matches('{LABEL_VALUE_RE}') ? [{quote(LABEL_VALUE_REGEX_MSG)}] : []))"
    )


def go_quote(expr: str) -> str:
    """CEL for Go's ``%q`` of a string, for the printable text a Kubernetes name holds.

    Backslashes and double quotes are escaped as Go escapes them; a control or non-printable
    character, which no valid key or value holds, is shown as it is rather than as Go's
    ``\\x``/``\\u`` escape.
    """
    return f"'\"' + {expr}.replace('\\\\', '\\\\\\\\').replace('\"', '\\\\\"') + '\"'"


def by_template_kind(choose: Callable[[PodSpecPath], str]) -> str:
    """CEL that is ``choose(path)`` for the pod spec path of the request's kind, over every
    built-in template kind (:data:`~webhooks.k8s.podspec.POD_SPEC_PATHS`).

    Why the kind name alone is exact here: a policy's ``matchConstraints`` name only the
    built-in groups' resources, so the request's kind is the built-in of that name. The
    path most kinds share is the last branch; the others are tested shallowest first.
    """
    paths = Counter(POD_SPEC_PATHS.values())
    common = paths.most_common(1)[0][0]
    branches: dict[PodSpecPath, str] = {}
    for (_, kind), path in sorted(POD_SPEC_PATHS.items(), key=lambda item: len(item[1])):
        if path != common and path not in branches:
            branches[path] = kind
    out = choose(common)
    for path, kind in reversed(branches.items()):
        out = f"request.kind.kind == '{kind}' ? {choose(path)} : {out}"
    return out


# --------------------------------------------------------------------------- libraries

#: The calls by which an expression uses each CEL library of
#: :data:`webhooks.k8s.releases.CEL_LIBRARIES`, as this package writes them. Why by the text:
#: a release's API server refuses a whole policy over one call its CEL environment lacks, so
#: ``export`` must know, per release, which of its expressions it can send at all.
LIBRARY_CALLS: Final[Mapping[str, re.Pattern[str]]] = {
    CEL_OPTIONAL: re.compile(
        r"\.\?\w+|\.(?:orValue|hasValue|optMap|optFlatMap)\(|\boptional\.\w+\("
    ),
    CEL_QUANTITY: re.compile(r"\b(?:quantity|isQuantity)\("),
    CEL_STRINGS: re.compile(
        r"\.(?:charAt|indexOf|lastIndexOf|lowerAscii|upperAscii|replace|split|substring|trim"
        r"|join|quote)\("
    ),
    CEL_TWO_VARIABLE: re.compile(
        r"\.(?:transformList|transformMap|transformMapEntry)\("
        r"|\.(?:all|exists|existsOne)\(\s*\w+\s*,\s*\w+\s*,"
    ),
    CEL_LISTS: re.compile(
        r"\blists\.\w+\(|\.(?:distinct|flatten|sort|sortBy|slice|first|last|reverse)\("
    ),
}

_LITERAL: Final = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def _call_name(found: str) -> str:
    """``lists.range``, ``distinct``, ``.?labels``: a match as the report names it."""
    name = found.split("(", maxsplit=1)[0]
    return name if name.startswith(".?") else name.lstrip(".")


def library_calls(expression: str) -> dict[str, list[str]]:
    """The libraries ``expression`` calls, each with the calls found (``lists.range``),
    in first-use order; string literals are left out, so a message naming a call is none."""
    code = _LITERAL.sub("''", expression)
    found: dict[str, list[str]] = {}
    for library, pattern in LIBRARY_CALLS.items():
        calls = [_call_name(m.group(0)) for m in pattern.finditer(code)]
        if calls:
            found[library] = list(dict.fromkeys(calls))
    return found
