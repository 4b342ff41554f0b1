"""How often the cyclic garbage collector makes a full collection, in every process we run.

Why a setting of our own: what the suite parses (a review of up to 6 MiB, a manifest of up
to 128 MiB) is a tree of new containers, and CPython 3.11 makes a full collection after
every ten collections of its middle generation, walking every tracked object each time.
While one large document is being built, that walk over a heap that keeps growing costs
more per object the larger the document: ``bench/growth_bench.py`` measured 2.36 times the
time per doubling of a review's tolerations, and ``check`` over 80,000 JSON objects spent
half its time (461 of 970 ms at 2N) in those walks, where 2.05 and 254 ms (520 at 2N)
remain with a full collection every hundred. The trees parsed hold no reference cycles,
so the walks find nothing to free; what cycles the program does make (exceptions and
their tracebacks, mostly) wait ten times as many allocations to be freed, a few MiB at
most, and a full collection still never runs before a quarter of the heap is new, as
CPython decides.
"""

from __future__ import annotations

import gc

#: Collections of the middle generation between two full collections (CPython's own: 10).
FULL_COLLECTION_EVERY = 100


def tune() -> None:
    """Make full collections rarer (:data:`FULL_COLLECTION_EVERY`), keeping the young ones.

    Why only the oldest generation's threshold: the young collections are what free short
    cycles promptly, and they cost time linear in what was just allocated.
    """
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
