"""Copy-on-write editing of plain-dict objects that records the JSON Patch as it goes.

A plugin never diffs the whole object (hundreds of microseconds on a small pod, milliseconds
on a large one) and never deep-copies it: it edits through an :class:`Editor`, which copies
only the containers on the path it changes and emits the operations for exactly those
paths. Arrays the user wrote are edited element-wise, never replaced, so other mutators and
pod-update validation see only the additions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from webhooks.core.result import JsonPatch

PathPart = str | int
Path = tuple[PathPart, ...]


def escape(token: PathPart) -> str:
    """Escape one JSON Pointer token (RFC 6901): ``~`` → ``~0`` then ``/`` → ``~1``.

    Why: nodeSelector and annotation keys such as ``kubernetes.io/arch`` contain slashes.
    """
    text = str(token)
    if "~" in text or "/" in text:
        text = text.replace("~", "~0").replace("/", "~1")
    return text


def pointer(path: Sequence[PathPart]) -> str:
    """Render a path tuple as a JSON Pointer."""
    return _pointer(tuple(path)) if len(path) <= 8 else "".join("/" + escape(p) for p in path)


@functools.lru_cache(maxsize=4096)
def _pointer(path: tuple[PathPart, ...]) -> str:
    # Plugins write the same few paths on every review; rendering them once is measurably
    # cheaper on the request path. Long, user-shaped paths bypass the cache.
    return "".join("/" + escape(part) for part in path)


def list_ops(base: Path, old: Sequence[Any], new: Sequence[Any]) -> JsonPatch:
    """The fewest element-wise operations (of two strategies) that turn ``old`` into ``new``.

    Strategy A rewrites differing positions in place and appends or trims the tail (what
    AddOrUpdate-style plugins do); strategy B removes entries and appends new ones (what
    superset merging does). Both always produce ``new``; the shorter patch wins, so the
    array itself is never replaced.
    """
    common = min(len(old), len(new))
    if common == len(old) and new[:common] == old:
        # Appending (most merges and additions): both strategies are these adds.
        return [{"op": "add", "path": pointer((*base, "-")), "value": v} for v in new[common:]]
    positional: JsonPatch = [
        {"op": "replace", "path": pointer((*base, i)), "value": new[i]}
        for i in range(common)
        if old[i] != new[i]
    ]
    positional.extend(
        {"op": "remove", "path": pointer((*base, i))} for i in range(len(old) - 1, common - 1, -1)
    )
    positional.extend(
        {"op": "add", "path": pointer((*base, "-")), "value": v} for v in new[common:]
    )

    removals: list[int] = []
    matched = 0
    for i, item in enumerate(old):
        if matched < len(new) and item == new[matched]:
            matched += 1
        else:
            removals.append(i)
    subsequence: JsonPatch = [
        {"op": "remove", "path": pointer((*base, i))} for i in reversed(removals)
    ]
    subsequence.extend(
        {"op": "add", "path": pointer((*base, "-")), "value": v} for v in new[matched:]
    )
    return positional if len(positional) <= len(subsequence) else subsequence


class Editor:
    """Copy-on-write view of one object; ``obj`` is always the current state.

    The input object is never modified: every container on a written path is shallow-copied
    once, and only those. ``patch`` holds the operations in the order they were made.
    """

    __slots__ = ("_owned", "obj", "patch")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.patch: JsonPatch = []
        self._owned: set[int] = set()

    @property
    def changed(self) -> bool:
        """Whether any operation was recorded."""
        return bool(self.patch)

    def get(self, path: Sequence[PathPart], default: Any = None) -> Any:
        """Read the current value at ``path`` (``default`` when absent or null)."""
        node: Any = self.obj
        for part in path:
            if isinstance(part, int):
                if not isinstance(node, list) or not -len(node) <= part < len(node):
                    return default
                node = node[part]
            else:
                if not isinstance(node, dict):
                    return default
                node = node.get(part)
            if node is None:
                return default
        return node

    def _own(self, container: Any) -> Any:
        if id(container) in self._owned:
            return container
        copy = dict(container) if isinstance(container, dict) else list(container)
        self._owned.add(id(copy))
        return copy

    def set(self, path: Sequence[PathPart], value: Any) -> None:
        """Set ``path`` to ``value``, creating missing parent objects, recording add/replace.

        Lists are compared element-wise (see :func:`list_ops`) so an existing array is
        edited, never replaced; setting an equal value records nothing.
        """
        path = tuple(path)
        current = self.get(path, _MISSING)
        if current is _MISSING:
            if value is None and self._holds_null(path):
                return  # null over null: reads as missing, but nothing changes
        elif current == value:
            return
        self.obj = self._own(self.obj)
        node: Any = self.obj
        for depth, part in enumerate(path[:-1]):
            child = node[part] if isinstance(part, int) else node.get(part)
            if not isinstance(child, dict | list):
                branch: Any = value
                for key in reversed(path[depth + 1 :]):
                    branch = {key: branch}
                node[part] = branch
                self.patch.append(
                    {"op": "add", "path": pointer(path[: depth + 1]), "value": branch}
                )
                return
            child = self._own(child)
            node[part] = child
            node = child
        last = path[-1]
        if current is _MISSING:
            node[last] = value
            self.patch.append({"op": "add", "path": pointer(path), "value": value})
            return
        node[last] = value
        if isinstance(current, list) and isinstance(value, list):
            self.patch.extend(list_ops(path, current, value))
        else:
            self.patch.append({"op": "replace", "path": pointer(path), "value": value})

    def _holds_null(self, path: Path) -> bool:
        parent: Any = self.get(path[:-1]) if path[:-1] else self.obj
        last = path[-1]
        if isinstance(parent, dict):
            return last in parent and parent[last] is None
        if isinstance(parent, list) and isinstance(last, int):
            return -len(parent) <= last < len(parent) and parent[last] is None
        return False

    def remove(self, path: Sequence[PathPart]) -> None:
        """Remove ``path`` if present, recording a ``remove``."""
        path = tuple(path)
        if self.get(path, _MISSING) is _MISSING:
            return
        self.obj = self._own(self.obj)
        node: Any = self.obj
        for part in path[:-1]:
            child = self._own(node[part])
            node[part] = child
            node = child
        del node[path[-1]]
        self.patch.append({"op": "remove", "path": pointer(path)})


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "<missing>"


_MISSING: Any = _Missing()
