"""Measures of work that do not depend on the machine: function calls and comparisons counted.

Why: a unit test must never assert a timing, yet whether a cost is linear is exactly what
some tests hold. Counting answers it deterministically: linear work done on an input twice
as large makes about twice the calls, quadratic work about four times. :func:`calls`
counts every Python and C function entered (so a loop in Python code that compares every
pair shows); :class:`Counted` and :class:`CountedDict` count comparisons made by C code
(``x in some_list`` compares inside the interpreter, where no call is seen).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

#: The most a doubling of the input may multiply the work by (the growth bench's target).
TARGET = 2.2


def calls(run: Callable[[], object]) -> int:
    """How many Python and C functions ``run()`` enters, at any depth."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


def growth(work: Callable[[int], Callable[[], object]], n: int) -> float:
    """How many times the calls of ``work(2 * n)()`` are those of ``work(n)()``.

    ``work(size)`` builds its input outside what is counted and returns the call to count.
    """
    small = calls(work(n))
    return calls(work(2 * n)) / max(small, 1)


class Comparisons:
    """A counter shared by the values that count their comparisons."""

    def __init__(self) -> None:
        self.count = 0


class Counted(str):
    """A string that counts every ``==`` it takes part in (and hashes as a string)."""

    __slots__ = ("counter",)
    counter: Comparisons

    def __new__(cls, text: str, counter: Comparisons) -> Counted:
        made = super().__new__(cls, text)
        made.counter = counter
        return made

    def __eq__(self, other: object) -> bool:
        self.counter.count += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


class CountedDict(dict[str, Any]):
    """A dict that counts every ``==`` it takes part in."""

    def __init__(self, counter: Comparisons, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counter = counter

    def __eq__(self, other: object) -> bool:
        self.counter.count += 1
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]
