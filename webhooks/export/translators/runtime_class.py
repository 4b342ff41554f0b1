"""runtime-class as a policy whose params are the RuntimeClasses (spec §5).

How: the mutating policy and one validating policy take ``node.k8s.io/v1`` RuntimeClass as
their param kind, bound with a selector that matches every RuntimeClass, so the API server
evaluates them once per RuntimeClass; a match condition keeps only the evaluation whose
param is the one the pod names. That evaluation sets ``spec.overhead`` to ``podFixed``
(§5b), merges the nodeSelector and the tolerations (§5d, the superset merge), and its
validation refuses a mismatching overhead or a conflicting nodeSelector key with upstream's
words. A second validating policy, without params, refuses an overhead on a pod that names
no RuntimeClass (§5c).

What a policy cannot do: see that *no* RuntimeClass has the pod's name. Each evaluation
sees one param, and a pod whose RuntimeClass does not exist matches none, so it is
admitted, with none of the chain's changes (the webhook refuses it:
``pod rejected: RuntimeClass "<name>" not found``). In a hybrid installation the webhook
keeps runtime-class's validating half, which refuses it, so the pod is refused there too.
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
)
from webhooks.plugins.runtime_class import (
    OVERHEAD_MISMATCH,
    OVERHEAD_WITHOUT_RUNTIME_CLASS,
    PLUGIN,
    Settings,
)

NAME = PLUGIN.name
#: Why the plugin is not exact, for the report and the docs.
NOT_FOUND_GAP = (
    "a pod naming a RuntimeClass that does not exist is admitted, unchanged (a policy sees one "
    "RuntimeClass per evaluation and cannot tell that none has the name; the webhook refuses "
    'it: pod rejected: RuntimeClass "<name>" not found; a hybrid installation keeps this '
    "half on the webhook); and a pod whose tolerations, with its RuntimeClass's, are "
    "too many for the API server's CEL cost limit in the superset merge (measured on "
    "Kubernetes 1.37: about 600 with distinct keys, about 100 sharing one key) is refused"
)

_POD_TOLERATIONS = "object.spec.?tolerations.orValue([])"


def equal_quantities(a: str, b: str) -> str:
    """``semantically_equal(a, b)``: the same resources, each quantity numerically equal."""
    return (
        f"(size({a}) == size({b}) && {a}.all(k, k in {b}"
        f" && quantity(string({a}[k])).compareTo(quantity(string({b}[k]))) == 0))"
    )


#: The RuntimeClass's tolerations as plain maps (:func:`webhooks.export.cel.plain`).
RC_TOLERATIONS = cel.plain("params.?scheduling.?tolerations.orValue([])")

_COMMON: tuple[Variable, ...] = (
    # Quantities as strings (their canonical form, as the API serves the RuntimeClass);
    # the pod's overhead through dyn(): the type checker's Pod schema has no Quantity maps.
    ("rcFixed", "params.?overhead.?podFixed.orValue({}).transformMap(k, v, string(v))"),
    ("rcOverhead", "dyn(object.spec).?overhead.orValue({})"),
    (
        "rcOverheadRefused",
        "has(params.overhead) && size(variables.rcOverhead) > 0"
        f" && !{equal_quantities('variables.rcOverhead', 'variables.rcFixed')}",
    ),
    (
        "rcSelector",
        "params.?scheduling.?nodeSelector.orValue({}).transformMap(k, v, string(v))",
    ),
    ("rcPodSelector", "object.spec.?nodeSelector.orValue({})"),
    (
        "rcConflicts",
        "has(params.scheduling) ? variables.rcSelector.filter(k, k in variables.rcPodSelector"
        " && variables.rcPodSelector[k] != variables.rcSelector[k]).sort() : []",
    ),
)


def _mutation() -> Mutation:
    variables = (
        *_COMMON,
        *cel.merge_variables("rc", f"{cel.plain(_POD_TOLERATIONS)} + {RC_TOLERATIONS}"),
    )
    merged, original = "variables.rcMerged", _POD_TOLERATIONS
    changed = (
        f"size({merged}) != size({original}) || lists.range(size({merged}))"
        f".exists(i, !{cel.same(f'{merged}[i]', f'{original}[i]')})"
    )
    overhead = (
        "(size(variables.rcFixed) > 0"
        " ? [JSONPatch{op: 'add', path: '/spec/overhead', value: variables.rcFixed}] : [])"
    )
    selector = (
        "(!has(params.scheduling) ? [] : has(object.spec.nodeSelector)"
        " ? variables.rcSelector.filter(k, !(k in variables.rcPodSelector)).map(k,"
        " JSONPatch{op: 'add', path: '/spec/nodeSelector/' + jsonpatch.escapeKey(k),"
        " value: variables.rcSelector[k]})"
        " : (size(variables.rcSelector) > 0"
        " ? [JSONPatch{op: 'add', path: '/spec/nodeSelector', value: variables.rcSelector}] : []))"
    )
    tolerations = (
        f"((has(params.scheduling) && ({changed}))"
        f" ? [JSONPatch{{op: 'add', path: '/spec/tolerations', value: {merged}}}] : [])"
    )
    expression = (
        "(variables.rcOverheadRefused || size(variables.rcConflicts) > 0) ? []"
        f" : {overhead} + {selector} + {tolerations}"
    )
    return Mutation("pods", frozenset({"CREATE"}), expression, variables, runtime_class=True)


def _scheduling() -> Validating:
    """The mutating half's refusals (§5b, §5d): an overhead that differs from the
    RuntimeClass's, a nodeSelector key the RuntimeClass sets to another value."""
    conflict = (
        "'conflict: runtimeClass.scheduling.nodeSelector[' + variables.rcConflicts[0] + '] = '"
        " + variables.rcSelector[variables.rcConflicts[0]] + '; pod.spec.nodeSelector['"
        " + variables.rcConflicts[0] + '] = ' + variables.rcPodSelector[variables.rcConflicts[0]]"
    )
    checks = (
        Check("!variables.rcOverheadRefused", cel.quote(OVERHEAD_MISMATCH)),
        Check("variables.rcOverheadRefused || size(variables.rcConflicts) == 0", conflict),
    )
    return Validating(
        ("pods",),
        frozenset({"CREATE"}),
        checks,
        _COMMON,
        runtime_class=True,
        suffix="scheduling",
        phase="mutate",
    )


def _with_class() -> Validating:
    """The validating half (§5c) for a pod whose RuntimeClass exists."""
    overhead_ok = (
        "size(variables.rcOverhead) == 0 || (has(params.overhead)"
        f" && {equal_quantities('variables.rcOverhead', 'variables.rcFixed')})"
    )
    overhead_reason = (
        f"has(params.overhead) ? {cel.quote(OVERHEAD_MISMATCH)}"
        f" : {cel.quote(OVERHEAD_WITHOUT_RUNTIME_CLASS)}"
    )
    return Validating(
        ("pods",),
        frozenset({"CREATE"}),
        (Check(overhead_ok, overhead_reason),),
        _COMMON[:2],
        runtime_class=True,
    )


def _without_class() -> Validating:
    check = Check(
        "size(dyn(object.spec).?overhead.orValue({})) == 0",
        cel.quote(OVERHEAD_WITHOUT_RUNTIME_CLASS),
    )
    condition = ("names-no-runtime-class", "!has(object.spec.runtimeClassName)")
    return Validating(
        ("pods",), frozenset({"CREATE"}), (check,), conditions=(condition,), suffix="overhead"
    )


def translate(settings: Settings) -> Translation:
    """The param-driven mutation and validations; the plugin is exact except for missing
    RuntimeClasses (module docstring)."""
    return Translation(
        NAME,
        mutations=(_mutation(),),
        validating=(_scheduling(), _with_class(), _without_class()),
        mutate=EXACT,
        validate=EXCEPT,
        lines=(Line(f"plugins.{NAME}", EXCEPT, NOT_FOUND_GAP),),
    )
