"""runtime-class mirrors the RuntimeClass admission plugin (spec §5), upstream tables first."""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest

from tests import reviews
from tests.reviews import apply, container, owned_by, pod, request, review, tol
from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.patch import Editor
from webhooks.core.plugin import PHASES, Context, Phase
from webhooks.core.result import Outcome
from webhooks.plugins import REGISTRY
from webhooks.plugins.runtime_class import (
    OVERHEAD_MISMATCH,
    OVERHEAD_WITHOUT_RUNTIME_CLASS,
    Settings,
    forbidden,
    mutate,
    set_overhead,
    set_scheduling,
    validate,
    validate_overhead,
)
from webhooks.server.replies import review_reply

CONFIG = load_config(None, REGISTRY)
SMALL = {"cpu": "100m", "memory": "1"}  # upstream's pod overhead in these tables
LARGE = {"cpu": "10", "memory": "10G"}
FOO_BAR = tol("foo", "Equal", "bar", "NoSchedule")
FIZZ_BUZZ = tol("fizz", "Equal", "buzz", "NoSchedule")
MISMATCH = f'pods "web" is forbidden: {OVERHEAD_MISMATCH}'
WITHOUT = f'pods "web" is forbidden: {OVERHEAD_WITHOUT_RUNTIME_CLASS}'


def runtime_class(
    name: str = "foo",
    overhead: dict[str, Any] | None = None,
    scheduling: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A RuntimeClass as the API returns it (node.k8s.io/v1), handler ``bar``."""
    obj: dict[str, Any] = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "bar",
    }
    if overhead is not None:
        obj["overhead"] = {"podFixed": overhead}
    if scheduling is not None:
        obj["scheduling"] = scheduling
    return obj


GUARANTEED = {"requests": {"cpu": "1", "memory": "10"}, "limits": {"cpu": "1", "memory": "10"}}


def overhead_pod(
    overhead: dict[str, Any] | None = None,
    *,
    resources: dict[str, Any] | None = None,
    rc: str | None = None,
) -> dict[str, Any]:
    """Upstream's one-container overhead test pod, optionally naming a RuntimeClass."""
    spec: dict[str, Any] = {}
    if overhead is not None:
        spec["overhead"] = overhead
    if rc is not None:
        spec["runtimeClassName"] = rc
    return pod(
        containers=[{"name": "foo-0", "image": "foo:V0", "resources": resources or {}}], **spec
    )


def scheduling_pod(
    selector: dict[str, str] | None = None, tolerations: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Upstream's scheduling test pod: a nodeSelector and tolerations, each maybe absent."""
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["nodeSelector"] = selector
    return pod(tolerations=tolerations, **spec)


def decide(obj: dict[str, Any], *rcs: dict[str, Any], **kw: Any) -> Outcome:
    """Both halves of runtime-class, mutating then validating, as the API server calls them."""
    return reviews.decide(obj, config=CONFIG, cluster=rcs, only="runtime-class", **kw)


# --------------------------------------------------------------------------- TestSetOverhead

SET_OVERHEAD: list[
    tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None, str | None]
] = [
    (
        "overhead, no container requirements: the overhead is set",
        runtime_class(overhead=SMALL),
        overhead_pod(),
        SMALL,
        None,
    ),
    (
        "overhead, guaranteed pod: the overhead is set and requests are untouched",
        runtime_class(overhead=SMALL),
        overhead_pod(resources=GUARANTEED),
        SMALL,
        None,
    ),
    (
        "overhead, pod with differing overhead already set: refused",
        runtime_class(overhead=LARGE),
        overhead_pod(SMALL),
        None,
        OVERHEAD_MISMATCH,
    ),
    (
        "overhead, pod with same overhead already set: accepted as is",
        runtime_class(overhead=SMALL),
        overhead_pod(SMALL),
        SMALL,
        None,
    ),
    (
        "an empty overhead map counts as unset and is overwritten",
        runtime_class(overhead=SMALL),
        overhead_pod({}),
        SMALL,
        None,
    ),
    (
        "an equal overhead written differently takes the RuntimeClass's spelling",
        runtime_class(overhead={"cpu": "100m", "memory": "1Ki"}),
        overhead_pod({"cpu": "0.1", "memory": "1024"}),
        {"cpu": "100m", "memory": "1Ki"},
        None,
    ),
    (
        "1000m in the pod equals 1 in the RuntimeClass",
        runtime_class(overhead={"cpu": "1"}),
        overhead_pod({"cpu": "1000m"}),
        {"cpu": "1"},
        None,
    ),
    (
        "a resource missing from the pod's overhead is a mismatch",
        runtime_class(overhead=SMALL),
        overhead_pod({"cpu": "100m"}),
        None,
        OVERHEAD_MISMATCH,
    ),
    (
        "a RuntimeClass without overhead leaves the pod's overhead alone",
        runtime_class(),
        overhead_pod(SMALL),
        SMALL,
        None,
    ),
    (
        "an empty podFixed leaves a pod without overhead unchanged",
        runtime_class(overhead={}),
        overhead_pod(),
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("rc", "obj", "overhead", "reason"),
    [row[1:] for row in SET_OVERHEAD],
    ids=[row[0] for row in SET_OVERHEAD],
)
def test_set_overhead(
    rc: dict[str, Any], obj: dict[str, Any], overhead: dict[str, Any] | None, reason: str | None
) -> None:
    before = copy.deepcopy(obj)
    editor = Editor(obj)
    assert set_overhead(editor, rc) == reason
    if reason is None:
        assert editor.obj["spec"].get("overhead") == overhead
        assert editor.obj["spec"]["containers"] == before["spec"]["containers"]
        assert apply(before, editor.patch) == editor.obj
    assert obj == before


def test_an_equal_overhead_in_another_spelling_is_replaced_in_one_operation() -> None:
    obj = overhead_pod({"cpu": "0.1", "memory": "1"})
    editor = Editor(obj)
    set_overhead(editor, runtime_class(overhead=SMALL))
    assert editor.patch == [{"op": "replace", "path": "/spec/overhead", "value": SMALL}]


# --------------------------------------------------------------------------- TestSetScheduling

SET_SCHEDULING: list[
    tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None, list[Any] | None, str | None]
] = [
    (
        "scheduling, nil scheduling: nothing changes",
        runtime_class(),
        scheduling_pod({"foo": "bar"}, []),
        {"foo": "bar"},
        [],
        None,
    ),
    (
        "scheduling, conflict node selector: refused naming both values",
        runtime_class(scheduling={"nodeSelector": {"foo": "conflict"}}),
        scheduling_pod({"foo": "bar"}, []),
        None,
        None,
        "conflict: runtimeClass.scheduling.nodeSelector[foo] = conflict; "
        "pod.spec.nodeSelector[foo] = bar",
    ),
    (
        "scheduling, nil node selector: the pod adopts the RuntimeClass's",
        runtime_class(scheduling={"nodeSelector": {"foo": "bar"}}),
        scheduling_pod(),
        {"foo": "bar"},
        None,
        None,
    ),
    (
        "scheduling, node selector with the same key value: unchanged",
        runtime_class(scheduling={"nodeSelector": {"foo": "bar"}}),
        scheduling_pod({"foo": "bar"}),
        {"foo": "bar"},
        None,
        None,
    ),
    (
        "scheduling, node selector with different key value: the keys are merged",
        runtime_class(scheduling={"nodeSelector": {"foo": "bar", "fizz": "buzz"}}),
        scheduling_pod({"foo": "bar"}),
        {"foo": "bar", "fizz": "buzz"},
        None,
        None,
    ),
    (
        "scheduling, multiple tolerations: the duplicate is kept once",
        runtime_class(scheduling={"tolerations": [FOO_BAR, FIZZ_BUZZ]}),
        scheduling_pod({"foo": "bar"}, [FOO_BAR]),
        {"foo": "bar"},
        [FOO_BAR, FIZZ_BUZZ],
        None,
    ),
    (
        "an empty pod selector is merged into",
        runtime_class(scheduling={"nodeSelector": {"foo": "bar"}}),
        scheduling_pod({}),
        {"foo": "bar"},
        None,
        None,
    ),
    (
        "of several conflicting keys the first in sorted order is reported",
        runtime_class(scheduling={"nodeSelector": {"zone": "b", "arch": "arm64"}}),
        scheduling_pod({"zone": "a", "arch": "amd64"}),
        None,
        None,
        "conflict: runtimeClass.scheduling.nodeSelector[arch] = arm64; "
        "pod.spec.nodeSelector[arch] = amd64",
    ),
    (
        "scheduling without tolerations still collapses the pod's redundant tolerations",
        runtime_class(scheduling={}),
        scheduling_pod(None, [FOO_BAR, tol("foo", "Exists", effect="NoSchedule"), FOO_BAR]),
        None,
        [tol("foo", "Exists", effect="NoSchedule")],
        None,
    ),
    (
        "a broader RuntimeClass toleration replaces the pod's narrower one",
        runtime_class(scheduling={"tolerations": [tol("foo", "Exists")]}),
        scheduling_pod(None, [FOO_BAR, FIZZ_BUZZ]),
        None,
        [FIZZ_BUZZ, tol("foo", "Exists")],
        None,
    ),
    (
        "RuntimeClass tolerations come after the pod's survivors",
        runtime_class(scheduling={"tolerations": [FIZZ_BUZZ]}),
        scheduling_pod(None, [FOO_BAR]),
        None,
        [FOO_BAR, FIZZ_BUZZ],
        None,
    ),
    (
        "a pod without tolerations gets no empty list",
        runtime_class(scheduling={"nodeSelector": {"foo": "bar"}}),
        scheduling_pod(),
        {"foo": "bar"},
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("rc", "obj", "selector", "tolerations", "reason"),
    [row[1:] for row in SET_SCHEDULING],
    ids=[row[0] for row in SET_SCHEDULING],
)
def test_set_scheduling(
    rc: dict[str, Any],
    obj: dict[str, Any],
    selector: dict[str, Any] | None,
    tolerations: list[Any] | None,
    reason: str | None,
) -> None:
    before = copy.deepcopy(obj)
    editor = Editor(obj)
    assert set_scheduling(editor, rc) == reason
    if reason is None:
        assert editor.obj["spec"].get("nodeSelector") == selector
        assert editor.obj["spec"].get("tolerations") == tolerations
        assert apply(before, editor.patch) == editor.obj
    else:
        assert editor.patch == []
    assert obj == before


def test_a_selector_key_with_a_slash_is_escaped_in_the_patch() -> None:
    rc = runtime_class(scheduling={"nodeSelector": {"kubernetes.io/arch": "arm64"}})
    obj = scheduling_pod({"tier": "web"})
    editor = Editor(obj)
    set_scheduling(editor, rc)
    assert editor.patch == [
        {"op": "add", "path": "/spec/nodeSelector/kubernetes.io~1arch", "value": "arm64"}
    ]


def test_the_pods_tolerations_are_edited_not_replaced() -> None:
    rc = runtime_class(scheduling={"tolerations": [FIZZ_BUZZ]})
    obj = scheduling_pod(None, [FOO_BAR])
    editor = Editor(obj)
    set_scheduling(editor, rc)
    assert editor.patch == [{"op": "add", "path": "/spec/tolerations/-", "value": FIZZ_BUZZ}]


# ----------------------------------------------------------------------- TestValidateOverhead

# Upstream's nine rows. As pure checks they take the RuntimeClass directly; as the full
# flow the pod names the RuntimeClass (upstream's TestValidate never does, spec §5c), the
# mutating half runs first, and the answer is what the API server would return.
VALIDATE: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None, str | None, str | None]] = [
    (
        "Overhead part of RuntimeClass, no Overhead defined in pod",
        runtime_class(overhead=SMALL),
        None,
        None,
        None,
    ),
    (
        "No Overhead in RuntimeClass, Overhead set in pod",
        runtime_class(),
        SMALL,
        OVERHEAD_WITHOUT_RUNTIME_CLASS,
        WITHOUT,
    ),
    ("No RuntimeClass, Overhead set in pod", None, SMALL, OVERHEAD_WITHOUT_RUNTIME_CLASS, WITHOUT),
    ("No RuntimeClass, empty Overhead set in pod", None, {}, None, None),
    ("No RuntimeClass, Overhead is nil in pod", None, None, None, None),
    ("Non-matching Overheads", runtime_class(overhead=LARGE), SMALL, OVERHEAD_MISMATCH, MISMATCH),
    (
        "RuntimeClass is set, empty Overhead is in pod",
        runtime_class(overhead=LARGE),
        {},
        None,
        None,
    ),
    (
        "RuntimeClass is set, Overhead is nil in pod",
        runtime_class(overhead=LARGE),
        None,
        None,
        None,
    ),
    ("Matching Overheads", runtime_class(overhead=SMALL), SMALL, None, None),
]


@pytest.mark.parametrize(
    ("rc", "overhead", "reason"),
    [(rc, o, r) for _, rc, o, r, _ in VALIDATE],
    ids=[row[0] for row in VALIDATE],
)
def test_validate_overhead(
    rc: dict[str, Any] | None, overhead: dict[str, Any] | None, reason: str | None
) -> None:
    assert validate_overhead(overhead, rc) == reason


@pytest.mark.parametrize(
    ("rc", "overhead", "message"),
    [(rc, o, m) for _, rc, o, _, m in VALIDATE],
    ids=[f"{row[0]}, as the full flow" for row in VALIDATE],
)
def test_validate_overhead_full_flow(
    rc: dict[str, Any] | None, overhead: dict[str, Any] | None, message: str | None
) -> None:
    obj = overhead_pod(
        overhead, resources=GUARANTEED, rc=None if rc is None else rc["metadata"]["name"]
    )
    outcome = decide(obj, *([rc] if rc is not None else []))
    if message is not None:
        assert not outcome.allowed
        assert (outcome.code, outcome.reason, outcome.message) == (403, "Forbidden", message)
        return
    assert outcome.allowed, outcome.message
    assert outcome.obj is not None
    fixed = None if rc is None else rc["overhead"]["podFixed"]
    assert outcome.obj["spec"].get("overhead") == (fixed if fixed is not None else overhead)
    assert apply(obj, outcome.patch) == outcome.obj


# ------------------------------------------------------------------------------- TestAdmit


def test_admit_a_runtime_class_that_exists() -> None:
    obj = pod(name="podname", runtimeClassName="runtimeClassName")
    outcome = decide(obj, runtime_class("runtimeClassName"), operation="CREATE")
    assert outcome.allowed
    assert outcome.patch == []


def test_admit_a_runtime_class_that_does_not_exist() -> None:
    obj = pod(name="podname", runtimeClassName="runtimeClassName")
    outcome = decide(obj)
    assert not outcome.allowed
    assert (outcome.code, outcome.reason) == (403, "Forbidden")
    assert outcome.message == (
        'pods "podname" is forbidden: pod rejected: RuntimeClass "runtimeClassName" not found'
    )
    assert outcome.violations[0].field == "spec.runtimeClassName"


def test_the_validating_half_alone_also_refuses_a_missing_runtime_class() -> None:
    obj = pod(runtimeClassName="missing")
    outcome = decide(obj, phases=("validate",))
    assert (
        outcome.message == 'pods "web" is forbidden: pod rejected: RuntimeClass "missing" not found'
    )


def test_a_pod_without_runtime_class_name_is_left_alone() -> None:
    obj = pod(overhead={})
    outcome = decide(obj)
    assert outcome.allowed and outcome.patch == []


# ------------------------------------------------------------------- scope and naming (§0)


@pytest.mark.parametrize(
    "phase",
    ["mutate", "validate"],
    ids=["the mutating half ignores UPDATE", "the validating half ignores UPDATE"],
)
def test_update_is_never_touched_because_overhead_is_immutable(phase: Phase) -> None:
    obj = overhead_pod(SMALL, rc="foo")
    rc = runtime_class(overhead=LARGE)
    outcome = decide(obj, rc, phases=(phase,), operation="UPDATE", old=obj)
    assert outcome.allowed and outcome.patch == []


NAMES: list[tuple[str, str, dict[str, Any], str]] = [
    ("the request's name comes first", "from-request", {"name": "from-object"}, "from-request"),
    ("then the object's name", "", {"name": "from-object", "generateName": "gen-"}, "from-object"),
    ("then the object's generateName", "", {"generateName": "web-"}, "web-"),
    ("otherwise Unknown", "", {}, "Unknown"),
]


@pytest.mark.parametrize(
    ("request_name", "meta", "shown"),
    [row[1:] for row in NAMES],
    ids=[row[0] for row in NAMES],
)
def test_forbidden_messages_name_the_pod_like_admission_new_forbidden(
    request_name: str, meta: dict[str, Any], shown: str
) -> None:
    obj = pod()
    obj["metadata"] = meta
    req = request(obj)._replace(name=request_name)
    violation = forbidden(req, obj, "pod rejected: reason")
    assert violation.message == f'pods "{shown}" is forbidden: pod rejected: reason'
    assert (violation.code, violation.reason) == (403, "Forbidden")


def test_a_generate_name_pod_is_named_by_its_prefix_end_to_end() -> None:
    obj = overhead_pod(SMALL)
    obj["metadata"] = {"generateName": "batch-", "namespace": "default"}
    outcome = decide(obj)
    assert outcome.message == f'pods "batch-" is forbidden: {OVERHEAD_WITHOUT_RUNTIME_CLASS}'


# ----------------------------------------------------------------------- the whole mutation


def test_overhead_then_scheduling_in_one_patch_with_an_audit_note() -> None:
    rc = runtime_class(
        "gvisor",
        overhead={"cpu": "250m", "memory": "120Mi"},
        scheduling={
            "nodeSelector": {"sandbox.example.com/runtime": "gvisor"},
            "tolerations": [tol("sandbox.example.com/runtime", "Equal", "gvisor", "NoSchedule")],
        },
    )
    obj = pod(runtimeClassName="gvisor")
    result = mutate(request(obj), obj, Context(Settings(), StaticCluster([rc])))
    assert result.violations == ()
    assert result.patch == [
        {"op": "add", "path": "/spec/overhead", "value": {"cpu": "250m", "memory": "120Mi"}},
        {
            "op": "add",
            "path": "/spec/nodeSelector",
            "value": {"sandbox.example.com/runtime": "gvisor"},
        },
        {
            "op": "add",
            "path": "/spec/tolerations",
            "value": [tol("sandbox.example.com/runtime", "Equal", "gvisor", "NoSchedule")],
        },
    ]
    assert result.audit == {
        "runtime-class": 'RuntimeClass "gvisor" set overhead, nodeSelector, tolerations'
    }
    assert result.obj is not None
    again = mutate(request(result.obj), result.obj, Context(Settings(), StaticCluster([rc])))
    assert again.patch == [] and again.violations == ()


def test_a_selector_conflict_discards_the_overhead_already_set() -> None:
    rc = runtime_class(overhead=SMALL, scheduling={"nodeSelector": {"foo": "conflict"}})
    obj = overhead_pod(rc="foo")
    obj["spec"]["nodeSelector"] = {"foo": "bar"}
    outcome = decide(obj, rc)
    assert not outcome.allowed
    assert outcome.patch == []
    assert outcome.message.startswith('pods "web" is forbidden: conflict: ')
    assert outcome.violations[0].field == "spec.nodeSelector"


def test_the_merge_runs_last_in_the_chain_and_absorbs_earlier_tolerations() -> None:
    rc = runtime_class(
        scheduling={
            "tolerations": [tol("node.kubernetes.io/not-ready", "Exists", effect="NoExecute")]
        }
    )
    obj = pod(runtimeClassName="foo")
    admission = Admission(REGISTRY, CONFIG, StaticCluster([rc]))
    outcome = admission.decide(request(obj), PHASES)
    assert outcome.allowed
    assert outcome.obj is not None
    assert outcome.obj["spec"]["tolerations"] == [
        tol("node.kubernetes.io/unreachable", "Exists", effect="NoExecute", seconds=300),
        tol("node.kubernetes.io/not-ready", "Exists", effect="NoExecute"),
    ]
    again = admission.decide(request(outcome.obj), PHASES)
    assert again.allowed and again.patch == []


REINVOKED = [
    (
        "an extended-resource toleration under a tolerate-everything entry",
        pod(
            runtimeClassName="foo",
            tolerations=[tol(operator="Exists")],
            containers=[container(requests={"nvidia.com/gpu": "1"})],
        ),
        runtime_class(scheduling={}),
    ),
    (
        "an extended-resource toleration under the RuntimeClass's own wildcard",
        pod(runtimeClassName="foo", containers=[container(requests={"example.com/dongle": "1"})]),
        runtime_class(scheduling={"tolerations": [tol(operator="Exists", effect="NoSchedule")]}),
    ),
    (
        "a null nodeSelector value from an offline RuntimeClass (YAML `key:`)",
        pod(runtimeClassName="foo"),
        runtime_class(scheduling={"nodeSelector": {"example.com/pool": None}}),
    ),
]


@pytest.mark.parametrize(
    ("obj", "rc"), [(o, r) for _, o, r in REINVOKED], ids=[i for i, _, _ in REINVOKED]
)
def test_the_chain_on_its_own_output_leaves_no_patch(
    obj: dict[str, Any], rc: dict[str, Any]
) -> None:
    admission = Admission(REGISTRY, CONFIG, StaticCluster([rc]))
    first = admission.decide(request(obj), PHASES)
    assert first.allowed
    assert first.obj is not None
    again = admission.decide(request(first.obj), PHASES)
    assert again.allowed
    assert (again.patch, again.changed_by, dict(again.audit_annotations)) == ([], (), {})


# ------------------------------------------------------------------------ malformed input


def test_an_unparsable_pod_overhead_is_a_bad_request_naming_the_field() -> None:
    obj = overhead_pod({"cpu": "lots"}, rc="foo")
    outcome = decide(obj, runtime_class(overhead=SMALL))
    assert (outcome.code, outcome.reason) == (400, "BadRequest")
    assert outcome.message.startswith('spec.overhead[cpu]: Invalid value: "lots": quantities must')
    assert outcome.violations[0].field == "spec.overhead[cpu]"


def test_an_unparsable_runtime_class_overhead_is_an_internal_error() -> None:
    obj = overhead_pod(rc="foo")
    outcome = decide(obj, runtime_class(overhead={"cpu": "a lot"}))
    assert (outcome.code, outcome.reason) == (500, "InternalError")
    assert outcome.message.startswith('RuntimeClass "foo" has an unusable overhead.podFixed: cpu:')


def test_a_non_string_runtime_class_name_is_a_bad_request() -> None:
    obj = pod(runtimeClassName=7)
    outcome = decide(obj)
    assert (outcome.code, outcome.reason) == (400, "BadRequest")
    assert outcome.message == "spec.runtimeClassName: Invalid value: 7: must be a string"


def test_the_halves_ignore_a_pod_without_a_spec() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}
    ctx = Context(Settings(), StaticCluster())
    assert mutate(request(obj), obj, ctx).obj is None
    assert validate(request(obj), obj, ctx) == []


def test_containers_are_irrelevant_to_overhead() -> None:
    obj = overhead_pod(rc="foo", resources={"requests": {"cpu": "64"}})
    obj["spec"]["initContainers"] = [container(requests={"memory": "1Ti"})]
    outcome = decide(obj, runtime_class(overhead=SMALL))
    assert outcome.allowed
    assert outcome.patch == [{"op": "add", "path": "/spec/overhead", "value": SMALL}]


def test_a_merge_made_possible_by_the_later_daemonset_defaults_is_made_in_the_same_answer() -> None:
    # The DaemonSet defaults come after RuntimeClass; their infinite not-ready entry makes
    # the pod's own one redundant, which the chain, reinvoked as the API server would after
    # a webhook's change, merges away before answering.
    own = tol("node.kubernetes.io/not-ready", "", effect="NoExecute", seconds=0)
    obj = owned_by(pod(runtimeClassName="foo", tolerations=[own]))
    admission = Admission(REGISTRY, CONFIG, StaticCluster([runtime_class(scheduling={})]))
    first = admission.decide(request(obj), PHASES)
    assert first.obj is not None and own not in first.obj["spec"]["tolerations"]
    assert apply(obj, first.patch) == first.obj
    assert admission.decide(request(first.obj), PHASES).patch == []


def test_a_merge_that_moves_a_toleration_nested_past_the_encoder_is_a_denial_not_a_crash() -> None:
    # old [A, B] → new [B, R] is cheapest as two replaces, so the patch carries B's deep field.
    deep: Any = "bottom"
    for _ in range(600):
        deep = [deep]
    subsumed = tol("k", "Equal", "v")
    kept = {**tol("k", "Exists"), "extra": deep}
    rc = runtime_class(scheduling={"tolerations": [tol("r", "Exists")]})
    body = json.dumps(review(pod(runtimeClassName="foo", tolerations=[subsumed, kept]))).encode()
    admission = Admission(REGISTRY, CONFIG, StaticCluster([rc]))
    reply = review_reply(admission, body, ("mutate",), "runtime-class")
    assert reply.status == 200
    assert reply.outcome is not None and reply.outcome.code == 500
    answer = orjson.loads(reply.body)["response"]
    assert answer["allowed"] is False and "patch" not in answer
    assert "cannot be encoded as JSON (Recursion limit reached)" in answer["status"]["message"]
