"""YAML documents from the parser's events, built without recursion, as go-yaml v2 builds them.

Why from events and not PyYAML's composer: there is no node tree to compose (libyaml's
composer recurses in C and crashes near 30,000 levels), so depth costs only memory and the
reader's own limit (:mod:`.limits`) decides, counted level by level as the events arrive.
Aliases are expanded into independent copies (a shared object would let one mutation land
in two places), and an alias bomb is refused from the counts before anything is copied.
Merge keys apply in go-yaml v2's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml import events

from webhooks.manifests import parser
from webhooks.manifests.errors import Refused, show
from webhooks.manifests.limits import EXCESSIVE, MAX_DEPTH, TOO_DEEP, excessive
from webhooks.manifests.raw import Raw, Tail
from webhooks.manifests.scalars import (
    COMPLEX_KEY,
    HINT,
    MERGE,
    WORD,
    WORDS,
    as_key,
    as_value,
    resolve_plain,
    tagged,
)
from webhooks.manifests.tree import copy_tree


def read_yaml(
    text: str | Tail,
    index: int,
    add: Callable[[Raw], None],
    single: bool = False,
    *,
    strict: bool = False,
) -> int:
    """Decode the YAML documents of ``text`` into ``add``; returns the next document index.

    With ``single``, stops after the first document's root value (used to read one JSON
    object that nests too deep for Python's ``json``). With ``strict``, a key written twice
    in one map is refused, as sigs.k8s.io/yaml's strict decoding refuses it for a
    Kubernetes component's configuration file (a key a merge brought in may still be
    written over: that is what a merge is for). Raises :class:`Refused` or
    ``yaml.YAMLError``; the documents before the failure have been added. Why two tries:
    where libyaml stops at a nesting limit of its own, the text is read again by the
    pure-Python parser (:mod:`.parser`), and the documents already added are not added twice.
    A :class:`~.raw.Tail` is read from its start in each pass.
    """
    fast = parser.FAST
    if fast is None:
        return _read(parser.PURE, text, index, add, single, strict)
    added = 0

    def counted(raw: Raw) -> None:
        nonlocal added
        added += 1
        add(raw)

    try:
        return _read(fast, text, index, counted, single, strict)
    except yaml.YAMLError as exc:
        if not parser.fell_short(exc):
            raise
    skip = added

    def rest(raw: Raw) -> None:
        nonlocal skip
        if skip:
            skip -= 1
        else:
            add(raw)

    return _read(parser.PURE, text, index, rest, single, strict)


def _read(
    loader: Any,
    text: str | Tail,
    index: int,
    add: Callable[[Raw], None],
    single: bool = False,
    strict: bool = False,
) -> int:
    # One parser's pass over the text (see read_yaml).
    events_of = loader(text if isinstance(text, str) else text.again())
    get, check = events_of.get_event, events_of.check_event
    flow_limit = parser.flow_limit(loader)
    exact = loader is parser.PURE
    try:
        while check():
            event = get()
            if event.__class__ is not _DOC:
                continue
            raw = _document(get, single, flow_limit, strict, exact)
            if raw is None:
                continue
            raw.index = index
            index += 1
            add(raw)
            if single:
                break
    finally:
        events_of.dispose()
    return index


_SCALAR = events.ScalarEvent
_ALIAS = events.AliasEvent
_MAP = events.MappingStartEvent
_SEQ = events.SequenceStartEvent
_MAP_END = events.MappingEndEvent
_SEQ_END = events.SequenceEndEvent
_DOC = events.DocumentStartEvent
_NOKEY = object()
_OPEN = object()


def _written(holder: dict[str, Any], key: str, merged: dict[int, set[str]], line: int) -> None:
    # Strict decoding: "key ... already set in map", at the second one. A key only a merge
    # brought in may be written over, once; the map itself says what was written, so a
    # strict read keeps no set of keys per map.
    if key in holder:
        brought = merged.get(id(holder))
        if brought is None or key not in brought:
            raise Refused(line, f"key {show(key)} already set in map")
        brought.discard(key)


def _merging(target: dict[str, Any], value: Any, merged: dict[int, set[str]], line: int) -> None:
    # Strict decoding: a merge may not overwrite a key the map itself wrote before it.
    maps = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
    brought = merged.setdefault(id(target), set())
    for item in maps:
        if not isinstance(item, dict):
            continue
        for key in item:
            if key in target and key not in brought:
                raise Refused(line, f"key {show(key)} already set in map")
        brought.update(item)


def _merge(target: dict[str, Any], value: Any, line: int) -> None:
    # go-yaml v2 writes merged keys in place as it meets them, so a key written before the
    # "<<" is overwritten and one written after it wins; in a list the first map wins.
    if isinstance(value, dict):
        target.update(value)
        return
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        for item in reversed(value):
            target.update(item)
        return
    raise Refused(line, "map merge requires map or sequence of maps as the value")


def _document(  # noqa: PLR0915
    get: Callable[[], Any],
    single: bool = False,
    flow_limit: int = MAX_DEPTH + 1,
    strict: bool = False,
    exact: bool = True,
) -> Raw | None:
    """Build one document's root value from its events (after its DocumentStartEvent).

    With ``single``, returns as soon as the root is complete, without asking for the
    document's end: the parser would look past it, at text that is not this document's.
    Raises :class:`~.parser.FlowTooDeep` at ``flow_limit`` levels of flow nesting (see
    :func:`~.parser.flow_limit`). With ``strict``, a key written twice in one map is refused
    (see :func:`read_yaml`). Without ``exact`` (the events are libyaml's), raises
    :class:`~.parser.NotAsKubectl` at a tag or at a plain scalar holding a ``?`` inside a
    flow collection, the places where libyaml's events are not go-yaml's.
    """
    anchors: dict[str, Any] = {}
    # A frame: [container, pending key, anchor, nodes before it, deepest before it,
    # merge target, lines of its elements (only for the root's "items" list)]
    stack: list[list[Any]] = []
    items: list[int] | None = None
    decoded, aliased, deepest = 1, 0, 0
    flow_base = 0  # the level of the outermost open flow collection; 0: none is open
    # With ``strict``: per map (by id), the keys a merge brought in and nothing wrote over.
    merged: dict[int, set[str]] | None = {} if strict else None
    root: Any = None
    start_mark: Any = None
    end = 0
    while True:
        event = get()
        cls = event.__class__
        if cls is _SCALAR:
            decoded += 1
            tag = event.tag
            text = event.value
            if flow_base and not exact and (tag is not None or ("?" in text and event.implicit[0])):
                raise parser.NotAsKubectl("a tag or a plain scalar with '?' in a flow collection")
            if tag is None:
                if event.implicit[0]:
                    hint = HINT.get(text[:1])
                    if hint is None:
                        value: Any = text
                    elif hint == WORD:
                        value = WORDS.get(text, text)
                    else:
                        value = resolve_plain(text)
                else:
                    value = text
            else:
                value = tagged(tag, text, event.start_mark.line + 1)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, 0)
            height = 0
        elif cls is _MAP or cls is _SEQ:
            decoded += 1
            level = len(stack) + 1
            if level > MAX_DEPTH:
                raise Refused(event.start_mark.line + 1, TOO_DEEP)
            if level > deepest:  # noqa: PLR1730 - the hot loop; a call to max() costs more
                deepest = level
            if event.flow_style:  # everything inside a flow collection is flow too
                if not flow_base:
                    flow_base = level
                elif level - flow_base >= flow_limit:
                    raise parser.FlowTooDeep(f"more than {flow_limit} levels of flow nesting")
                elif event.tag is not None and not exact:
                    raise parser.NotAsKubectl("a tag in a flow collection")
            container: Any = {} if cls is _MAP else []
            anchor = event.anchor
            frame = [container, _NOKEY, anchor, decoded - 1, deepest, None, None]
            if anchor is not None:
                anchors[anchor] = _OPEN
                deepest = level
            if stack:
                parent = stack[-1]
                holder = parent[0]
                if holder.__class__ is list:
                    holder.append(container)
                    if parent[6] is not None:
                        parent[6].append(event.start_mark.line + 1)
                else:
                    key = parent[1]
                    if key.__class__ is str:
                        holder[key] = container
                        if level == 2 and key == "items" and cls is _SEQ:
                            items = frame[6] = []
                    elif key is MERGE:
                        frame[5] = holder
                    else:
                        raise Refused(event.start_mark.line + 1, COMPLEX_KEY)
                    parent[1] = _NOKEY
            else:
                root, start_mark = container, event.start_mark
            stack.append(frame)
            if aliased > 100 and excessive(decoded, aliased):
                raise Refused(event.start_mark.line + 1, EXCESSIVE)
            continue
        elif cls is _MAP_END or cls is _SEQ_END:
            frame = stack.pop()
            if len(stack) < flow_base:
                flow_base = 0
            anchor = frame[2]
            if anchor is not None:
                level = len(stack) + 1
                anchors[anchor] = (frame[0], decoded - frame[3], deepest - level + 1)
                deepest = max(deepest, frame[4])
            if frame[5] is not None:
                if merged is not None:
                    _merging(frame[5], frame[0], merged, event.start_mark.line + 1)
                _merge(frame[5], frame[0], event.start_mark.line + 1)
            if not stack:
                end = event.end_mark.index
                if single:
                    return Raw(
                        root, start_mark.line + 1, start_mark.index, end, start_mark.column, 0
                    )  # a JSON object: a List of it gets its item lines from the index
            continue
        elif cls is _ALIAS:
            line = event.start_mark.line + 1
            entry = anchors.get(event.anchor)
            if entry is None:
                raise Refused(line, f"unknown anchor {show(event.anchor)} referenced")
            if entry is _OPEN:
                raise Refused(line, f"anchor {show(event.anchor)} value contains itself")
            value, size, height = entry
            decoded += 1 + size
            aliased += size
            if excessive(decoded, aliased):
                raise Refused(line, EXCESSIVE)
            if len(stack) + height > MAX_DEPTH:
                raise Refused(line, TOO_DEEP)
            deepest = max(deepest, len(stack) + height)
            if height:
                value = copy_tree(value)
        elif cls is _DOC or cls is events.StreamEndEvent:  # pragma: no cover - libyaml pairs
            raise Refused(event.start_mark.line + 1, "a document ended too early")
        else:  # DocumentEndEvent
            if start_mark is None:
                return None
            line = start_mark.line + 1
            return Raw(root, line, start_mark.index, end, start_mark.column, 0, items)
        # A scalar or an alias: place it.
        if aliased > 100 and excessive(decoded, aliased):
            raise Refused(event.start_mark.line + 1, EXCESSIVE)
        if not stack:
            root, start_mark, end = value, event.start_mark, event.end_mark.index
            if not height:
                root = as_value(value, start_mark.line + 1)
            continue
        frame = stack[-1]
        holder = frame[0]
        if holder.__class__ is list:
            if not height and (value.__class__ is float or value is MERGE):
                value = as_value(value, event.start_mark.line + 1)
            holder.append(value)
            if frame[6] is not None:
                frame[6].append(event.start_mark.line + 1)
            continue
        key = frame[1]
        if key is _NOKEY:
            frame[1] = value if value.__class__ is str else as_key(value, event.start_mark.line + 1)
            if merged is not None and frame[1] is not MERGE:
                _written(holder, frame[1], merged, event.start_mark.line + 1)
            continue
        frame[1] = _NOKEY
        if key is MERGE:
            if merged is not None:
                _merging(holder, value, merged, event.start_mark.line + 1)
            _merge(holder, value, event.start_mark.line + 1)
            continue
        if not height and (value.__class__ is float or value is MERGE):
            value = as_value(value, event.start_mark.line + 1)
        holder[key] = value
