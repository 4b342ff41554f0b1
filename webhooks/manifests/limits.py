"""The reader's limits: the size of one input, and kubectl's depth and aliasing limits.

Why the project's own: depth and aliasing are kubectl's rules (go-yaml v2's and Go's
``encoding/json``), so a manifest must be read or refused the same way on every machine,
whatever YAML library the platform has. The decoders count levels and aliased nodes on the
events as they arrive, and refuse with the messages here. The size of one input is the
reader's own bound: kubectl has none, and a reader without one reads ``/dev/zero`` until
memory runs out.
"""

from __future__ import annotations

#: The most one manifest file (or stdin) may hold: 128 MiB. Why this number: the largest
#: single file a user has reason to give is a cluster's inventory, ``kubectl get nodes -o
#: yaml`` of 5,000 nodes (Kubernetes' largest supported cluster) at up to ~20 KB each with
#: their image lists, about 100 MB; the API server takes at most 3 MiB per object, so no
#: single object comes near it. What the reader builds from a file is about twelve times
#: its size in memory, so the cap also bounds one file's cost to about 1.5 GB.
MAX_FILE_BYTES = 128 * 1024 * 1024

#: How a refusal names what the limit is for (``over the limit of ... bytes for a manifest``).
A_MANIFEST = "a manifest"

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
