"""Manifest text to plain values, read the way kubectl reads it.

What a cluster receives is decided by kubectl's reader, not by the YAML specification:
k8s.io/apimachinery ``util/yaml`` splits a stream on lines that start with ``---`` (followed
only by spaces or a ``#`` comment, else "invalid Yaml document separator"), decodes a stream
that starts with ``{`` as JSON objects one after another, and hands each YAML document to
sigs.k8s.io/yaml, which runs go-yaml v2 and then ``encoding/json``. So this module mirrors
go-yaml v2 rather than PyYAML where they differ: ``y``/``n``/``on``/``off`` are booleans,
``1:30`` is a string, ``1e3`` and ``300.0`` are numbers that reach the API server as the
integers 1000 and 300, map keys become strings, and merge keys apply in order. And it
mirrors the limits that protect kubectl: more than 10,000 nested levels is refused, as is
a document that expands aliases past go-yaml's ratio ("excessive aliasing").

Everything here runs without recursion, on libyaml's event stream: there is no node tree
to compose (libyaml's composer recurses in C and crashes near 30,000 levels), aliases are
expanded into independent copies (a shared object would let one mutation land in two
places), and an alias bomb is refused from the counts before anything is copied.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml
from yaml import events

from webhooks.manifests.errors import show
from webhooks.manifests.tree import copy_tree

#: kubectl refuses deeper objects (go-yaml's scanner and Go's ``encoding/json`` both stop
#: at 10,000 levels; the root object is level 1).
MAX_DEPTH = 10_000

#: libyaml's event parser (C) when present; the pure-Python one otherwise. Both are state
#: machines with explicit stacks, so neither recurses on deep input.
_Parser: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)

# Go's unicode.IsSpace, which kubectl's separator and JSON sniffing use.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)
_JSON_SPACE = " \t\n\r"


@dataclass(slots=True)
class Raw:
    """One document as decoded: its value and where its root sits in the text.

    ``start``/``end`` are character offsets of the root, ``column`` its column, ``line`` its
    1-based line; ``index`` counts the file's documents from 0, empty ones included.
    ``items`` holds the 1-based line of each element of a root map's ``items`` list (a
    ``kind: List``), recorded while parsing because such lists are often long.
    """

    value: Any
    line: int
    start: int
    end: int
    column: int
    index: int
    items: list[int] | None = None


@dataclass(slots=True)
class Decoded:
    """Every document read from one text, and the first error that stopped the reading.

    Documents before the error are kept, as kubectl applies them before it fails.
    """

    documents: list[Raw]
    error: tuple[int, str] | None = None


class Refused(Exception):
    """Input kubectl would refuse, with the 1-based line to blame (0 when none)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(line, reason)
        self.line = line
        self.reason = reason


# --- bytes to text ---------------------------------------------------------------------


def text_of(data: bytes) -> str:
    """Decode a file the way kubectl does: UTF-8, or UTF-16 when a byte-order mark says so.

    kubectl's decoder (``unicode.BOMOverride``) honours UTF-8 and UTF-16 marks only and
    replaces bytes that are not UTF-8 with U+FFFD rather than failing, so ``café``
    written in Latin-1 reaches the cluster with U+FFFD in place of the ``é``. A UTF-32
    mark is refused by name: kubectl reads such a file as UTF-16 and fails on the NUL
    characters it finds.
    """
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise Refused(0, "UTF-32 text is not read (kubectl reads UTF-8 and UTF-16)")
    if data.startswith(codecs.BOM_UTF16_LE):
        return data[2:].decode("utf-16-le", "replace")
    if data.startswith(codecs.BOM_UTF16_BE):
        return data[2:].decode("utf-16-be", "replace")
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


# --- scalars as go-yaml v2 resolves them -------------------------------------------------

_MERGE = object()  # a plain "<<" key
_WORDS: dict[str, Any] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), True),
    **dict.fromkeys(("on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), False),
    **dict.fromkeys(("off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
    "<<": _MERGE,
}
# go-yaml looks a plain scalar up only when its first character may start a non-string.
_WORD, _NUMBER, _DOT = 1, 2, 3
_HINT: dict[str, int] = {
    **dict.fromkeys("yYnNtTfFoO~", _WORD),
    **dict.fromkeys("+-0123456789", _NUMBER),
    ".": _DOT,
    "": _WORD,
    "<": _WORD,
}
_GO_INT = re.compile(
    r"([-+]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]([0-7]+)|0[bB]([01]+)|(0[0-7]*)|([1-9][0-9]*))\Z"
)
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?\Z")
_INT64 = 1 << 63
_UINT64 = 1 << 64


def resolve_plain(text: str) -> Any:
    """The value of a plain (unquoted, untagged) scalar, as go-yaml v2 resolves it.

    Why not PyYAML's resolver: it follows YAML 1.1 to the letter (``1:30`` is 90, ``1e3`` a
    string, ``y`` a string), while kubectl, through go-yaml v2, reads ``1:30`` as a string,
    ``1e3`` as 1000 and ``y`` as true; what the cluster receives is what counts.
    """
    hint = _HINT.get(text[:1])
    if hint is None:
        return text
    if text in _WORDS:
        return _WORDS[text]
    if hint == _NUMBER:
        return _number(text)
    if hint == _DOT and _DOT_FLOAT.match(text):
        value = float(text)
        return text if math.isinf(value) else value
    return text


def _number(text: str) -> Any:
    plain = text.replace("_", "")
    match = _GO_INT.match(plain)
    if match:
        sign, hexa, octal, binary, zero_octal, decimal = match.groups()
        if hexa is not None:
            number = int(hexa, 16)
        elif octal is not None:
            number = int(octal, 8)
        elif binary is not None:
            number = int(binary, 2)
        elif zero_octal is not None:
            number = int(zero_octal, 8)
        else:
            number = int(decimal)
        signed = -number if sign == "-" else number
        if -_INT64 <= signed < _INT64 or (not sign and number < _UINT64):
            return signed
    if _YAML_FLOAT.match(plain):
        value = float(plain)
        if not math.isinf(value):  # Go's ParseFloat fails out of range: the text stays
            return value
    return text


def json_number(value: float) -> int | float:
    """``value`` as the API server receives it: integral floats below 1e21 become ints.

    kubectl converts YAML to JSON with Go's ``encoding/json``, which prints a float64 such
    as 300.0 or 1e3 as ``300`` or ``1000``; the server then decodes an integer, so an
    ``int64`` field like ``tolerationSeconds`` accepts it. From 1e21 on Go prints an
    exponent, which stays a float.
    """
    if value.is_integer() and abs(value) < 1e21:
        # Beyond 2**53 Go prints the shortest decimal that round-trips, not the exact value.
        return int(value) if abs(value) < 2**53 else int(Decimal(repr(value)))
    return value


def _go_float_key(value: float) -> str:
    """A float map key as sigs.k8s.io/yaml names it: ``strconv.FormatFloat(k, 'g', -1, 32)``.

    That is float32's shortest round-trip digits, in %e form when the exponent is below -4
    or at least 6, with YAML's names for the special values.
    """
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    single = struct.unpack("f", struct.pack("f", value))[0]
    if math.isinf(single):  # past float32's range: Go prints Inf, which the switch renames
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for precision in range(9):
        text = f"{abs(single):.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == abs(single):
            break
    mantissa, _, exponent = text.partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    exp = int(exponent)
    sign = "-" if single < 0 else ""
    if exp < -4 or exp >= 6:
        tail = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{tail}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1  # digits before the decimal point
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


_TAG = "tag:yaml.org,2002:"
_SHORT = {bool: "!!bool", int: "!!int", float: "!!float", str: "!!str", type(None): "!!null"}


def _tagged(tag: str, text: str, line: int) -> Any:
    """A scalar with an explicit tag, as go-yaml v2 decodes it into an untyped value."""
    if tag == _TAG + "binary":
        try:
            data = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise Refused(line, "!!binary value contains invalid base64 data") from None
        return data.decode("utf-8", "replace")
    name = tag[len(_TAG) :] if tag.startswith(_TAG) else ""
    if name not in ("int", "float", "bool", "null"):
        return text  # !!str, !!timestamp, and tags go-yaml does not resolve: the text
    value = resolve_plain(text)
    found = _SHORT.get(type(value), "!!str")
    if found == "!!" + name:
        return value
    if name == "float" and found == "!!int":
        return float(value)
    raise Refused(line, f"cannot decode {found} {show(text)} as a !!{name}")


def _key(value: Any, line: int) -> Any:
    """A resolved scalar as a map key: sigs.k8s.io/yaml turns every key into a string."""
    if value.__class__ is str or value is _MERGE:
        return value
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        raise Refused(line, "a map key is null; kubectl accepts only string, number or bool keys")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float_key(value)
    raise Refused(line, "a map key is a map or a list; kubectl accepts only scalar keys")


def _value(value: Any, line: int) -> Any:
    """A resolved scalar as a value: what survives Go's conversion to JSON."""
    if value.__class__ is float:
        if not math.isfinite(value):
            spelled = ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
            raise Refused(line, f"{spelled} is not a number JSON can carry, so kubectl refuses it")
        return json_number(value)
    if value is _MERGE:
        return "<<"
    return value


# --- YAML documents from events -----------------------------------------------------------


def _excessive(decoded: int, aliased: int) -> bool:
    # go-yaml v2's decoder guard: aliases may supply 99% of the nodes of a document up to
    # 400,000 nodes, sliding down to 10% at 4,000,000 (decode.go allowedAliasRatio).
    if aliased <= 100 or decoded <= 1000:
        return False
    if decoded <= 400_000:
        allowed = 0.99
    elif decoded >= 4_000_000:
        allowed = 0.10
    else:
        allowed = 0.99 - 0.89 * (decoded - 400_000) / 3_600_000
    return aliased / decoded > allowed


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


_SCALAR = events.ScalarEvent
_ALIAS = events.AliasEvent
_MAP = events.MappingStartEvent
_SEQ = events.SequenceStartEvent
_MAP_END = events.MappingEndEvent
_SEQ_END = events.SequenceEndEvent
_DOC = events.DocumentStartEvent
_NOKEY = object()
_OPEN = object()
_EXCESSIVE = "document contains excessive aliasing (an alias bomb?); kubectl refuses it"


def _yaml(
    text: str,
    index: int,
    add: Callable[[Raw], None],
    single: bool = False,
) -> int:
    """Decode the YAML documents of ``text`` into ``add``; returns the next document index.

    With ``single``, stops after the first document's root value (used to read one JSON
    object that nests too deep for Python's ``json``). Raises :class:`Refused` or
    ``yaml.YAMLError``; the documents before the failure have been added.
    """
    parser = _Parser(text)
    get, check = parser.get_event, parser.check_event
    try:
        while check():
            event = get()
            if event.__class__ is not _DOC:
                continue
            raw = _document(get, single)
            if raw is None:
                continue
            raw.index = index
            index += 1
            add(raw)
            if single:
                break
    finally:
        parser.dispose()
    return index


def _document(get: Callable[[], Any], single: bool = False) -> Raw | None:  # noqa: PLR0915
    """Build one document's root value from its events (after its DocumentStartEvent).

    With ``single``, returns as soon as the root is complete, without asking for the
    document's end: the parser would look past it, at text that is not this document's.
    """
    anchors: dict[str, Any] = {}
    # A frame: [container, pending key, anchor, nodes before it, deepest before it,
    # merge target, lines of its elements (only for the root's "items" list)]
    stack: list[list[Any]] = []
    items: list[int] | None = None
    decoded, aliased, deepest = 1, 0, 0
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
            if tag is None:
                if event.implicit[0]:
                    hint = _HINT.get(text[:1])
                    if hint is None:
                        value: Any = text
                    elif hint == _WORD:
                        value = _WORDS.get(text, text)
                    else:
                        value = resolve_plain(text)
                else:
                    value = text
            else:
                value = _tagged(tag, text, event.start_mark.line + 1)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, 0)
            height = 0
        elif cls is _MAP or cls is _SEQ:
            decoded += 1
            level = len(stack) + 1
            if level > MAX_DEPTH:
                raise Refused(event.start_mark.line + 1, f"exceeded max depth of {MAX_DEPTH}")
            if level > deepest:  # noqa: PLR1730 - the hot loop; a call to max() costs more
                deepest = level
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
                    elif key is _MERGE:
                        frame[5] = holder
                    else:
                        raise Refused(
                            event.start_mark.line + 1,
                            "a map key is a map or a list; kubectl accepts only scalar keys",
                        )
                    parent[1] = _NOKEY
            else:
                root, start_mark = container, event.start_mark
            stack.append(frame)
            if aliased > 100 and _excessive(decoded, aliased):
                raise Refused(event.start_mark.line + 1, _EXCESSIVE)
            continue
        elif cls is _MAP_END or cls is _SEQ_END:
            frame = stack.pop()
            anchor = frame[2]
            if anchor is not None:
                level = len(stack) + 1
                anchors[anchor] = (frame[0], decoded - frame[3], deepest - level + 1)
                deepest = max(deepest, frame[4])
            if frame[5] is not None:
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
            if _excessive(decoded, aliased):
                raise Refused(line, _EXCESSIVE)
            if len(stack) + height > MAX_DEPTH:
                raise Refused(line, f"exceeded max depth of {MAX_DEPTH}")
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
        if aliased > 100 and _excessive(decoded, aliased):
            raise Refused(event.start_mark.line + 1, _EXCESSIVE)
        if not stack:
            root, start_mark, end = value, event.start_mark, event.end_mark.index
            if not height:
                root = _value(value, start_mark.line + 1)
            continue
        frame = stack[-1]
        holder = frame[0]
        if holder.__class__ is list:
            if not height and (value.__class__ is float or value is _MERGE):
                value = _value(value, event.start_mark.line + 1)
            holder.append(value)
            if frame[6] is not None:
                frame[6].append(event.start_mark.line + 1)
            continue
        key = frame[1]
        if key is _NOKEY:
            frame[1] = value if value.__class__ is str else _key(value, event.start_mark.line + 1)
            continue
        frame[1] = _NOKEY
        if key is _MERGE:
            _merge(holder, value, event.start_mark.line + 1)
            continue
        if not height and (value.__class__ is float or value is _MERGE):
            value = _value(value, event.start_mark.line + 1)
        holder[key] = value


# --- JSON streams ---------------------------------------------------------------------------


class _NotJson(ValueError):
    """A token Python's ``json`` accepts but Go's does not (NaN, Infinity)."""


def _constant(name: str) -> Any:
    raise _NotJson(name)


class _OutOfRange(ValueError):
    """A JSON number too large for a float64, which kubectl cannot decode."""


def _json_float(text: str) -> int | float:
    value = float(text)
    if math.isinf(value):
        raise _OutOfRange(text)
    return json_number(value)


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_json_float)
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _json(text: str, pos: int, index: int, add: Callable[[Raw], None]) -> tuple[int, int]:
    """Decode JSON values one after another from ``pos``, as kubectl's stream decoder does.

    Returns where the JSON ended (the end of the last value read; the length of the text
    when nothing but JSON was there) and the next document index. kubectl gives up on JSON,
    and reads the rest as YAML, when the first or second value fails to decode, so a
    flow-style YAML map or a JSON object followed by ``---`` still reads; from the third
    value on, a failure is an error.
    """
    line, counted, last = 1, 0, 0
    decoded = 0
    length = len(text)
    while True:
        while pos < length and text[pos] in _JSON_SPACE:
            pos += 1
        if pos >= length:
            return length, index
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except RecursionError:
            value, end = _deep_json(text, pos, line)
        except _OutOfRange as exc:
            raise Refused(line, f"number {str(exc)[:60]} does not fit a float64") from None
        except (json.JSONDecodeError, _NotJson) as exc:
            if decoded > 1:
                where = exc.lineno if isinstance(exc, json.JSONDecodeError) else line
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else f"{exc} is not JSON"
                raise Refused(where, f"invalid JSON: {reason}") from None
            return last, index
        column = pos - (text.rfind("\n", 0, pos) + 1)
        if _SURROGATE.search(text, pos, end):
            value = _no_surrogates(value)
        add(Raw(value, line, pos, end, column, index))
        index += 1
        decoded += 1
        pos = last = end


def _deep_json(text: str, pos: int, line: int) -> tuple[Any, int]:
    # Deeper than Python's json recurses: read this one object from libyaml's events, which
    # keep no stack of their own, with the same 10,000-level limit as kubectl.
    found: list[Raw] = []
    try:
        _yaml(_blank(text, 0, pos), 0, found.append, single=True)
    except yaml.YAMLError as exc:
        where, reason = _yaml_problem(exc, text)
        raise Refused(where or line, reason.replace("invalid YAML", "invalid JSON")) from None
    if not found:  # pragma: no cover - a "{" always starts a document
        raise Refused(line, "invalid JSON")
    return found[0].value, found[0].end


def _no_surrogates(value: Any) -> Any:
    # Go's JSON decoder turns a lone surrogate escape into U+FFFD; Python keeps it, and a
    # string holding one cannot even be printed.
    def fix(text: str) -> str:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

    if isinstance(value, str):
        return fix(value)
    todo = [value]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for key in list(node):
                item = node.pop(key)
                node[fix(key)] = fix(item) if isinstance(item, str) else item
                if isinstance(item, dict | list):
                    todo.append(item)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = fix(item)
                elif isinstance(item, dict | list):
                    todo.append(item)
    return value


# --- the stream as kubectl splits it ---------------------------------------------------------


def _blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` turned into spaces, newlines kept: offsets stay valid."""
    if start >= end:
        return text
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


_MARKER = re.compile(r"\n(?:---|\.\.\.)")


def _separators(text: str, begin: int) -> tuple[str, tuple[int, str] | None]:
    """Make libyaml split ``text`` where kubectl's line reader splits it.

    kubectl ends a document at every line starting with ``---`` that is followed only by
    spaces or a comment (``---# note`` included, which libyaml would not split on) and
    refuses any other such line. Inside one of its chunks go-yaml reads only the first
    document, so whatever follows a ``...`` end marker up to the next separator is dropped,
    as kubectl drops it. Returns the text to parse (same offsets and lines) and the
    refusal at a bad separator, if any (the text is cut there).
    """
    blanks: list[tuple[int, int]] = []
    markers = [m.start() + 1 for m in _MARKER.finditer(text, max(begin - 1, 0))]
    if text.startswith(("---", "..."), begin) and begin not in markers[:1]:
        markers.insert(0, begin)
    ended = -1  # where a "..." marker line ended, while looking for the next separator
    for start in markers:
        stop = text.find("\n", start)
        stop = len(text) if stop == -1 else stop
        rest = text[start + 3 : stop]
        if text.startswith("...", start):
            if ended < 0 and (not rest or rest[0] in " \t\r"):
                ended = stop
            continue
        trimmed = rest.strip(GO_SPACE)
        if trimmed and trimmed[0] != "#":
            if ended >= 0:
                blanks.append((ended, start))
            cut = _apply(text[:start], blanks)
            line = text.count("\n", 0, start) + 1
            return cut, (
                line,
                f"invalid document separator {show(text[start:stop])}: only "
                "spaces or a # comment may follow ---",
            )
        if trimmed and rest[0] not in " \t":
            blanks.append((start + 3, stop))  # "---# note": libyaml needs a space first
        if ended >= 0:
            blanks.append((ended, start))
            ended = -1
    if ended >= 0:
        blanks.append((ended, len(text)))
    return _apply(text, blanks), None


def _apply(text: str, blanks: list[tuple[int, int]]) -> str:
    for start, end in blanks:
        text = _blank(text, start, end)
    return text


def _yaml_problem(exc: yaml.YAMLError, text: str) -> tuple[int, str]:
    """A libyaml error as ``(line, reason)`` on one line, without the parser's own marks."""
    if isinstance(exc, yaml.reader.ReaderError):
        # libyaml reports the byte offset of a character it refuses (a control character).
        line = text.encode("utf-8", "replace")[: exc.position].count(b"\n") + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
        return line, f"invalid YAML: {exc.reason} (character U+{char:04X})"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    reason = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    return (mark.line + 1 if mark is not None else 0), " ".join(reason.split())


def decode(text: str) -> Decoded:
    """Every document of ``text`` as kubectl would send it, and what stopped the reading.

    Why documents and an error together: kubectl applies the documents before a broken one,
    and a report that shows their findings too hides nothing behind the first typo.
    """
    documents: list[Raw] = []
    add = documents.append
    index = begin = 0
    first = len(text) - len(text.lstrip(GO_SPACE))
    if text.startswith("{", first):
        try:
            begin, index = _json(text, first, index, add)
        except Refused as exc:
            return Decoded(documents, (exc.line, exc.reason))
        if begin >= len(text):
            return Decoded(documents)
        text = _blank(text, 0, begin)  # the rest is YAML; offsets and lines stay
    source, refused = _separators(text, begin)
    try:
        _yaml(source, index, add)
    except Refused as exc:
        return Decoded(documents, (exc.line, exc.reason))
    except yaml.YAMLError as exc:
        return Decoded(documents, _yaml_problem(exc, source))
    return Decoded(documents, refused)
