"""What the chain records of each half it calls, when asked: what logs and spans show."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from tests.reviews import pod, request
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin, Registry, Validator
from webhooks.core.result import HalfRun, Result, Violation
from webhooks.core.review import AdmissionRequest

ALL = frozenset({"CREATE", "UPDATE"})


@dataclass(frozen=True)
class Nothing:
    """No settings."""


def _labeller(name: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        editor = Editor(obj)
        if editor.get(("metadata", "labels", name), None) is None:
            editor.set(("metadata", "labels", name), "yes")
        return Result(editor.obj, editor.patch)

    return Plugin(name, "labels", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def _still(name: str) -> Plugin:
    def mutate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
        return Result()

    return Plugin(name, "changes nothing", Nothing, mutate=Mutator(mutate, frozenset({PODS}), ALL))


def _checker(name: str, message: str | None = None, bug: bool = False) -> Plugin:
    def validate(req: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> list[Violation]:
        if bug:
            raise KeyError("x")
        return [Violation(message)] if message else []

    return Plugin(name, "checks", Nothing, validate=Validator(validate, frozenset({PODS}), ALL))


def _halves(plugins: list[Plugin], config: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    registry = Registry(plugins)
    admission = Admission(registry, load_config(config, registry), record=True)
    outcome = admission.decide(request(pod()), ("mutate", "validate"))
    return [(h.plugin, h.phase, h.outcome, h.ops) for h in outcome.halves]


CASES = [
    pytest.param(
        [_still("s"), _checker("v")],
        None,
        [("s", "mutate", "allowed", 0), ("v", "validate", "allowed", 0)],
        id="halves that change and refuse nothing are recorded as allowed, in call order",
    ),
    pytest.param(
        [_labeller("a"), _labeller("b")],
        None,
        [
            ("a", "mutate", "patched", 1),
            ("b", "mutate", "patched", 1),
            ("a", "mutate", "allowed", 0),
        ],
        id="a half that changes the object is patched with its operation count, and a second pass "
        "calls again only the half whose output was changed since",
    ),
    pytest.param(
        [_checker("v1", "no"), _checker("v2")],
        None,
        [("v1", "validate", "denied", 0), ("v2", "validate", "allowed", 0)],
        id="a refusing validator is denied and the others still run",
    ),
    pytest.param(
        [_checker("buggy", bug=True)],
        None,
        [("buggy", "validate", "error", 0)],
        id="a half that raises is an error",
    ),
    pytest.param(
        [_labeller("a")],
        {"plugins": {"a": {"mutation": "monitor"}}},
        [("a", "mutate", "monitored", 1)],
        id="a change in monitor mode is monitored, its operations counted but not made",
    ),
    pytest.param(
        [_checker("v", "no")],
        {"plugins": {"v": {"action": "warn"}}},
        [("v", "validate", "allowed", 0)],
        id="a violation whose action is warn lets the object through",
    ),
]


@pytest.mark.parametrize(("plugins", "config", "expected"), CASES)
def test_each_half_called_is_recorded_with_what_it_came_to(
    plugins: list[Plugin], config: dict[str, Any] | None, expected: list[tuple[Any, ...]]
) -> None:
    assert _halves(plugins, config) == expected


def test_nothing_is_recorded_unless_asked() -> None:
    registry = Registry([_labeller("a"), _checker("v")])
    outcome = Admission(registry, load_config(None, registry)).decide(
        request(pod()), ("mutate", "validate")
    )
    assert outcome.halves == ()


def test_a_clock_times_each_half_from_before_its_call_to_after() -> None:
    ticks = itertools.count(1)
    registry = Registry([_labeller("a"), _checker("v")])
    admission = Admission(
        registry, load_config(None, registry), record=True, clock=lambda: next(ticks)
    )
    outcome = admission.decide(request(pod()), ("mutate", "validate"))
    assert outcome.halves == (
        HalfRun("a", "mutate", "patched", 1, 1, 2),
        HalfRun("v", "validate", "allowed", 0, 3, 4),
    )
