"""pod-node-selector as a JSONPatch mutation and a validation (spec §6).

How: the Namespace's ``scheduler.alpha.kubernetes.io/node-selector`` annotation (present,
even empty, wins; else ``clusterDefaultNodeSelector``) is parsed as upstream parses a
label set: split on ``,`` then ``=``, spaces trimmed, keys checked as qualified names and
values as label values, a later duplicate key winning. The mutation adds the pairs the
pod's nodeSelector lacks when none conflicts. The validation refuses, on the final object,
an annotation that does not parse, a conflicting pair, and a pair outside the namespace's
``nodeSelectorWhitelist``, each in the webhook's words; refusing after every mutation
rather than in the mutating phase refuses the same pods, since later plugins only add
nodeSelector pairs. Every setting is exported exactly.
"""

from __future__ import annotations

from webhooks.export import cel
from webhooks.export.model import EXACT, Check, Line, Mutation, Translation, Validating, Variable
from webhooks.k8s.labels import parse_label_set
from webhooks.k8s.namespaces import NODE_SELECTOR_ANNOTATION
from webhooks.plugins.pod_node_selector import CONFLICT, NAME, NOT_WHITELISTED, Settings


def _pairs(labels: dict[str, str]) -> str:
    return "[" + ", ".join(f"[{cel.quote(k)}, {cel.quote(v)}]" for k, v in labels.items()) + "]"


def _variables(settings: Settings) -> tuple[Variable, ...]:
    annotations = cel.annotations_of("namespaceObject")
    key = cel.quote(NODE_SELECTOR_ANNOTATION)
    default = parse_label_set(settings.cluster_default_node_selector)
    items = "variables.pnsItems"
    return (
        ("pnsAnnotated", f"{key} in {annotations}"),
        (
            "pnsItems",
            f"variables.pnsAnnotated && {annotations}[{key}] != ''"
            f" ? {annotations}[{key}].split(',').map(i, i.split('=')) : []",
        ),
        (
            "pnsBad",
            f"{items}.filter(p, size(p) != 2 || !{cel.qualified_name('p[0].trim()')}"
            f" || !{cel.label_value('p[1].trim()')})",
        ),
        (
            "pnsPairs",
            f"variables.pnsAnnotated ? {items}.filter(p, size(p) == 2)"
            f".map(p, [p[0].trim(), p[1].trim()]) : {_pairs(default)}",
        ),
        (
            "pnsImposed",
            "variables.pnsPairs.transformList(i, e, !variables.pnsPairs"
            ".exists(j, f, j > i && variables.pnsPairs[j][0] == variables.pnsPairs[i][0]),"
            " variables.pnsPairs[i])",
        ),
        ("pnsSelector", "object.spec.?nodeSelector.orValue({})"),
        (
            "pnsConflict",
            "variables.pnsImposed.exists(p, p[0] in variables.pnsSelector"
            " && variables.pnsSelector[p[0]] != p[1])",
        ),
    )


def _mutation(settings: Settings) -> Mutation:
    added = "variables.pnsImposed.filter(p, !(p[0] in variables.pnsSelector))"
    expression = (
        f"size(variables.pnsBad) > 0 || variables.pnsConflict || size({added}) == 0 ? []"
        " : has(object.spec.nodeSelector)"
        f" ? {added}.map(p, JSONPatch{{op: 'add', path: '/spec/nodeSelector/'"
        " + jsonpatch.escapeKey(p[0]), value: p[1]})"
        f" : [JSONPatch{{op: 'add', path: '/spec/nodeSelector',"
        f" value: {added}.transformMapEntry(i, p, {{p[0]: p[1]}})}}]"
    )
    return Mutation("pods", frozenset({"CREATE"}), expression, _variables(settings))


def _unreadable() -> str:
    """The webhook's message for an annotation that does not parse (its first bad item):
    ``parse_label_set``'s reason, after the namespace and the annotation."""
    first = "variables.pnsBad[0]"
    key, value = f"{first}[0].trim()", f"{first}[1].trim()"
    reason = (
        f"size({first}) != 2 ? 'invalid selector: [' + {first}.join(' ') + ']'"
        f" : !{cel.qualified_name(key)} ? 'invalid label key ' + {cel.go_quote(key)} + ': '"
        f" + {cel.qualified_name_messages(key)}.join('; ')"
        f" : 'invalid label value: ' + {cel.go_quote(value)} + ': at key: ' + {cel.go_quote(key)}"
        f" + ': ' + {cel.label_value_messages(value)}.join('; ')"
    )
    return (
        f"'namespace \\'' + request.namespace + '\\' annotation {NODE_SELECTOR_ANNOTATION}: '"
        f" + ({reason})"
    )


def _validation(settings: Settings) -> Validating:
    whitelists = {
        namespace: parse_label_set(text)
        for namespace, text in settings.node_selector_whitelist.items()
        if parse_label_set(text)
    }
    table = (
        "{"
        + ", ".join(
            f"{cel.quote(ns)}: {cel.string_map(labels)}" for ns, labels in whitelists.items()
        )
        + "}"
    )
    selector = "variables.pnsSelector"
    allowed = (
        f"(!(request.namespace in {table}) || {selector}.all(k, k in {table}[request.namespace]"
        f" && {table}[request.namespace][k] == {selector}[k]))"
        if whitelists
        else "true"
    )
    checks = (
        Check("size(variables.pnsBad) == 0", _unreadable()),
        Check("size(variables.pnsBad) > 0 || !variables.pnsConflict", cel.quote(CONFLICT)),
        Check(
            f"size(variables.pnsBad) > 0 || variables.pnsConflict || {allowed}",
            cel.quote(NOT_WHITELISTED),
        ),
    )
    return Validating(("pods",), frozenset({"CREATE"}), checks, _variables(settings))


def translate(settings: Settings) -> Translation:
    """The mutation and the validation; every setting is exact."""
    lines = tuple(
        Line(f"plugins.{NAME}.{name}", EXACT)
        for name in ("clusterDefaultNodeSelector", "nodeSelectorWhitelist")
    )
    return Translation(
        NAME,
        mutations=(_mutation(settings),),
        validating=(_validation(settings),),
        mutate=EXACT,
        validate=EXACT,
        lines=lines,
    )
