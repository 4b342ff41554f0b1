"""The limits that protect kubectl, applied by the reader itself: depth and aliasing.

Why the project's own: these are kubectl's rules (go-yaml v2's and Go's ``encoding/json``),
so a manifest must be read or refused the same way on every machine, whatever YAML library
the platform has. The decoders count levels and aliased nodes on the events as they
arrive, and refuse with the messages here.
"""

from __future__ import annotations

#: kubectl refuses deeper objects (go-yaml's scanner and Go's ``encoding/json`` both stop
#: at 10,000 levels; the root object is level 1).
MAX_DEPTH = 10_000

#: The refusal of an object deeper than :data:`MAX_DEPTH`.
TOO_DEEP = f"exceeded max depth of {MAX_DEPTH}"

#: The refusal of a document whose aliases expand past :func:`excessive`'s ratio.
EXCESSIVE = (
    "document contains excessive aliasing (an alias bomb?): aliases may supply at most 99% "
    "of a document's nodes up to 400,000, sliding to 10% at 4,000,000 (go-yaml's limit, "
    "which kubectl applies)"
)


def excessive(decoded: int, aliased: int) -> bool:
    """Whether ``aliased`` of ``decoded`` nodes is more aliasing than go-yaml v2 allows.

    Why counts and not the expanded document: an alias bomb is refused before anything is
    copied, from the sizes recorded at each anchor. go-yaml v2's decoder guard
    (decode.go ``allowedAliasRatio``) lets aliases supply 99% of the nodes of a document
    up to 400,000 nodes, sliding down to 10% at 4,000,000.
    """
    if aliased <= 100 or decoded <= 1000:
        return False
    if decoded <= 400_000:
        allowed = 0.99
    elif decoded >= 4_000_000:
        allowed = 0.10
    else:
        allowed = 0.99 - 0.89 * (decoded - 400_000) / 3_600_000
    return aliased / decoded > allowed
