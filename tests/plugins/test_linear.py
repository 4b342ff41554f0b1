"""Every plugin, on every part of the pod it reads, and both chains: work linear in its size.

Why counted and not timed: the growth bench (``bench/growth/plugins.py``) times each of
these surfaces at N and 2N; here the same cases, at sizes a unit test can afford, count the
functions each review calls (:func:`tests.counting.calls`), which doubles with linear work
and quadruples with quadratic work on any machine. A plugin that compares every toleration
with every other, or re-reads a list per item it adds, fails here before a benchmark is run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from bench.growth.plugins import CASES, Case
from tests.counting import TARGET, growth

#: The size each case is counted at (and twice that): large enough that a quadratic part
#: outweighs a review's fixed cost, small enough for the unit tests.
N = 150


def _review(case: Case, n: int) -> Callable[[], object]:
    given = case.review(n)
    return functools.partial(case.answer, given)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_review_does_work_linear_in_the_part_of_the_pod_that_grows(case: Case) -> None:
    ratio = growth(functools.partial(_review, case), N)
    assert ratio <= TARGET, f"{case.name}: {ratio:.2f} times the calls for twice the input"


#: The cases whose pod carries one long string, and whether their messages quote it cut
#: short. taint-toleration-rules quotes it whole: its messages are kube-apiserver's own
#: field errors, byte for byte, and upstream quotes the value whole.
LONG_STRINGS = [c for c in CASES if "length of" in c.name]
QUOTED_WHOLE = {"plugin taint-toleration-rules: length of a toleration's value"}
#: The most characters one warning, violation message or audit annotation may have when
#: the pod carries a string of :data:`LONG` characters.
MESSAGE_CHARS = 2000
LONG = 200_000


@pytest.mark.parametrize("case", LONG_STRINGS, ids=[c.name for c in LONG_STRINGS])
def test_what_a_review_says_about_a_long_string_quotes_a_bounded_excerpt(case: Case) -> None:
    outcome = case.answer(case.review(LONG)).outcome
    said = [
        outcome.message,
        *outcome.warnings,
        *(v.message for v in outcome.violations),
        *outcome.audit_annotations.values(),
    ]
    longest = max(len(text) for text in said)
    if case.name in QUOTED_WHOLE:
        assert longest > LONG
    else:
        assert longest <= MESSAGE_CHARS, f"{case.name}: a message of {longest} characters"
