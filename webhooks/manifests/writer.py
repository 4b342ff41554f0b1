"""Manifests out: the YAML stream ``mutate`` prints, written without recursion.

Why not ``yaml.dump_all``: PyYAML's representer recurses once per level and fails near
depth 330, while kubectl accepts manifests 10,000 levels deep. Here the events are
generated from an explicit stack and handed to libyaml's emitter, itself a state machine,
so depth costs nothing but memory. And why the quoting rule is stricter than PyYAML's:
the output is read back by kubectl (go-yaml v2), which reads ``y``, ``n``, ``1e3`` or
``0o17`` as a boolean or a number; such strings are quoted so they stay strings.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable
from typing import Any

import yaml
from yaml import events
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from webhooks.manifests.scalars import resolve_plain

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
#: YAML 1.1's implicit types, as PyYAML's SafeDumper decides what needs quotes.
_resolve: Callable[[type, str, tuple[bool, bool]], str] = Resolver().resolve
_TAG = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ = _TAG + "str", _TAG + "map", _TAG + "seq"
_END_MAP = object()
_END_SEQ = object()


def _plain_is_string(text: str) -> bool:
    """Whether ``text`` written unquoted reads back as this string in both YAML dialects.

    go-yaml v2 is what kubectl uses; YAML 1.1 (PyYAML) is what most other tools use.
    """
    go = resolve_plain(text)
    if go.__class__ is not str or go != text:
        return False
    return bool(_resolve(ScalarNode, text, (True, False)) == _STR)


def _scalar(value: Any) -> events.ScalarEvent:
    if isinstance(value, str):
        return events.ScalarEvent(None, _STR, (_plain_is_string(value), True), value)
    if value is None:
        tag, text = _TAG + "null", "null"
    elif value is True or value is False:
        tag, text = _TAG + "bool", "true" if value else "false"
    elif isinstance(value, int):
        tag, text = _TAG + "int", str(value)
    elif isinstance(value, float):
        tag, text = _TAG + "float", _float(value)
    else:  # not a JSON value; written as its text rather than failing the whole output
        return _scalar(str(value))
    plain = _resolve(ScalarNode, text, (True, False)) == tag
    quoted = _resolve(ScalarNode, text, (False, True)) == tag
    return events.ScalarEvent(None, tag, (plain, quoted), text)


def _float(value: float) -> str:
    # As PyYAML's SafeRepresenter writes floats, so output is unchanged for finite values.
    if math.isnan(value):
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def dump_all(objects: Iterable[Any]) -> str:
    """``objects`` as a YAML stream, each document after a ``---`` line of its own, keys in order.

    Why it matches ``yaml.dump_all`` (block style, no folding, non-ASCII kept) for the
    objects a reader produces: ``mutate``'s output must not change for ordinary manifests,
    only stop failing on deep ones and stop writing strings kubectl would misread. Why
    ``---`` alone on its line: an emitter writes a document that is not a block collection
    (``{}``, ``[]``, a string) on the separator's line, and kubectl refuses any separator
    followed by more than a comment (``--- {}``). So each document is emitted as a stream
    of its own, whose start is implicit, after a separator written here.
    """
    out = io.StringIO()
    for obj in objects:
        out.write("---\n")
        emitter = _Dumper(out, allow_unicode=True, width=1 << 30)
        emit = emitter.emit
        try:
            emit(events.StreamStartEvent())
            emit(events.DocumentStartEvent(explicit=False))
            _emit_tree(emit, obj)
            emit(events.DocumentEndEvent(explicit=False))
            emit(events.StreamEndEvent())
        finally:
            emitter.dispose()
    return out.getvalue()


def _emit_tree(emit: Callable[[events.Event], None], obj: Any) -> None:
    """The events of one document's value, without recursion (manifests nest deep)."""
    todo: list[Any] = [obj]
    while todo:
        item = todo.pop()
        if item is _END_MAP:
            emit(events.MappingEndEvent())
        elif item is _END_SEQ:
            emit(events.SequenceEndEvent())
        elif isinstance(item, dict):
            emit(events.MappingStartEvent(None, _MAP, True, flow_style=False))
            todo.append(_END_MAP)
            for key, value in reversed(item.items()):
                todo.append(value)
                todo.append(key)
        elif isinstance(item, list | tuple):
            emit(events.SequenceStartEvent(None, _SEQ, True, flow_style=False))
            todo.append(_END_SEQ)
            todo.extend(reversed(item))
        else:
            emit(_scalar(item))
