"""dedicated-nodes as a JSONPatch mutation and validations.

How: the group is the config's ``namespaces`` entry, else the Namespace's label. On CREATE
the mutation appends ``<key>=<group>:<effect>`` (Equal) unless a §1c superset is there,
and ANDs ``<key> In [<group>]`` into every required nodeSelectorTerm that is not empty and
does not already say it (or creates the required affinity), exactly as the webhook edits
the pod. A pod whose nodeSelector, or every live term, can never reach the group's nodes
is refused by a validation on the final object instead (the mutation then changes
nothing, so the final object still shows the conflict), in the webhook's words. With
``enforce``, a validation refuses new tolerations that reach another group's taint.

What a policy cannot do: warn. The webhook tells the user what it added ("added toleration
dedicated=gpu:NoSchedule (namespace label ...)", "added node affinity ...", a term that can
never match the group); a MutatingAdmissionPolicy has no warnings, so the stored pod is the
same and the user is told nothing.
"""

from __future__ import annotations

from webhooks.export import cel
from webhooks.export.model import (
    EXACT,
    EXCEPT,
    Check,
    Line,
    Mutation,
    Translation,
    Validating,
    Variable,
    Verdict,
)
from webhooks.plugins.dedicated_nodes import NAME, Settings

NO_WARNINGS = (
    "the webhook warns about what it adds (the toleration, the node affinity) and about "
    "terms that can never match the group; a MutatingAdmissionPolicy cannot warn, so the "
    "stored pod is the same and the user is told nothing"
)
MIRROR = "!('kubernetes.io/config.mirror' in object.metadata.?annotations.orValue({}))"
_REQUIRED = "nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution"
_TERMS = "variables.dnTerms"
_ONE = "[variables.dnWanted]"
_INT64_MAX, _INT64_MIN = "9223372036854775807", "9223372036854775808"


def _int64(text: str) -> str:
    """Whether ``text`` is Go's ``ParseInt(text, 10, 64)``: sign, digits, within int64."""
    digits = f"{text}.find('[1-9][0-9]*$')"
    bound = f"({text}.startsWith('-') ? '{_INT64_MIN}' : '{_INT64_MAX}')"
    return (
        f"({text}.matches('^[+-]?[0-9]+$') && (size({digits}) < 19"
        f" || (size({digits}) == 19 && {digits} <= {bound})))"
    )


def _matches_group(e: str, settings: Settings) -> str:
    """``expression_matches(e, {key: group})`` for an expression on the group's key."""
    values = f"{e}.?values.orValue([])"
    op = f"{e}.?operator.orValue('')"
    group = "variables.dnGroup"
    valid = (
        f"{cel.qualified_name(f'{e}.key')} && {values}.all(v, {cel.label_value('v')})"
        f" && ({op} in ['In', 'NotIn'] ? size({values}) > 0"
        f" : {op} in ['Exists', 'DoesNotExist'] ? size({values}) == 0"
        f" : size({values}) == 1 && {_int64(f'{values}[0]')})"
    )
    compare = (
        f"({_int64(group)} && ({op} == 'Gt' ? int({group}) > int({values}[0])"
        f" : int({group}) < int({values}[0])))"
    )
    matches = (
        f"({op} == 'In' ? {group} in {values} : {op} == 'NotIn' ? !({group} in {values})"
        f" : {op} == 'Exists' ? true : {op} == 'DoesNotExist' ? false : {compare})"
    )
    return f"({valid} && {matches})"


def _variables(settings: Settings) -> tuple[Variable, ...]:
    labels = cel.labels_of("namespaceObject")
    label = cel.quote(settings.namespace_label)
    static = cel.string_map(dict(settings.namespaces))
    key = cel.quote(settings.key)
    source = (
        f"request.namespace in {static} ? 'config namespaces.' + request.namespace"
        f" : 'namespace label ' + {label}"
    )
    on_key = f"t.?matchExpressions.orValue([]).filter(e, e.key == {key}"
    conflict = (
        f"{on_key} && e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']"
        f" && !{_matches_group('e', settings)})"
    )
    return (
        (
            "dnGroup",
            f"request.namespace in {static} ? {static}[request.namespace]"
            f" : {label} in {labels} ? {labels}[{label}] : ''",
        ),
        ("dnSource", source),
        # Optional chains are spelt out from ``object``: a variable holding an optional does
        # not select through it (``.?`` on it finds nothing).
        ("dnRequired", f"object.spec.?affinity.?{_REQUIRED}.hasValue()"),
        ("dnTerms", f"object.spec.?affinity.?{_REQUIRED}.?nodeSelectorTerms.orValue([])"),
        (
            "dnLive",
            f"{_TERMS}.transformList(i, e, size({_TERMS}[i].?matchExpressions.orValue([]))"
            f" > 0 || size({_TERMS}[i].?matchFields.orValue([])) > 0, i)",
        ),
        ("dnConflicts", f"variables.dnLive.map(i, {_TERMS}[i]).map(t, {conflict})"),
        ("dnSelector", "object.spec.?nodeSelector.orValue({})"),
        (
            "dnSelectorConflict",
            f"{key} in variables.dnSelector && variables.dnSelector[{key}] != variables.dnGroup",
        ),
        (
            "dnAffinityConflict",
            "size(variables.dnLive) > 0 && variables.dnConflicts.all(c, size(c) > 0)",
        ),
    )


def _wanted(settings: Settings) -> str:
    return (
        f"{{'key': dyn({cel.quote(settings.key)}), 'operator': dyn('Equal'),"
        f" 'value': dyn(variables.dnGroup), 'effect': dyn({cel.quote(settings.effect)})}}"
    )


def _mutation(settings: Settings) -> Mutation:
    key = cel.quote(settings.key)
    requirement = (
        f"{{'key': dyn({key}), 'operator': dyn('In'), 'values': dyn([variables.dnGroup])}}"
    )
    tolerations = "object.spec.?tolerations.orValue([])"
    toleration = (
        f"{tolerations}.exists(t, {cel.superset('t', 'variables.dnWanted')}) ? []"
        f" : {cel.append('/spec/tolerations', 'has(object.spec.tolerations)', _ONE)}"
    )
    required = f"{{'nodeSelectorTerms': [{{'matchExpressions': [{requirement}]}}]}}"
    node_affinity = f"{{'requiredDuringSchedulingIgnoredDuringExecution': {required}}}"
    path = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
    create = (
        f"!has(object.spec.affinity) ? [JSONPatch{{op: 'add', path: '/spec/affinity',"
        f" value: {{'nodeAffinity': {node_affinity}}}}}]"
        " : !has(object.spec.affinity.nodeAffinity) ? [JSONPatch{op: 'add',"
        f" path: '/spec/affinity/nodeAffinity', value: {node_affinity}}}]"
        f" : [JSONPatch{{op: 'add', path: '{path}', value: {required}}}]"
    )
    has_it = (
        f"{_TERMS}[i].?matchExpressions.orValue([]).exists(e, e.key == {key} && e.operator == 'In'"
        " && size(e.?values.orValue([])) > 0 && e.values.all(v, v == variables.dnGroup))"
    )
    term = f"'{path}/nodeSelectorTerms/' + string(i) + '/matchExpressions'"
    and_terms = (
        f"variables.dnLive.filter(i, !({has_it})).map(i, has({_TERMS}[i].matchExpressions)"
        f" ? JSONPatch{{op: 'add', path: {term} + '/-', value: {requirement}}}"
        f" : JSONPatch{{op: 'add', path: {term}, value: [{requirement}]}})"
    )
    affinity = f"!variables.dnRequired ? ({create}) : {and_terms}"
    expression = (
        "variables.dnGroup == '' || variables.dnSelectorConflict || variables.dnAffinityConflict"
        f" ? [] : ({toleration}) + ({affinity})"
    )
    variables = (*_variables(settings), ("dnWanted", _wanted(settings)))
    return Mutation("pods", frozenset({"CREATE"}), f"{MIRROR} ? ({expression}) : []", variables)


def _describe_expression(e: str) -> str:
    """``describe_expression(e)``: ``key Op [v1, v2]`` (one Gt/Lt value bare)."""
    values = f"{e}.?values.orValue([])"
    return (
        f"{e}.key + ' ' + {e}.?operator.orValue('') + (size({values}) == 0 ? ''"
        f" : {e}.?operator.orValue('') in ['Gt', 'Lt'] && size({values}) == 1"
        f" ? ' ' + {values}[0] : ' [' + {values}.join(', ') + ']')"
    )


def _conflicts(settings: Settings) -> Validating:
    key = settings.key
    why = (
        "'namespace ' + request.namespace + ' is dedicated to group ' + variables.dnGroup"
        f" + ' (' + variables.dnSource + '), so its pods run only on nodes labelled {key}='"
        " + variables.dnGroup"
    )
    selector = (
        f"'pod nodeSelector {key}=' + variables.dnSelector[{cel.quote(key)}] + ' can never match"
        f" the nodes of group ' + variables.dnGroup + ': ' + {why}"
    )
    every = "(size(variables.dnLive) > 1 ? ' (as does every other term)' : '')"
    affinity = (
        "'pod required node affinity can never match the nodes of group ' + variables.dnGroup"
        " + ': nodeSelectorTerms[' + string(variables.dnLive[0]) + '] has '"
        f" + {_describe_expression('variables.dnConflicts[0][0]')} + {every} + '; ' + {why}"
    )
    checks = (
        Check("variables.dnGroup == '' || !variables.dnSelectorConflict", selector),
        Check(
            "variables.dnGroup == '' || variables.dnSelectorConflict"
            " || !variables.dnAffinityConflict",
            affinity,
        ),
    )
    return Validating(
        ("pods",),
        frozenset({"CREATE"}),
        checks,
        _variables(settings),
        (("skips-mirror-pods", MIRROR),),
        suffix="pinning",
        phase="mutate",
    )


def _foreign(settings: Settings) -> str:
    """CEL: how toleration ``t`` reaches another group's taint ('' when it does not)."""
    key, op, value, effect = (cel.text("t", f) for f in ("key", "operator", "value", "effect"))
    return (
        f"!({effect} in ['', {cel.quote(settings.effect)}])"
        f" || !({key} in ['', {cel.quote(settings.key)}])"
        f" ? '' : {op} == 'Exists' ? ({key} != '' ? 'key' : 'wildcard')"
        f" : {op} in ['', 'Equal'] ? (!({value} in ['', variables.dnGroup]) ? 'group' : '')"
        f" : {op} in ['Gt', 'Lt'] ? 'range' : ''"
    )


def _enforcement(settings: Settings) -> Validating:
    key, effect, label = settings.key, settings.effect, settings.namespace_label
    old = "(request.operation == 'UPDATE' ? oldObject.spec.?tolerations.orValue([]) : [])"
    own = (
        "(variables.dnGroup != '' ? 'namespace ' + request.namespace + ' belongs to group '"
        " + variables.dnGroup + ' (' + variables.dnSource + ')'"
        " : 'namespace ' + request.namespace + ' belongs to no dedicated group')"
    )

    def hint(target: str) -> str:
        return (
            f"'a cluster admin grants a namespace access by labelling it {label}=' + {target}"
            " + ' (or mapping it in dedicated-nodes namespaces)'"
        )

    what = (
        f"(f[1] == 'key' ? 'tolerates the {key} taint of every dedicated group'"
        f" : f[1] == 'range'"
        f" ? 'tolerates the {key} taint of every group named by a number in range'"
        f" : 'tolerates every taint, including the {key} taint of every group')"
    )
    fix = (
        f"(variables.dnGroup != '' ? 'pods there get {key}=' + variables.dnGroup"
        f" + ':{effect} added automatically, so remove this toleration'"
        f" : {hint(cel.quote('<group>'))})"
    )
    t = "f[0]"
    message = (
        f"f[1] == 'group' ? 'toleration ' + {cel.describe(t)} + ' lets this pod onto the nodes"
        f" dedicated to group ' + {cel.text(t, 'value')} + ', but ' + {own} + '; '"
        f" + {hint(cel.text(t, 'value'))}"
        f" : 'toleration ' + {cel.describe(t)} + ' ' + {what} + ', but ' + {own} + '; ' + {fix}"
    )
    variables = (
        *_variables(settings),
        (
            "dnForeign",
            f"object.spec.?tolerations.orValue([]).filter(t, !{old}.exists(o,"
            f" {cel.identity_equal('o', 't')})).map(t, [dyn(t), dyn({_foreign(settings)})])"
            ".filter(f, f[1] != '')",
        ),
    )
    messages = f"variables.dnForeign.map(f, {message})"
    check = Check(
        "size(variables.dnForeign) == 0",
        f"size({messages}) == 1 ? {messages}[0] : '[' + {messages}.join(', ') + ']'",
    )
    return Validating(
        ("pods",),
        frozenset({"CREATE", "UPDATE"}),
        (check,),
        variables,
        (("skips-mirror-pods", MIRROR),),
        suffix="foreign-tolerations",
    )


def translate(settings: Settings) -> Translation:
    """The pinning mutation and its refusals; with ``enforce`` the foreign-toleration check."""
    validating = [_conflicts(settings)]
    validate: Verdict = EXACT
    if settings.enforce:
        validating.append(_enforcement(settings))
    lines = [
        Line(f"plugins.{NAME}", EXCEPT, NO_WARNINGS),
        *(
            Line(f"plugins.{NAME}.{name}", EXACT)
            for name in ("namespaceLabel", "namespaces", "key", "effect", "enforce")
        ),
    ]
    return Translation(
        NAME,
        mutations=(_mutation(settings),),
        validating=tuple(validating),
        mutate=EXCEPT,
        validate=validate,
        lines=tuple(lines),
    )
