"""taint-toleration-rules: the API server's own validation, plus the comparison-operator gate.

How: ValidateTolerations and validateNodeTaints (spec §9, §10) are what the API server
itself applies to every Pod, pod template and Node before any validating policy or webhook
sees them, so nothing is needed for them: the same objects are refused either way. What the
setting adds is policy: with ``comparisonOperators: false`` (the default) a cluster whose
TaintTolerationComparisonOperators gate is on must still refuse ``Lt``/``Gt`` tolerations,
except on an UPDATE whose old object already used them (upstream's ratchet). A validation
does that for Pods and every pod template, in upstream's words; with the gate off the API
server refuses them first. The plugin is exact.
"""

from __future__ import annotations

from webhooks.export import cel
from webhooks.export.model import EXACT, Check, Line, Translation, Validating
from webhooks.plugins.taint_toleration_rules import PLUGIN, Settings

NAME = PLUGIN.name

_SPEC = "variables.tttSpec"


def _validation() -> Validating:
    # The pod spec of every kind the webhook checks (POD_SPEC_PATHS), by the request's kind.
    spec = cel.by_template_kind(lambda path: "object." + ".".join(path))
    old_spec = spec.replace("object.", "oldObject.")
    variables = (
        ("tttSpec", spec),
        (
            "tttRatchet",
            f"request.operation == 'UPDATE' && ({old_spec}).?tolerations.orValue([])"
            ".exists(t, t.?operator.orValue('') in ['Lt', 'Gt'])",
        ),
        (
            "tttComparisons",
            f"variables.tttRatchet ? [] : {_SPEC}.?tolerations.orValue([])"
            f".transformList(i, e, {_SPEC}.tolerations[i].?operator.orValue('')"
            " in ['Lt', 'Gt'], i)",
        ),
    )
    path = cel.by_template_kind(lambda path: "'" + ".".join(path) + "'")
    one = (
        f"({path}) + '.tolerations[' + string(i) + '].operator: Unsupported value: \"'"
        f' + {_SPEC}.tolerations[i].operator + \'": supported values: "Equal", "Exists"\''
    )
    messages = f"variables.tttComparisons.map(i, {one})"
    check = Check(
        "size(variables.tttComparisons) == 0",
        f"size({messages}) == 1 ? {messages}[0] : '[' + {messages}.join(', ') + ']'",
        reason="Invalid",
    )
    return Validating(("pods", "templates"), frozenset({"CREATE", "UPDATE"}), (check,), variables)


def translate(settings: Settings) -> Translation:
    """Nothing with ``comparisonOperators: true``; the gate's off-switch otherwise."""
    validating = () if settings.comparison_operators else (_validation(),)
    return Translation(
        NAME,
        validating=validating,
        validate=EXACT,
        lines=(Line(f"plugins.{NAME}.comparisonOperators", EXACT),),
    )
