"""taint-toleration-rules mirrors ValidateTolerations and validateNodeTaints (spec §8–§10).

Every expected message is the full rendered field error, spelled out here rather than built
with the code under test, so a drift in either the rules or the rendering fails a row.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests import reviews
from tests.reviews import RESOURCES, pod, request, tol
from webhooks.core.config import load_config
from webhooks.core.plugin import Context
from webhooks.k8s.podspec import POD_SPEC_PATHS, dotted
from webhooks.k8s.validation import toleration_errors
from webhooks.plugins import REGISTRY
from webhooks.plugins.taint_toleration_rules import PLUGIN, Settings, validate

#: kind name → pod spec path, for the built-ins (every kind here is its group's).
PATHS = {kind: path for (_, kind), path in POD_SPEC_PATHS.items()}

NAME_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
TOO_MANY_PARTS = (
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
    "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
EMPTY_KEY = (
    'operator must be Exists when `key` is empty, which means "match all values and all keys"'
)
SECONDS = "effect must be 'NoExecute' when `tolerationSeconds` is set"
OPERATORS = 'supported values: "Equal", "Exists"'
ALL_OPERATORS = 'supported values: "Equal", "Exists", "Lt", "Gt"'
EFFECTS = 'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'
CANONICAL = "must be a valid decimal integer in canonical form"
INT64 = "must be between -9223372036854775808 and 9223372036854775807, inclusive"

T0 = "spec.tolerations[0]"
N0, N1, N2 = "spec.taints[0]", "spec.taints[1]", "spec.taints[2]"

Errors = list[tuple[str, str]]


def found(obj: dict[str, Any], settings: Settings | None = None, **kw: Any) -> Errors:
    """Run the validator directly; every violation must be a 422 Invalid."""
    violations = validate(request(obj, **kw), obj, Context(settings or Settings()))
    assert all((v.code, v.reason) == (422, "Invalid") for v in violations)
    return [(v.field, v.message) for v in violations]


def node(taints: Any) -> dict[str, Any]:
    """A Node with ``taints`` (omitted when None)."""
    spec = {} if taints is None else {"taints": taints}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": spec}


def taint(key: str | None = None, value: str | None = None, effect: str | None = None) -> dict:
    """A taint dict with only the given fields set."""
    fields = {"key": key, "value": value, "effect": effect}
    return {k: v for k, v in fields.items() if v is not None}


# --- spec §9: ValidateTolerations --------------------------------------------------------------

TOLERATION_CASES: list[tuple[str, list[Any], Errors]] = [
    (
        "Exists with NoExecute and 60 seconds is valid",
        [tol("foo", "Exists", effect="NoExecute", seconds=60)],
        [],
    ),
    (
        "Equal with NoExecute and 60 seconds is valid",
        [tol("foo", "Equal", "bar", "NoExecute", 60)],
        [],
    ),
    ("Equal with NoSchedule is valid", [tol("foo", "Equal", "bar", "NoSchedule")], []),
    ("an empty key with Exists is valid", [tol(operator="Exists", effect="NoSchedule")], []),
    ("an empty operator means Equal and is valid", [tol("foo", value="bar")], []),
    ("an empty effect means all effects and is valid", [tol("foo", "Equal", "bar")], []),
    (
        "negative tolerationSeconds are valid with NoExecute",
        [tol("foo", "Exists", effect="NoExecute", seconds=-1)],
        [],
    ),
    (
        "identical tolerations are not duplicates",
        [tol("foo", "Exists"), tol("foo", "Exists")],
        [],
    ),
    (
        "a key with special characters gets the name-part message",
        [tol("nospecialchars^=@", "Equal", "bar", "NoSchedule")],
        [(f"{T0}.key", f'{T0}.key: Invalid value: "nospecialchars^=@": {NAME_REGEX}')],
    ),
    (
        "operator In is unsupported",
        [tol("foo", "In", "bar", "NoSchedule")],
        [(f"{T0}.operator", f'{T0}.operator: Unsupported value: "In": {OPERATORS}')],
    ),
    (
        "Exists with a value prints the value, as upstream since v1.32",
        [tol("foo", "Exists", "bar", "NoSchedule")],
        [
            (
                f"{T0}.operator",
                f'{T0}.operator: Invalid value: "bar": '
                "value must be empty when `operator` is 'Exists'",
            )
        ],
    ),
    (
        "an empty key with Equal is refused on the operator",
        [tol(operator="Equal", value="bar", effect="NoSchedule")],
        [(f"{T0}.operator", f'{T0}.operator: Invalid value: "Equal": {EMPTY_KEY}')],
    ),
    (
        "an empty key with the operator omitted quotes the empty operator",
        [tol(effect="NoSchedule")],
        [(f"{T0}.operator", f'{T0}.operator: Invalid value: "": {EMPTY_KEY}')],
    ),
    (
        "tolerationSeconds with NoSchedule is refused on the effect",
        [tol("foo", "Exists", effect="NoSchedule", seconds=20)],
        [(f"{T0}.effect", f'{T0}.effect: Invalid value: "NoSchedule": {SECONDS}')],
    ),
    (
        "zero tolerationSeconds with an empty effect is refused too",
        [tol("foo", "Exists", seconds=0)],
        [(f"{T0}.effect", f'{T0}.effect: Invalid value: "": {SECONDS}')],
    ),
    (
        "a 64-character value gets the length message on the operator path",
        [tol("foo", "Equal", "a" * 64)],
        [
            (
                f"{T0}.operator",
                f'{T0}.operator: Invalid value: "{"a" * 64}": must be no more than 63 characters',
            )
        ],
    ),
    (
        "a value with backslashes is Go-quoted and gets the label message",
        [tol("foo", "Equal", "some\\bad\\value")],
        [
            (
                f"{T0}.operator",
                f'{T0}.operator: Invalid value: "some\\\\bad\\\\value": {VALUE_REGEX}',
            )
        ],
    ),
    (
        "a value with a comma gets the label message",
        [tol("foo", "Equal", "bad,value")],
        [(f"{T0}.operator", f'{T0}.operator: Invalid value: "bad,value": {VALUE_REGEX}')],
    ),
    (
        "a value with leading punctuation gets the label message",
        [tol("foo", value="?#$notsogood")],
        [(f"{T0}.operator", f'{T0}.operator: Invalid value: "?#$notsogood": {VALUE_REGEX}')],
    ),
    (
        "a value failing both label rules joins the messages with a bare semicolon",
        [tol("foo", "Equal", "a" * 64 + ",")],
        [
            (
                f"{T0}.operator",
                f'{T0}.operator: Invalid value: "{"a" * 64},": must be no more than 63 '
                f"characters;{VALUE_REGEX}",
            )
        ],
    ),
    (
        "a key ending in a dash gets the name-part message",
        [tol("cantendwithadash-", "Exists")],
        [(f"{T0}.key", f'{T0}.key: Invalid value: "cantendwithadash-": {NAME_REGEX}')],
    ),
    (
        "a key with two slashes gets the qualified-name message",
        [tol("only/one/slash", "Exists")],
        [(f"{T0}.key", f'{T0}.key: Invalid value: "only/one/slash": {TOO_MANY_PARTS}')],
    ),
    (
        "a 254-character key gets only the length message",
        [tol("a" * 254, "Exists")],
        [
            (
                f"{T0}.key",
                f'{T0}.key: Invalid value: "{"a" * 254}": name part must be no more than 63 '
                "characters",
            )
        ],
    ),
    (
        "operators are case-sensitive, so exists is unsupported",
        [tol("foo", "exists")],
        [(f"{T0}.operator", f'{T0}.operator: Unsupported value: "exists": {OPERATORS}')],
    ),
    (
        "the NoScheduleNoAdmit effect is unsupported",
        [tol("foo", "Exists", effect="NoScheduleNoAdmit")],
        [(f"{T0}.effect", f'{T0}.effect: Unsupported value: "NoScheduleNoAdmit": {EFFECTS}')],
    ),
    (
        "Lt is unsupported while comparison operators are off",
        [tol("foo", "Lt", "5")],
        [(f"{T0}.operator", f'{T0}.operator: Unsupported value: "Lt": {OPERATORS}')],
    ),
    (
        "every rule a toleration breaks is reported, in upstream order",
        [tol("-bad", "In", "x", "Bogus", seconds=5)],
        [
            (f"{T0}.key", f'{T0}.key: Invalid value: "-bad": {NAME_REGEX}'),
            (f"{T0}.effect", f'{T0}.effect: Invalid value: "Bogus": {SECONDS}'),
            (f"{T0}.operator", f'{T0}.operator: Unsupported value: "In": {OPERATORS}'),
            (f"{T0}.effect", f'{T0}.effect: Unsupported value: "Bogus": {EFFECTS}'),
        ],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [(t, e) for _, t, e in TOLERATION_CASES],
    ids=[i for i, _, _ in TOLERATION_CASES],
)
def test_tolerations(tolerations: list[Any], expected: Errors) -> None:
    assert found(pod(tolerations=tolerations)) == expected


def test_several_errors_in_one_object_are_all_reported_and_aggregated() -> None:
    obj = pod(
        tolerations=[
            tol("ok", "Exists"),
            tol("bad^key", "Exists", "v"),
            tol(operator="Equal"),
            tol("k", effect="NoScheduleNoAdmit", seconds=1),
        ]
    )
    expected = [
        (
            "spec.tolerations[1].key",
            f'spec.tolerations[1].key: Invalid value: "bad^key": {NAME_REGEX}',
        ),
        (
            "spec.tolerations[1].operator",
            'spec.tolerations[1].operator: Invalid value: "v": '
            "value must be empty when `operator` is 'Exists'",
        ),
        (
            "spec.tolerations[2].operator",
            f'spec.tolerations[2].operator: Invalid value: "Equal": {EMPTY_KEY}',
        ),
        (
            "spec.tolerations[3].effect",
            f'spec.tolerations[3].effect: Invalid value: "NoScheduleNoAdmit": {SECONDS}',
        ),
        (
            "spec.tolerations[3].effect",
            f'spec.tolerations[3].effect: Unsupported value: "NoScheduleNoAdmit": {EFFECTS}',
        ),
    ]
    assert found(obj) == expected
    outcome = reviews.decide(obj, phases=("validate",), only=PLUGIN.name)
    assert not outcome.allowed
    assert (outcome.code, outcome.reason) == (422, "Invalid")
    assert outcome.message == "[" + ", ".join(m for _, m in expected) + "]"


# --- every pod template --------------------------------------------------------------------


def workload(kind: str, tolerations: list[Any]) -> dict[str, Any]:
    """An object of ``kind`` whose pod spec (wherever the kind keeps it) has ``tolerations``."""
    group, version, _ = RESOURCES[kind]
    obj: dict[str, Any] = {
        "apiVersion": f"{group}/{version}" if group else version,
        "kind": kind,
        "metadata": {"name": "w", "namespace": "default"},
    }
    node_: dict[str, Any] = obj
    for part in PATHS[kind]:
        node_ = node_.setdefault(part, {})
    node_["containers"] = [{"name": "app", "image": "nginx"}]
    node_["tolerations"] = tolerations
    return obj


KINDS = sorted(PATHS)


@pytest.mark.parametrize(
    "kind", KINDS, ids=[f"a {k} reports the error at its pod spec's path" for k in KINDS]
)
def test_every_workload_kind_reports_the_real_path(kind: str) -> None:
    obj = workload(kind, [tol("foo", "Exists"), tol("bad^key", "Exists")])
    path = dotted(PATHS[kind], "tolerations", 1, "key")
    outcome = reviews.decide(obj, phases=("validate",), only=PLUGIN.name)
    assert [(v.field, v.message, v.plugin) for v in outcome.violations] == [
        (path, f'{path}: Invalid value: "bad^key": {NAME_REGEX}', PLUGIN.name)
    ]
    assert (outcome.code, outcome.reason) == (422, "Invalid")


def test_the_cronjob_path_goes_through_the_job_template() -> None:
    obj = workload("CronJob", [tol("bad^key", "Exists")])
    assert found(obj)[0][0] == "spec.jobTemplate.spec.template.spec.tolerations[0].key"


@pytest.mark.parametrize("kind", KINDS, ids=[f"a valid {k} is allowed" for k in KINDS])
def test_valid_workloads_are_allowed(kind: str) -> None:
    assert found(workload(kind, [tol("foo", "Equal", "bar", "NoExecute", 30)])) == []


# --- spec §10: validateNodeTaints ------------------------------------------------------------

TAINT_CASES: list[tuple[str, Any, Errors]] = [
    ("a GPU=true:NoSchedule taint is valid", [taint("GPU", "true", "NoSchedule")], []),
    ("a Node without taints is valid", None, []),
    ("an empty taint list is valid", [], []),
    (
        "a missing key gets both the empty and the regex messages",
        [taint(value="special-user-3", effect="NoSchedule")],
        [
            (f"{N0}.key", f'{N0}.key: Invalid value: "": name part must be non-empty'),
            (f"{N0}.key", f'{N0}.key: Invalid value: "": {NAME_REGEX}'),
        ],
    ),
    (
        "a key with = and upper case gets the name-part message",
        [taint("NoUppercaseOrSpecialCharsLike=Equals", "bar", "NoSchedule")],
        [
            (
                f"{N0}.key",
                f'{N0}.key: Invalid value: "NoUppercaseOrSpecialCharsLike=Equals": {NAME_REGEX}',
            )
        ],
    ),
    (
        "a value with backslashes is reported on the value path",
        [taint("dedicated", "some\\bad\\value", "NoSchedule")],
        [(f"{N0}.value", f'{N0}.value: Invalid value: "some\\\\bad\\\\value": {VALUE_REGEX}')],
    ),
    (
        "a missing effect is a bare Required value",
        [taint("dedicated", "special-user-3")],
        [(f"{N0}.effect", f"{N0}.effect: Required value")],
    ),
    (
        "the NoScheduleNoAdmit effect is unsupported",
        [taint("dedicated", "special-user-3", "NoScheduleNoAdmit")],
        [(f"{N0}.effect", f'{N0}.effect: Unsupported value: "NoScheduleNoAdmit": {EFFECTS}')],
    ),
    (
        "the same key and effect with different values is a duplicate",
        [
            taint("dedicated", "special-user-1", "NoSchedule"),
            taint("dedicated", "special-user-2", "NoSchedule"),
        ],
        [
            (
                N1,
                f'{N1}: Duplicate value: core.Taint{{Key:"dedicated", Value:"special-user-2", '
                'Effect:"NoSchedule", TimeAdded:<nil>}: taints must be unique by key and '
                "effect pair",
            )
        ],
    ),
    (
        "the same key with different effects is valid",
        [
            taint("dedicated", "special-user-1", "NoSchedule"),
            taint("dedicated", "special-user-1", "NoExecute"),
        ],
        [],
    ),
    (
        "the third occurrence of a pair is a duplicate too",
        [taint("k", "a", "NoExecute"), taint("k", "b", "NoExecute"), taint("k", "c", "NoExecute")],
        [
            (
                N1,
                f'{N1}: Duplicate value: core.Taint{{Key:"k", Value:"b", Effect:"NoExecute", '
                "TimeAdded:<nil>}: taints must be unique by key and effect pair",
            ),
            (
                N2,
                f'{N2}: Duplicate value: core.Taint{{Key:"k", Value:"c", Effect:"NoExecute", '
                "TimeAdded:<nil>}: taints must be unique by key and effect pair",
            ),
        ],
    ),
    (
        "two taints with an empty effect are both Required and the second is a duplicate",
        [taint("k"), taint("k")],
        [
            (f"{N0}.effect", f"{N0}.effect: Required value"),
            (f"{N1}.effect", f"{N1}.effect: Required value"),
            (
                N1,
                f'{N1}: Duplicate value: core.Taint{{Key:"k", Value:"", Effect:"", '
                "TimeAdded:<nil>}: taints must be unique by key and effect pair",
            ),
        ],
    ),
]


@pytest.mark.parametrize(
    ("taints", "expected"), [(t, e) for _, t, e in TAINT_CASES], ids=[i for i, _, _ in TAINT_CASES]
)
def test_node_taints(taints: Any, expected: Errors) -> None:
    assert found(node(taints)) == expected


def test_node_errors_are_reported_under_spec_not_metadata() -> None:
    obj = node([taint("bad^", "x", "NoSchedule")])
    outcome = reviews.decide(
        obj, phases=("validate",), only=PLUGIN.name, operation="UPDATE", old=copy.deepcopy(obj)
    )
    assert [v.field for v in outcome.violations] == ["spec.taints[0].key"]
    assert outcome.message.startswith('spec.taints[0].key: Invalid value: "bad^": ')


def test_node_tolerations_are_not_read_and_pod_taints_are_not_read() -> None:
    obj = node([taint("k", "v", "NoSchedule")])
    obj["spec"]["tolerations"] = [tol("bad^")]
    assert found(obj) == []
    assert found(pod(taints=[taint("bad^")])) == []


# --- shapes no API server could decode -----------------------------------------------------

MALFORMED_CASES: list[tuple[str, dict[str, Any], Errors]] = [
    (
        "a toleration list that is a string",
        pod(tolerations="key=value"),  # type: ignore[arg-type]
        [
            (
                "spec.tolerations",
                'spec.tolerations: Invalid value: "key=value": must be a list of tolerations',
            )
        ],
    ),
    (
        "a toleration list that is a mapping",
        pod(tolerations={"key": "k"}),  # type: ignore[arg-type]
        [
            (
                "spec.tolerations",
                "spec.tolerations: Invalid value: object: must be a list of tolerations",
            )
        ],
    ),
    (
        "an entry that is a string, next to a valid one",
        pod(tolerations=["k=v:NoSchedule", tol("ok", "Exists")]),
        [(T0, f'{T0}: Invalid value: "k=v:NoSchedule": must be a toleration object')],
    ),
    (
        "an entry that is a list",
        pod(tolerations=[["k"]]),
        [(T0, f"{T0}: Invalid value: array: must be a toleration object")],
    ),
    (
        "a null entry decodes to the empty toleration, which needs Exists",
        pod(tolerations=[None]),
        [(f"{T0}.operator", f'{T0}.operator: Invalid value: "": {EMPTY_KEY}')],
    ),
    (
        "a numeric key is not a string and no key rule is applied",
        pod(tolerations=[{"key": 5, "operator": "Equal", "value": "v"}]),
        [(f"{T0}.key", f"{T0}.key: Invalid value: 5: must be a string")],
    ),
    (
        "a boolean value is not a string, and the other rules still run",
        pod(tolerations=[{"key": "k", "operator": "In", "value": True, "effect": "Bogus"}]),
        [
            (f"{T0}.value", f"{T0}.value: Invalid value: true: must be a string"),
            (f"{T0}.effect", f'{T0}.effect: Unsupported value: "Bogus": {EFFECTS}'),
        ],
    ),
    (
        "a mapping operator is not a string",
        pod(tolerations=[{"key": "k", "operator": {"Exists": True}}]),
        [(f"{T0}.operator", f"{T0}.operator: Invalid value: object: must be a string")],
    ),
    (
        "fractional tolerationSeconds are not an integer",
        pod(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 1.5}]),
        [
            (
                f"{T0}.tolerationSeconds",
                f"{T0}.tolerationSeconds: Invalid value: 1.5: must be an integer",
            )
        ],
    ),
    (
        "quoted tolerationSeconds are not an integer",
        pod(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": "60"}]),
        [
            (
                f"{T0}.tolerationSeconds",
                f'{T0}.tolerationSeconds: Invalid value: "60": must be an integer',
            )
        ],
    ),
    (
        "boolean tolerationSeconds are not an integer",
        pod(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": True}]),
        [
            (
                f"{T0}.tolerationSeconds",
                f"{T0}.tolerationSeconds: Invalid value: true: must be an integer",
            )
        ],
    ),
    (
        "tolerationSeconds beyond 64 bits are refused",
        pod(
            tolerations=[
                {
                    "key": "k",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 2**63,
                }
            ]
        ),
        [(f"{T0}.tolerationSeconds", f"{T0}.tolerationSeconds: Invalid value: {2**63}: {INT64}")],
    ),
    (
        "tolerationSeconds too long to print are named by their type",
        pod(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 10**5000}]),
        [(f"{T0}.tolerationSeconds", f"{T0}.tolerationSeconds: Invalid value: integer: {INT64}")],
    ),
    (
        "null fields are Go's zero values",
        pod(
            tolerations=[
                {
                    "key": "k",
                    "operator": "Exists",
                    "value": None,
                    "effect": None,
                    "tolerationSeconds": None,
                }
            ]
        ),
        [],
    ),
    (
        "a pod spec that is not an object",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": "oops"},
        [("spec", 'spec: Invalid value: "oops": must be an object')],
    ),
    (
        "a pod without a spec has nothing to check",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        [],
    ),
    (
        "a taint list that is a mapping",
        node({"key": "k"}),
        [("spec.taints", "spec.taints: Invalid value: object: must be a list of taints")],
    ),
    (
        "a taint entry that is a string",
        node(["k=v:NoSchedule"]),
        [(N0, f'{N0}: Invalid value: "k=v:NoSchedule": must be a taint object')],
    ),
    (
        "a numeric taint key skips the key and duplicate rules",
        node([{"key": 1, "effect": "NoSchedule"}, {"key": 1, "effect": "NoSchedule"}]),
        [
            (f"{N0}.key", f"{N0}.key: Invalid value: 1: must be a string"),
            (f"{N1}.key", f"{N1}.key: Invalid value: 1: must be a string"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [(o, e) for _, o, e in MALFORMED_CASES],
    ids=[f"{i} is reported, not a crash" for i, _, _ in MALFORMED_CASES],
)
def test_malformed_shapes(obj: dict[str, Any], expected: Errors) -> None:
    assert found(obj) == expected


def test_a_workload_whose_template_is_not_an_object() -> None:
    obj = workload("Deployment", [])
    obj["spec"]["template"] = ["not", "a", "template"]
    assert found(obj) == [
        ("spec.template", "spec.template: Invalid value: array: must be an object")
    ]


# --- comparison operators (v1.35 alpha gate TaintTolerationComparisonOperators) ---------------

ON = Settings(comparison_operators=True)

COMPARISON_CASES: list[tuple[str, dict[str, Any], Errors]] = [
    ("Gt with a positive integer is valid", tol("sla", "Gt", "950", "NoSchedule"), []),
    ("Lt with a negative integer is valid", tol("sla", "Lt", "-5"), []),
    ("zero is valid", tol("sla", "Lt", "0"), []),
    ("the int64 maximum is valid", tol("sla", "Gt", str(2**63 - 1)), []),
    ("the int64 minimum is valid", tol("sla", "Lt", str(-(2**63))), []),
    ("a leading zero is refused", tol("sla", "Gt", "0700"), [f'"0700": {CANONICAL}']),
    ("a plus sign is refused", tol("sla", "Gt", "+1"), [f'"+1": {CANONICAL}']),
    ("minus zero is refused", tol("sla", "Gt", "-0"), [f'"-0": {CANONICAL}']),
    ("a fraction is refused", tol("sla", "Lt", "1.5"), [f'"1.5": {CANONICAL}']),
    ("a word is refused", tol("sla", "Lt", "high"), [f'"high": {CANONICAL}']),
    ("non-ASCII digits are refused", tol("sla", "Lt", "١٢"), [f'"١٢": {CANONICAL}']),
    ("an empty value is refused", tol("sla", "Gt"), ['"": must be non-empty']),
    ("a value past int64 is refused", tol("sla", "Gt", str(2**63)), [f'"{2**63}": {INT64}']),
    (
        "a value below int64 is refused",
        tol("sla", "Lt", str(-(2**63) - 1)),
        [f'"{-(2**63) - 1}": {INT64}'],
    ),
    ("a 5000-digit value is refused", tol("sla", "Gt", "9" * 5000), [f'"{"9" * 5000}": {INT64}']),
    (
        "Lt with an empty key still needs Exists",
        tol(operator="Lt", value="5"),
        [f'"Lt": {EMPTY_KEY}'],
    ),
]


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [(t, e) for _, t, e in COMPARISON_CASES],
    ids=[i for i, _, _ in COMPARISON_CASES],
)
def test_comparison_operators_when_enabled(toleration: dict[str, Any], expected: list[str]) -> None:
    assert found(pod(tolerations=[toleration]), ON) == [
        (f"{T0}.operator", f"{T0}.operator: Invalid value: {tail}") for tail in expected
    ]


def test_unknown_operators_list_all_four_when_comparisons_are_enabled() -> None:
    assert found(pod(tolerations=[tol("k", "In", "x")]), ON) == [
        (f"{T0}.operator", f'{T0}.operator: Unsupported value: "In": {ALL_OPERATORS}')
    ]


def test_comparison_operators_stay_case_sensitive() -> None:
    assert found(pod(tolerations=[tol("k", "gt", "1")]), ON) == [
        (f"{T0}.operator", f'{T0}.operator: Unsupported value: "gt": {ALL_OPERATORS}')
    ]


LT = tol("sla", "Lt", "100")
EQ = tol("sla", "Equal", "100")

RATCHET_CASES: list[tuple[str, str, list[Any] | None, list[Any], Errors]] = [
    ("an UPDATE whose old pod used Lt may keep it", "UPDATE", [LT], [LT], []),
    ("an UPDATE whose old pod used Gt may switch to Lt", "UPDATE", [tol("s", "Gt", "1")], [LT], []),
    (
        "a ratcheted value must still be a canonical integer",
        "UPDATE",
        [LT],
        [tol("sla", "Lt", "0100")],
        [(f"{T0}.operator", f'{T0}.operator: Invalid value: "0100": {CANONICAL}')],
    ),
    (
        "an UPDATE whose old pod used only Equal may not add Lt",
        "UPDATE",
        [EQ],
        [LT],
        [(f"{T0}.operator", f'{T0}.operator: Unsupported value: "Lt": {OPERATORS}')],
    ),
    (
        "a CREATE never ratchets",
        "CREATE",
        None,
        [LT],
        [(f"{T0}.operator", f'{T0}.operator: Unsupported value: "Lt": {OPERATORS}')],
    ),
]


@pytest.mark.parametrize(
    ("operation", "old", "new", "expected"),
    [c[1:] for c in RATCHET_CASES],
    ids=[c[0] for c in RATCHET_CASES],
)
def test_comparison_operators_ratchet_on_update(
    operation: str, old: list[Any] | None, new: list[Any], expected: Errors
) -> None:
    old_obj = None if old is None else pod(tolerations=old)
    assert found(pod(tolerations=new), operation=operation, old=old_obj) == expected


def test_the_ratchet_reads_the_old_objects_pod_template() -> None:
    old, new = workload("CronJob", [LT]), workload("CronJob", [LT, tol("x", "Gt", "2")])
    assert found(new, operation="UPDATE", old=old) == []
    assert found(new, operation="UPDATE", old=workload("CronJob", [EQ])) != []


def test_comparison_operators_are_configured_with_the_camel_case_key() -> None:
    config = load_config({"plugins": {PLUGIN.name: {"comparisonOperators": True}}}, REGISTRY)
    assert config.settings(PLUGIN.name) == ON
    obj = pod(tolerations=[LT])
    assert reviews.decide(obj, config=config, phases=("validate",)).allowed
    assert not reviews.decide(obj, phases=("validate",)).allowed


# --- scope ---------------------------------------------------------------------------------


def test_the_plugin_declares_pods_every_pod_template_and_nodes() -> None:
    half = PLUGIN.validate
    assert half is not None and PLUGIN.mutate is None
    expected = {(RESOURCES[k][0], RESOURCES[k][2]) for k in [*PATHS, "Node"]}
    assert set(half.resources) == expected
    assert half.operations == {"CREATE", "UPDATE"}


# --- kept answers --------------------------------------------------------------------------


def test_a_repeated_toleration_is_answered_at_its_own_path_under_its_own_gate() -> None:
    """A well-formed toleration's errors are kept per value (webhooks/k8s/validation.py);
    the same toleration must still be reported at its own index, under the gate of its own
    review, and an answer a caller changes must not change the next one."""
    bad = tol("bad key", "Lt", "0700", "NoSchedule", 5)
    first = found(pod(tolerations=[bad]))
    assert [f for f, _ in first] == [f"{T0}.key", f"{T0}.effect", f"{T0}.operator"]
    second = found(pod(tolerations=[EQ, bad]))
    assert second == [(f.replace("[0]", "[1]"), m.replace("[0]", "[1]")) for f, m in first]
    gated = found(pod(tolerations=[bad]), ON)
    assert gated[-1] == (f"{T0}.operator", f'{T0}.operator: Invalid value: "0700": {CANONICAL}')
    errors = toleration_errors([bad], "spec.tolerations")
    errors.clear()
    assert found(pod(tolerations=[bad])) == first


def test_fields_too_long_to_keep_are_still_checked() -> None:
    long_key = "a" * 600
    too_long = "name part must be no more than 63 characters"
    expected = [(f"{T0}.key", f'{T0}.key: Invalid value: "{long_key}": {too_long}')]
    assert found(pod(tolerations=[tol(long_key, "Exists")])) == expected
    assert found(pod(tolerations=[tol(long_key, "Exists")])) == expected
