"""Growth surfaces of quantity parsing: N and 2N characters, valid and invalid.

Why here and not only through a plugin: every resource list a plugin or ``explain`` reads
goes through :func:`~webhooks.k8s.quantity.parse_quantity`, and a parser whose cost is
quadratic in the length of one value holds a worker's GIL for as long as it runs. Each
shape stresses another part: a long digit run that fails at its last character (what the
greedy expression backtracked on), a long fraction rounded up to the nano, a binary
suffix (multiplied and capped), an exponent of many digits, and the message of a refusal.

Each input starts with the run's number, so the parser's bounded memo never answers a run
from an earlier one (and long inputs are not kept there at all).

Why N is a few million digits and 2N takes tens of milliseconds rather than the bench's
usual 0.1 s: past about 8 million digits the values built (a Decimal, the copies of its
digits) reach sizes where the memory allocator's own steps show in the ratio (a parse of
16 million digits costs 2.4 times one of 8 million, each step of it linear when timed
alone), and no request body holds more than 6 MiB anyway.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from bench.growth.measure import Surface, in_process
from webhooks.k8s.quantity import QuantityError, parse_quantity

_RUNS = itertools.count(1)


def _parse(text: str) -> object:
    try:
        return parse_quantity(text)
    except QuantityError as exc:
        return str(exc)


def _surface(name: str, size: int, shape: Callable[[int, str], str]) -> Surface:
    def build(n: int) -> str:
        return shape(n, str(next(_RUNS)))

    return Surface(f"quantity: {name}", "digits", size, in_process(build, _parse))


SURFACES = [
    _surface(
        "digits, then a character outside the grammar", 8_000_000, lambda n, r: r + "1" * n + "x"
    ),
    _surface("digits (valid)", 2_000_000, lambda n, r: r + "1" * n),
    _surface("digits with a binary suffix (capped)", 2_000_000, lambda n, r: r + "9" * n + "Ei"),
    _surface(
        "a fraction of digits, rounded up to the nano",
        2_000_000,
        lambda n, r: r + "." + "3" * n + "m",
    ),
    _surface("an exponent of digits (refused)", 2_000_000, lambda n, r: r + "e" + "9" * n),
    _surface(
        "digits, a fraction and an exponent, then a sign",
        8_000_000,
        lambda n, r: r + "1" * n + "." + "2" * n + "e+5-",
    ),
]
