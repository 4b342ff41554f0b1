"""The chain: order, phases, stopping rules and failure handling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.reviews import pod, request
from webhooks.core.admission import Admission
from webhooks.core.chain import MAX_MUTATION_PASSES, run_chain, steps
from webhooks.core.config import load_config
from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Half, LookupFailure, Plugin, Registry
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

    return Plugin(label, "adds a label", Nothing, mutate=Half(mutate, frozenset({PODS}), ALL))


def _validator(name: str, message: str | None, exc: Exception | None = None) -> Plugin:
    def validate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
        if exc is not None:
            raise exc
        return [Violation(message)] if message else []

    return Plugin(name, "checks", Nothing, validate=Half(validate, frozenset({PODS}), ALL))


def _run(plugins: list[Plugin], obj: dict[str, Any] | None = None) -> Any:
    registry = Registry(plugins)
    admission = Admission(registry, load_config(None, registry))
    return admission.decide(request(obj or pod()), ("mutate", "validate"))


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
    outcome = run_chain(req, [("mutate", steps(registry, "mutate", config, None))])
    assert outcome.patch == [] and outcome.allowed


def _unlabeller(name: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        editor.remove(("metadata", "labels", "seen"))
        return Result(editor.obj, editor.patch, audit={name: "removed the label"})

    return Plugin(name, "removes a label", Nothing, mutate=Half(mutate, frozenset({PODS}), ALL))


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

    return Plugin(label, "follows", Nothing, mutate=Half(mutate, frozenset({PODS}), ALL))


def _negator(name: str, of: str) -> Plugin:
    """Sets label ``name`` to the opposite of label ``of``: paired with a copier, it never
    settles, though each plugin alone leaves its own output alone."""

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        other = editor.get(("metadata", "labels", of), "off")
        editor.set(("metadata", "labels", name), "on" if other == "off" else "off")
        return Result(editor.obj, editor.patch)

    return Plugin(name, "negates", Nothing, mutate=Half(mutate, frozenset({PODS}), ALL))


def _copier(name: str, of: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        editor.set(("metadata", "labels", name), editor.get(("metadata", "labels", of), "off"))
        return Result(editor.obj, editor.patch)

    return Plugin(name, "copies", Nothing, mutate=Half(mutate, frozenset({PODS}), ALL))


def _counted(plugin: Plugin, calls: list[str]) -> Plugin:
    assert plugin.mutate is not None
    run = plugin.mutate.run

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        calls.append(plugin.name)
        return run(req, obj, ctx)  # type: ignore[no-any-return]

    half = Half(mutate, plugin.mutate.resources, plugin.mutate.operations)
    return Plugin(plugin.name, plugin.summary, plugin.settings, mutate=half)


PASSES = [
    (
        "only the first plugin changes the object: nothing runs twice",
        [_labeller("a"), _follower("z", after="q")],
        "a",
        ["a", "z"],
    ),
    (
        "two plugins change it: the first checks the second's output once",
        [_labeller("a"), _labeller("b")],
        "ab",
        ["a", "b", "a"],
    ),
    (
        "a later plugin's change concerns an earlier one: the chain runs on from it",
        [_follower("x", after="b"), _labeller("b"), _labeller("c")],
        "bcx",
        ["x", "b", "c", "x", "b", "c"],
    ),
    (
        "an earlier plugin's second change reaches a later plugin that acts on it",
        [_follower("x", after="c"), _labeller("b"), _labeller("c"), _follower("y", after="x")],
        "bcxy",
        ["x", "b", "c", "y", "x", "b", "c", "y", "x", "b", "c"],
    ),
]


@pytest.mark.parametrize(
    ("plugins", "labels", "calls"),
    [(p, lb, c) for _, p, lb, c in PASSES],
    ids=[i for i, *_ in PASSES],
)
def test_mutators_run_in_passes_until_the_object_stops_changing(
    plugins: list[Plugin], labels: str, calls: list[str]
) -> None:
    made: list[str] = []
    outcome = _run([_counted(p, made) for p in plugins])
    assert outcome.obj["metadata"]["labels"]["seen"] == labels
    assert made == calls
    again = _run(plugins, outcome.obj)
    assert again.allowed and again.patch == []


def test_mutators_that_never_settle_are_cut_off_after_the_last_pass() -> None:
    made: list[str] = []
    outcome = _run([_counted(_negator("x", of="y"), made), _counted(_copier("y", of="x"), made)])
    assert outcome.allowed
    assert made == ["x", "y"] * MAX_MUTATION_PASSES
