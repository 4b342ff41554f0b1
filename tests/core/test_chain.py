"""The chain: order, phases, stopping rules and failure handling."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from tests import reviews
from tests.counting import Comparisons, Counted
from tests.reviews import apply, pod, request
from webhooks.core.admission import Admission
from webhooks.core.chain import MAX_PASSES, _Progress, resolve, run_chain
from webhooks.core.config import load_config
from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, LookupFailure, Mutator, Plugin, Registry, Validator
from webhooks.core.result import Result, Violation
from webhooks.core.review import AdmissionRequest

ALL = frozenset({"CREATE", "UPDATE"})


@dataclass(frozen=True)
class Nothing:
    """No settings."""


def _labeller(label: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        seen = editor.get(("metadata", "labels", "seen"), "")
        if label not in seen:  # leaves its own output alone, as every mutator must
            editor.set(("metadata", "labels", "seen"), seen + label)
        return Result(editor.obj, editor.patch)

    return Plugin(label, "adds a label", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def _validator(name: str, message: str | None, exc: Exception | None = None) -> Plugin:
    def validate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
        if exc is not None:
            raise exc
        return [Violation(message)] if message else []

    return Plugin(name, "checks", Nothing, validate=Validator(validate, frozenset({PODS}), ALL))


def _run(plugins: list[Plugin], obj: dict[str, Any] | None = None) -> Any:
    return reviews.decide(obj or pod(), registry=Registry(plugins))


def test_mutators_see_each_others_output_in_registry_order() -> None:
    outcome = _run([_labeller("a"), _labeller("b")])
    assert outcome.obj["metadata"]["labels"]["seen"] == "ab"
    assert outcome.changed_by == ("a", "b")


def test_validators_all_run_and_every_message_is_reported() -> None:
    outcome = _run([_validator("v1", "first"), _validator("v2", "second")])
    assert not outcome.allowed
    assert outcome.message == "[first, second]"
    assert outcome.denied_by == ("v1", "v2")
    assert outcome.code == 403


def test_a_lookup_failure_is_an_internal_error_status_not_an_exception() -> None:
    outcome = _run([_validator("v", None, LookupFailure("timed out after 2s"))])
    assert not outcome.allowed
    assert (outcome.code, outcome.reason) == (500, "InternalError")
    assert "timed out after 2s" in outcome.message


def test_a_plugin_bug_is_an_internal_error_naming_the_plugin() -> None:
    outcome = _run([_validator("buggy", None, KeyError("x"))])
    assert (outcome.code, outcome.reason) == (500, "InternalError")
    assert outcome.message.startswith("buggy: internal error: KeyError")


def test_a_subresource_request_is_left_alone() -> None:
    registry = Registry([_labeller("a")])
    config = load_config(None, registry)
    req = request(pod(), sub_resource="status", operation="UPDATE", old=pod())
    outcome = run_chain(req, resolve(registry, config, None).mutators)
    assert outcome.patch == [] and outcome.allowed


def _unlabeller(name: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        editor.remove(("metadata", "labels", "seen"))
        return Result(editor.obj, editor.patch, audit={name: "removed the label"})

    return Plugin(name, "removes a label", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def test_mutators_that_undo_each_other_leave_no_patch_and_name_no_plugin() -> None:
    outcome = _run([_labeller("a"), _unlabeller("b")])
    assert outcome.allowed
    assert (outcome.patch, outcome.changed_by, dict(outcome.audit_annotations)) == ([], (), {})
    assert outcome.obj == pod()


def _follower(label: str, after: str) -> Plugin:
    """Adds ``label`` once the label ``after`` is there (which a later plugin writes)."""

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        seen = editor.get(("metadata", "labels", "seen"), "")
        if after in seen and label not in seen:
            editor.set(("metadata", "labels", "seen"), seen + label)
        return Result(editor.obj, editor.patch)

    return Plugin(label, "follows", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def _negator(name: str, of: str) -> Plugin:
    """Sets label ``name`` to the opposite of label ``of``: paired with a copier, it never
    settles, though each plugin alone leaves its own output alone."""

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        other = editor.get(("metadata", "labels", of), "off")
        editor.set(("metadata", "labels", name), "on" if other == "off" else "off")
        return Result(editor.obj, editor.patch)

    return Plugin(name, "negates", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def _copier(name: str, of: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        editor.set(("metadata", "labels", name), editor.get(("metadata", "labels", of), "off"))
        return Result(editor.obj, editor.patch)

    return Plugin(name, "copies", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def _counted(plugin: Plugin, calls: list[str]) -> Plugin:
    assert plugin.mutate is not None
    run = plugin.mutate.run

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        calls.append(plugin.name)
        return run(req, obj, ctx)

    half = Mutator(mutate, plugin.mutate.resources, plugin.mutate.operations)
    return dataclasses.replace(plugin, mutate=half)


ONCE = [
    (
        "each plugin sees the output of the ones before it",
        [_labeller("a"), _follower("z", after="a")],
        "az",
    ),
    (
        "a plugin does not see what a later one writes, as in upstream's chain",
        [_follower("x", after="b"), _labeller("b"), _labeller("c")],
        "bc",
    ),
]


def _upstream(plugin: Plugin) -> Plugin:
    return dataclasses.replace(plugin, upstream=f"InTree{plugin.name}")


@pytest.mark.parametrize(
    ("plugins", "labels"), [(p, lb) for _, p, lb in ONCE], ids=[i for i, *_ in ONCE]
)
def test_upstreams_mutators_run_exactly_once_in_order(plugins: list[Plugin], labels: str) -> None:
    made: list[str] = []
    outcome = _run([_counted(_upstream(p), made) for p in plugins])
    assert outcome.obj["metadata"]["labels"]["seen"] == labels
    assert made == [p.name for p in plugins]


def test_a_change_by_one_of_ours_reinvokes_the_chain_as_the_api_server_would() -> None:
    made: list[str] = []
    plugins = [_upstream(_follower("x", after="b")), _labeller("b")]
    outcome = _run([_counted(p, made) for p in plugins])
    assert outcome.obj["metadata"]["labels"]["seen"] == "bx"
    assert made == ["x", "b", "x", "b"]  # the second pass changed none of ours: done
    assert apply(pod(), outcome.patch) == outcome.obj


REINVOKED = [
    (
        "one of ours is not reinvoked when nothing changed the object after its call",
        [_upstream(_labeller("a")), _labeller("b")],
        ["a", "b", "a"],
        "ab",
    ),
    (
        "one of ours is reinvoked when an in-tree plugin's second run changed the object",
        [_upstream(_follower("x", after="b")), _labeller("b")],
        ["x", "b", "x", "b"],
        "bx",
    ),
    (
        "one of ours is reinvoked when a later one of ours changed the object after its call",
        [_upstream(_labeller("a")), _labeller("b"), _labeller("c")],
        ["a", "b", "c", "a", "b"],
        "abc",
    ),
]


@pytest.mark.parametrize(
    ("plugins", "calls", "labels"),
    [(p, c, lb) for _, p, c, lb in REINVOKED],
    ids=[i for i, *_ in REINVOKED],
)
def test_ours_are_reinvoked_only_if_the_object_changed_since_their_call(
    plugins: list[Plugin], calls: list[str], labels: str
) -> None:
    """``reinvocation.go``: on the second round the API server calls a webhook again only
    when the object differs from what that webhook returned."""
    made: list[str] = []
    outcome = _run([_counted(p, made) for p in plugins])
    assert made == calls
    assert outcome.obj["metadata"]["labels"]["seen"] == labels
    assert apply(pod(), outcome.patch) == outcome.obj


def _bumper(name: str) -> Plugin:
    """Bumps a counter label on every call: one of ours that never leaves its output alone."""

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        count = int(editor.get(("metadata", "labels", name), "0"))
        editor.set(("metadata", "labels", name), str(count + 1))
        return Result(editor.obj, editor.patch)

    return Plugin(name, "bumps", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


AGAIN = [
    (
        "a chain whose second pass settled, and ours leave their output alone",
        [_upstream(_labeller("a")), _labeller("b")],
        True,
    ),
    (
        "a chain whose second pass settled, and one of ours changes its own output",
        [_upstream(_labeller("a")), _bumper("n")],
        True,
    ),
    ("a chain with no second pass", [_upstream(_labeller("a")), _upstream(_labeller("b"))], False),
    (
        "a chain whose second pass did not settle",
        [_upstream(_follower("x", after="b")), _labeller("b")],
        False,
    ),
]


@pytest.mark.parametrize(
    ("plugins", "settled"), [(p, s) for _, p, s in AGAIN], ids=[i for i, *_ in AGAIN]
)
def test_a_further_mutating_pass_changes_what_the_whole_chain_would_change(
    plugins: list[Plugin], settled: bool
) -> None:
    """``check``'s convergence test may try ours alone after a settled second pass; its
    patch and who made it must be the whole chain's, whatever our plugins do."""
    admission = Admission(Registry(plugins), load_config(None, Registry(plugins)))
    first = admission.decide(request(pod()), ("mutate", "validate"))
    assert first.settled is settled
    again = admission.again(request(pod()), first)
    whole = admission.decide(request(first.obj), ("mutate",))
    assert (again.patch, again.changed_by) == (whole.patch, whole.changed_by)


def test_a_further_pass_that_ends_where_the_last_one_did_adds_nothing_to_the_patch() -> None:
    made: list[str] = []
    outcome = _run([_counted(_upstream(_unlabeller("u")), made), _counted(_labeller("b"), made)])
    assert made == ["u", "b", "u", "b"]
    assert outcome.patch == [{"op": "add", "path": "/metadata/labels/seen", "value": "b"}]


def test_the_chain_is_reinvoked_once_as_the_api_server_reinvokes_it() -> None:
    """kube-apiserver runs its mutating chain a second time after a webhook's change (every
    in-tree plugin, and the webhook if the object changed after its call) and then stops,
    whatever the second round changed (``reinvocation.go``; tests/controlplane's
    test_webhooks_managed.py shows it on a real API server). So the answer is what the
    second pass made, though a third would change it again."""
    assert MAX_PASSES == 2
    made: list[str] = []
    upstream = _counted(_upstream(_negator("x", of="y")), made)
    ours = _counted(_copier("y", of="x"), made)
    outcome = _run([upstream, ours])
    assert outcome.allowed
    assert made == ["x", "y", "x", "y"]
    labels = outcome.obj["metadata"]["labels"]
    assert (labels["x"], labels["y"]) == ("off", "off")  # a third pass would make both "on"
    assert apply(pod(), outcome.patch) == outcome.obj


def test_a_change_only_upstream_s_mutators_make_is_not_reinvoked() -> None:
    """In-tree plugins changing the object trigger no second round: only a webhook does."""
    made: list[str] = []
    plugins = [_counted(_upstream(_negator("x", of="y")), made)]
    plugins.append(_counted(_upstream(_copier("y", of="x")), made))
    outcome = _run(plugins)
    assert made == ["x", "y"]
    labels = outcome.obj["metadata"]["labels"]
    assert (labels["x"], labels["y"]) == ("on", "on")


def _refuser(name: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        return Result(violations=(Violation(f"{name} refuses"),))

    return Plugin(name, "refuses", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def test_a_mutator_denial_stops_the_chain_and_keeps_the_patch_made_so_far() -> None:
    made: list[str] = []
    plugins = [_labeller("a"), _refuser("no"), _labeller("b"), _validator("v", "never reached")]
    outcome = _run([_counted(p, made) if p.mutate else p for p in plugins])
    assert made == ["a", "no"]
    assert not outcome.allowed and outcome.message == "no refuses"
    assert outcome.denied_by == ("no",)
    assert outcome.patch and outcome.obj["metadata"]["labels"]["seen"] == "a"
    assert outcome.changed_by == ("a",)


def test_a_denial_never_puts_the_patch_on_the_wire() -> None:
    from webhooks.core.review import response_dict

    outcome = _run([_labeller("a"), _validator("v", "refused")])
    assert outcome.patch and not outcome.allowed
    assert "patch" not in response_dict("uid", outcome)["response"]


def test_the_first_upstream_validator_that_refuses_is_the_whole_answer() -> None:
    """kube-apiserver's validating phase stops at the first in-tree plugin that refuses, and
    runs the in-tree plugins before any webhook: upstream's refusal comes alone."""
    plugins = [
        _validator("ours", "ours refuses"),
        _upstream(_validator("first", "first refuses")),
        _upstream(_validator("second", "second refuses")),
    ]
    outcome = _run(plugins)
    assert (outcome.message, outcome.denied_by) == ("first refuses", ("first",))


def test_upstream_validators_run_in_upstream_s_order_anti_affinity_first() -> None:
    runtime = dataclasses.replace(
        _validator("rc", "runtime class refuses"), upstream="RuntimeClass"
    )
    anti = dataclasses.replace(
        _validator("aa", "anti-affinity refuses"), upstream="LimitPodHardAntiAffinityTopology"
    )
    assert _run([runtime, anti]).message == "anti-affinity refuses"


def test_what_a_controller_writes_before_admission_runs_first_and_asks_for_no_second_pass() -> None:
    """``precedes_admission`` stands for a controller's writes (the DaemonSet defaults): the
    other mutators see them, as in-tree plugins see a controller's pods, and nothing
    reinvokes a controller."""
    made: list[str] = []
    follower = _counted(_upstream(_follower("x", after="b")), made)
    early = dataclasses.replace(_counted(_labeller("b"), made), precedes_admission=True)
    outcome = _run([follower, early])
    assert made == ["b", "x"]
    assert outcome.obj["metadata"]["labels"]["seen"] == "bx"


# --- what the chain says stays linear in how much the plugins say ---------------------------


def _talker(n: int, counter: Comparisons) -> Plugin:
    """A mutator giving ``n`` distinct warnings (the first one twice), counting comparisons."""

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        said = [Counted(f"warning {i}", counter) for i in range(n)]
        return Result(warnings=(*said, Counted("warning 0", counter)))

    return Plugin("talker", "warns", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def _complainer(n: int, counter: Comparisons) -> Plugin:
    """A validator giving ``n`` distinct violations (the first one twice)."""

    def validate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
        found = [Violation(Counted(f"problem {i}", counter)) for i in range(n)]
        return [*found, Violation(Counted("problem 0", counter))]

    return Plugin(
        "complainer", "checks", Nothing, validate=Validator(validate, frozenset({PODS}), ALL)
    )


def test_n_warnings_are_kept_once_each_with_n_comparisons_not_n_squared() -> None:
    counter, n = Comparisons(), 400
    outcome = _run([_talker(n, counter)])
    made = counter.count
    assert outcome.warnings == tuple(f"warning {i}" for i in range(n))
    assert made <= n  # each looked up once (and compared only on a hash collision)


def test_n_advised_violations_are_warned_and_noted_once_each_with_n_comparisons() -> None:
    counter, n = Comparisons(), 400
    plugin = _complainer(n, counter)
    config = {"plugins": {"complainer": {"action": "warn"}}}
    outcome = reviews.decide(pod(), config=config, registry=Registry([plugin]))
    made = counter.count
    assert outcome.allowed
    assert outcome.warnings == tuple(f"complainer: problem {i}" for i in range(n))
    notes = outcome.audit_annotations["complainer"].split("; ")
    assert notes == [f"warn: problem {i}" for i in range(n)]
    assert made <= 2 * n


def test_an_audit_annotation_of_n_parts_is_built_with_n_comparisons() -> None:
    # Each part used to be looked for in the whole annotation split again: n² work.
    counter, n = Comparisons(), 400
    progress = _Progress(pod())
    for i in (*range(n), 0, n - 1):
        progress.note("key", Counted(f"part {i}", counter))
    progress.note("key", "part 1; part 2")  # a text of several parts is one more part
    progress.note("key", "part 2")  # already there, as the second half of the text above
    made = counter.count
    outcome = progress.outcome()
    assert outcome.audit_annotations["key"] == "; ".join(
        [*(f"part {i}" for i in range(n)), "part 1; part 2"]
    )
    assert made <= n
