"""JSON streams as kubectl decodes them: values one after another, with Go's number rules.

Why not one ``json.loads``: kubectl's stream decoder (apimachinery ``util/yaml``) reads a
file that starts with ``{`` as JSON values back to back, gives up on JSON (and reads the
rest as YAML) when the first or second value fails, and refuses what Go's ``encoding/json``
refuses: NaN and Infinity, numbers beyond float64. Integral floats arrive as integers, and
a lone surrogate escape becomes U+FFFD, as Go decodes it. An object deeper than Python's
``json`` can recurse is read from the YAML parser's events instead, with the same limit.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import yaml

from webhooks.k8s.excerpt import SHOWN
from webhooks.manifests.errors import Refused
from webhooks.manifests.raw import Raw, Tail
from webhooks.manifests.scalars import json_number
from webhooks.manifests.syntax import PREFIX, problem
from webhooks.manifests.yamlstream import read_yaml

_JSON_SPACE = " \t\n\r"


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


def _json_int(text: str) -> int | float:
    # Go decodes a number into an int64 when it fits, else a float64 (apimachinery's
    # util/json); int() of thousands of digits would take time quadratic in them.
    if len(text) <= _INT64_CHARS:
        value = int(text)
        if -_INT64 <= value < _INT64:
            return value
    return _json_float(text)


#: The characters of the widest int64, -9223372036854775808.
_INT64_CHARS = 20
_INT64 = 1 << 63

_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_json_float, parse_int=_json_int)
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def read_json(text: str, pos: int, index: int, add: Callable[[Raw], None]) -> tuple[int, int]:
    """Decode JSON values one after another from ``pos``, as kubectl's stream decoder does.

    Returns where the JSON ended (the end of the last value read; the length of the text
    when nothing but JSON was there) and the next document index. kubectl gives up on JSON,
    and reads the rest as YAML, when the first or second value fails to decode, so a
    flow-style YAML map or a JSON object followed by ``---`` still reads; from the third
    value on, a failure is an error.
    """
    line, counted, last = 1, 0, 0
    line_start = 0  # where the line of ``pos`` starts, found from the text counted so far
    decoded = 0
    length = len(text)
    while True:
        while pos < length and text[pos] in _JSON_SPACE:
            pos += 1
        if pos >= length:
            return length, index
        line += text.count("\n", counted, pos)
        newline = text.rfind("\n", counted, pos)
        if newline >= 0:
            line_start = newline + 1
        counted = pos
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except RecursionError:
            value, end = _deep_json(text, pos, line)
        except _OutOfRange as exc:
            raise Refused(line, f"number {str(exc)[:SHOWN]} does not fit a float64") from None
        except (json.JSONDecodeError, _NotJson) as exc:
            if decoded > 1:
                where = exc.lineno if isinstance(exc, json.JSONDecodeError) else line
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else f"{exc} is not JSON"
                raise Refused(where, f"invalid JSON: {reason}") from None
            return last, index
        column = pos - line_start
        if _SURROGATE.search(text, pos, end):
            value = _no_surrogates(value)
        add(Raw(value, line, pos, end, column, index))
        index += 1
        decoded += 1
        pos = last = end


def _deep_json(text: str, pos: int, line: int) -> tuple[Any, int]:
    # Deeper than Python's json recurses: read this one object from the YAML parser's events,
    # which keep no stack of their own, with the same 10,000-level limit as kubectl. JSON is
    # YAML; the parser reads the text from the object on (a Tail, not a copy of the rest)
    # and stops at the object's end, so a stream of such objects costs its length. Lines
    # the parser reports count from the object's, hence the shift.
    found: list[Raw] = []
    try:
        read_yaml(Tail(text, pos), 0, found.append, single=True)
    except Refused as exc:
        raise Refused(exc.line + line - 1 if exc.line else line, exc.reason) from None
    except yaml.YAMLError as exc:
        where, reason = problem(exc, text[pos:])
        where = where + line - 1 if where else line
        raise Refused(where, reason.replace(PREFIX, "invalid JSON: ", 1)) from None
    if not found:  # pragma: no cover - a "{" always starts a document
        raise Refused(line, "invalid JSON")
    return found[0].value, pos + found[0].end


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
