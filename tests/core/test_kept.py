"""The kept halves of a hybrid installation (``serve --native``): ``/mutate`` and ``/validate``
run only the (plugin, phase) halves native policies leave to the webhook, as one chain, in
chain order, with the chain's own pass rule; a named plugin still runs whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.reviews import pod, request
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin, Registry, Validator
from webhooks.core.result import Result, Violation
from webhooks.core.review import AdmissionRequest

ALL = frozenset({"CREATE", "UPDATE"})


@dataclass(frozen=True)
class Nothing:
    """No settings."""


def _plugin(
    name: str, calls: list[str], *, after: str = "", upstream: bool = True, refuses: bool = False
) -> Plugin:
    """Appends ``name`` to the ``seen`` label once (only when ``after`` is already there, if
    given) and, with ``refuses``, refuses every pod; each call is counted in ``calls``."""

    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        calls.append(f"{name}/mutate")
        editor = Editor(obj)
        seen = editor.get(("metadata", "labels", "seen"), "")
        if name not in seen and (not after or after in seen):
            editor.set(("metadata", "labels", "seen"), seen + name)
        return Result(editor.obj, editor.patch)

    def validate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
        calls.append(f"{name}/validate")
        return [Violation(f"{name} refuses")] if refuses else []

    return Plugin(
        name,
        "labels and checks",
        Nothing,
        mutate=Mutator(mutate, frozenset({PODS}), ALL),
        validate=Validator(validate, frozenset({PODS}), ALL),
        upstream=f"InTree{name}" if upstream else "",
    )


def _admission(plugins: list[Plugin], kept: set[tuple[str, str]] | None) -> Admission:
    registry = Registry(plugins)
    return Admission(registry, load_config(None, registry), kept=kept)


def _seen(outcome: Any) -> str:
    return str(outcome.obj.get("metadata", {}).get("labels", {}).get("seen", ""))


@dataclass(frozen=True)
class Row:
    """Plugins ``a``, ``b``, ``c`` (in chain order) built by ``build``; the kept halves."""

    kept: set[tuple[str, str]] | None
    seen: str
    calls: list[str]
    allowed: bool = True
    build: Any = None


def _abc(calls: list[str]) -> list[Plugin]:
    return [_plugin(n, calls) for n in "abc"]


def _ours_b_then_a_follows(calls: list[str]) -> list[Plugin]:
    """``a`` (upstream) labels only after ``b``, which is ours (no upstream): a second pass."""
    return [
        _plugin("a", calls, after="b"),
        _plugin("b", calls, upstream=False),
        _plugin("c", calls),
    ]


def _c_refuses(calls: list[str]) -> list[Plugin]:
    return [_plugin("a", calls), _plugin("b", calls), _plugin("c", calls, refuses=True)]


ROWS = {
    "without kept halves every enabled half runs, as before": Row(
        None,
        "abc",
        [
            *("a/mutate", "b/mutate", "c/mutate"),
            *("a/validate", "b/validate", "c/validate"),
        ],
        build=_abc,
    ),
    "only the kept halves run, in chain order": Row(
        {("c", "mutate"), ("a", "mutate"), ("b", "validate")},
        "ac",
        ["a/mutate", "c/mutate", "b/validate"],
        build=_abc,
    ),
    "a plugin's mutating half may be kept without its validating half": Row(
        {("b", "mutate")}, "b", ["b/mutate"], build=_abc
    ),
    "nothing kept runs nothing and answers allowed, unchanged": Row(set(), "", [], build=_abc),
    "a change by one of ours runs the kept halves once more, and only them": Row(
        {("a", "mutate"), ("b", "mutate")},
        "ba",
        ["a/mutate", "b/mutate", "a/mutate", "b/mutate"],
        build=_ours_b_then_a_follows,
    ),
    "upstream's kept halves run once each, however many there are": Row(
        {("b", "mutate"), ("c", "mutate")},
        "bc",
        ["b/mutate", "c/mutate"],
        build=_abc,
    ),
    "a validating half native policies run does not refuse on the webhook": Row(
        {("a", "mutate"), ("a", "validate")}, "a", ["a/mutate", "a/validate"], build=_c_refuses
    ),
    "a kept validating half refuses as it does in the whole chain": Row(
        {("c", "validate")}, "", ["c/validate"], allowed=False, build=_c_refuses
    ),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_the_chain_runs_just_the_kept_halves(row: Row) -> None:
    calls: list[str] = []
    admission = _admission(row.build(calls), row.kept)
    outcome = admission.decide(request(pod()), ("mutate", "validate"))
    assert (_seen(outcome), calls, outcome.allowed) == (row.seen, row.calls, row.allowed)


def test_a_named_plugin_still_runs_whole_whatever_is_kept() -> None:
    """``/mutate/<plugin>`` and ``/validate/<plugin>`` name a plugin: that runs it."""
    calls: list[str] = []
    admission = _admission(_abc(calls), {("a", "mutate")})
    outcome = admission.decide(request(pod()), ("mutate", "validate"), "c")
    assert (_seen(outcome), calls) == ("c", ["c/mutate", "c/validate"])


def test_the_kept_chain_on_the_native_halves_output_is_the_whole_chain_s_answer() -> None:
    """What a hybrid computes: the native halves (a prefix of the mutations) first, then
    the kept ones on their output, once; the same as the whole chain, pass rule included."""
    plugins = [
        _plugin("a", []),
        _plugin("b", [], after="c"),
        _plugin("c", [], upstream=False),
        _plugin("d", [], after="c"),
    ]
    whole = _admission(plugins, None).decide(request(pod()), ("mutate",))
    native = _admission(plugins, {("a", "mutate")}).decide(request(pod()), ("mutate",))
    kept = {("b", "mutate"), ("c", "mutate"), ("d", "mutate")}
    hybrid = _admission(plugins, kept).decide(request(native.obj), ("mutate",))
    assert _seen(hybrid) == _seen(whole) == "acdb"


def test_kept_halves_are_frozen_when_the_admission_is_built() -> None:
    kept = {("a", "mutate")}
    admission = _admission(_abc([]), kept)
    kept.add(("b", "mutate"))
    assert admission.kept == frozenset({("a", "mutate")})
    assert [p.name for p in admission.plugins("mutate")] == ["a"]
