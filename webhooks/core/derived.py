"""What plugins derive from cluster objects and settings, computed once per object version.

Why: a Namespace's annotations (a node selector, JSON toleration lists), a RuntimeClass's
scheduling and overhead, and a plugin's settings change far less often than pods are
admitted, yet parsing them was most of what the namespace plugins cost per review. A
plugin stays a pure function of the request, the object and its context: it asks
``ctx.derived.of(kind, obj, what, derive)`` and gets ``derive(obj)``, computed on the first
ask for that version of ``obj`` and kept. ``derive`` must be a pure function of ``obj``
alone (and of the plugin's settings, fixed for the life of a chain), and must return
failures as data rather than raise them: a value that says "this annotation does not
parse, and why" is cached like any other, so every review that meets it gets the same
error without parsing again.

Keys. ``versioned`` (the server, whose objects come from the API server): the object's
kind, ``metadata.uid`` and ``metadata.resourceVersion``, so an object read again (a live
GET, a relist) hits, and a changed one (a new resourceVersion) misses and is derived
afresh. Otherwise (offline, objects from files, which may carry copied metadata), and for
objects without both fields (settings, a missing Namespace): the object itself, by
identity, the entry holding a reference to it so the identity cannot be reused while the
entry lives.

Invalidation and bound. A new version of an object (versioned keys: the same kind and uid,
another resourceVersion) replaces the entry of the version before it, so a Namespace whose
annotations change leaves nothing behind however often it changes. At most ``size``
objects (default :data:`SIZE`) are kept, least recently used first out, each with the few
values plugins derived from it; that bounds the objects offline, the identity-keyed
values, and a cluster with more Namespaces in use than the bound.

Threads. A worker's request threads share one cache. Each step is a single operation on
the ordered dict (atomic under the interpreter lock); two threads deriving the same value
at once both compute it and one result is kept, which is harmless for a pure ``derive``.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from webhooks.k8s.mapping import MAPPING

T = TypeVar("T")

#: Objects kept at most. Why 4,096: it covers every Namespace that has pods created in any
#: stretch of minutes in all but the largest clusters, and a miss costs one parse (tens of
#: microseconds), not a lookup. Each entry is one object version's few derived values (a
#: selector, two toleration lists and their facts, a few words; 2-4 KB), so a full cache
#: holds about 8-16 MiB, reached only with that many Namespaces in use.
SIZE = 4096


class _Entry:
    """The values derived from one object version; ``pin`` holds an identity-keyed object."""

    __slots__ = ("pin", "values")

    def __init__(self, pin: object) -> None:
        self.pin = pin
        self.values: dict[str, Any] = {}


def _version(obj: Any) -> tuple[str, str] | None:
    meta = obj.get("metadata") if isinstance(obj, MAPPING) else None
    if not isinstance(meta, MAPPING):
        return None
    uid, rv = meta.get("uid"), meta.get("resourceVersion")
    if isinstance(uid, str) and uid and isinstance(rv, str) and rv:
        return uid, rv
    return None


class Derived:
    """A bounded cache of values derived from objects (module docstring: keys and bound)."""

    __slots__ = ("_entries", "_latest", "size", "versioned")

    def __init__(self, *, versioned: bool = False, size: int = SIZE) -> None:
        self.versioned = versioned
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        #: (kind, uid) -> the key of the version last derived, to drop it for a newer one.
        self._latest: dict[tuple[str, str], tuple[Any, ...]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def of(self, kind: str, obj: Any, what: str, derive: Callable[[Any], T]) -> T:
        """``derive(obj)``, computed once per version of ``obj`` and kept.

        ``kind`` names what ``obj`` is (``Namespace``, ``RuntimeClass``, ``Settings``);
        ``what`` names the value, unique across plugins (``pod-node-selector/selector``).
        """
        version = _version(obj) if self.versioned else None
        key: tuple[Any, ...] = (kind, *version) if version is not None else (kind, id(obj))
        entries = self._entries
        entry = entries.get(key)
        if entry is None or (version is None and entry.pin is not obj):
            entry = _Entry(None if version is not None else obj)
            entries[key] = entry
            if version is not None:
                self._replace(kind, version[0], key)
            if len(entries) > self.size:
                with contextlib.suppress(KeyError):  # another thread emptied it first
                    gone, _ = entries.popitem(last=False)
                    if len(gone) == 3 and self._latest.get((gone[0], gone[1])) == gone:
                        del self._latest[gone[0], gone[1]]
        else:
            # Evicted by another thread meanwhile: the entry is still a valid answer. (No
            # contextlib.suppress here: on every hit it would cost more than the lookup.)
            try:  # noqa: SIM105
                entries.move_to_end(key)
            except KeyError:
                pass
        values = entry.values
        try:
            return values[what]  # type: ignore[no-any-return]
        except KeyError:
            value = values[what] = derive(obj)
            return value

    def _replace(self, kind: str, uid: str, key: tuple[Any, ...]) -> None:
        """Make ``key`` the latest version of (kind, uid), dropping the one before it."""
        before = self._latest.get((kind, uid))
        self._latest[kind, uid] = key
        if before is not None and before != key:
            self._entries.pop(before, None)
