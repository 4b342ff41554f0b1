"""Rendering of apimachinery ``field.Error`` messages (spec §8 "Field error rendering").

Validators build their denials from these helpers so that every message reads exactly like
kube-apiserver's: ``<path>: <Type>: <value>: <detail>``. A value is printed the way
``ErrorBody`` prints it (strings with Go ``%q``, numbers and booleans with ``%v``, nil as
``null``, structs with ``%#v``); the ``: <detail>`` tail is omitted when the detail is empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from webhooks.k8s.excerpt import SHOWN

INVALID = "Invalid value"
UNSUPPORTED = "Unsupported value"
DUPLICATE = "Duplicate value"
REQUIRED = "Required value"
FORBIDDEN = "Forbidden"


class Raw(str):
    """A value that is already rendered (e.g. a Go ``%#v`` struct) and is printed as-is.

    Without the marker a string bad value would be quoted like any user-supplied string.
    """

    __slots__ = ()


# Printable ASCII except '"' and '\\': such strings quote by just adding the quotes.
_PLAIN_RE = re.compile(r"[ !#-\[\]-~]*")
_SIMPLE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def _escape_char(ch: str) -> str:
    simple = _SIMPLE_ESCAPES.get(ch)
    if simple is not None:
        return simple
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"  # Go never holds a lone surrogate: decoding replaced it with U+FFFD
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if ch.isprintable():
        return ch
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def go_quote(value: str) -> str:
    """Quote ``value`` like Go's ``strconv.Quote`` (and so ``%q`` and ``%#v`` on strings).

    Upstream messages quote user input this way, so a backslash becomes ``\\\\`` and
    non-printable runes become ``\\x``/``\\u``/``\\U`` escapes rather than JSON's forms.
    """
    if _PLAIN_RE.fullmatch(value) is not None:
        return f'"{value}"'
    return '"' + "".join(_escape_char(ch) for ch in value) + '"'


def _go_float(value: float) -> str:
    # Go %v on a float64: shortest round-trip digits, %e form when exp < -4 or exp >= 6.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    exp = len(digits) - 1 + exponent
    neg = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{neg}0.{'0' * (-exp - 1)}{digits}"
    if len(digits) <= exp + 1:
        return neg + digits + "0" * (exp + 1 - len(digits))
    return f"{neg}{digits[: exp + 1]}.{digits[exp + 1 :]}"


def go_repr(value: Any) -> str:
    """Render ``value`` as Go's ``fmt`` would print it inside an upstream message.

    Field errors embed the offending value, and clients compare the text, so strings are
    Go-quoted, integers decimal, booleans ``true``/``false``, None ``<nil>`` and :class:`Raw`
    values verbatim. Anything else (lists, dicts) falls back to ``str()``, which has no exact
    upstream counterpart.
    """
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _field(value: Mapping[str, Any], key: str) -> str:
    # Absent or null string fields are Go zero values, which %#v prints as "".
    item = value.get(key)
    return '""' if item is None else go_repr(item)


def toleration_struct(toleration: Mapping[str, Any]) -> Raw:
    """Render a toleration dict as Go ``%#v`` of ``core.Toleration``.

    The Exists-with-a-value error prints the whole struct, and we reproduce it as closely as
    possible. One deliberate deviation: Go prints a set ``TolerationSeconds`` as a pointer
    address such as ``(*int64)(0xc000123456)``, which cannot be reproduced, so the value is
    shown as ``&<seconds>`` instead; an absent one is ``(*int64)(nil)`` exactly as upstream.
    """
    seconds = toleration.get("tolerationSeconds")
    rendered = "(*int64)(nil)" if seconds is None else "&" + go_repr(seconds)
    return Raw(
        f"core.Toleration{{Key:{_field(toleration, 'key')}, "
        f"Operator:{_field(toleration, 'operator')}, "
        f"Value:{_field(toleration, 'value')}, "
        f"Effect:{_field(toleration, 'effect')}, "
        f"TolerationSeconds:{rendered}}}"
    )


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_RFC3339_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)


def _go_time(value: Any) -> str:
    # metav1.Time decodes into the server's Local zone, and time.Time's GoString renders
    # time.Date(...); we assume the API server runs in UTC, as the usual images do.
    match = _RFC3339_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return go_repr(value)
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    nanos = int((fraction or "0").ljust(9, "0"))
    offset = timedelta(0)
    if zone != "Z":
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        offset = -offset if zone[0] == "-" else offset
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
        utc = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return go_repr(value)
    return (
        f"time.Date({utc.year}, time.{_MONTHS[utc.month - 1]}, {utc.day}, {utc.hour}, "
        f"{utc.minute}, {utc.second}, {nanos}, time.Local)"
    )


def taint_struct(taint: Mapping[str, Any]) -> Raw:
    """Render a taint dict as Go ``%#v`` of ``core.Taint``.

    The duplicate-taint error prints the whole struct, and we reproduce it exactly when
    ``timeAdded`` is absent (``TimeAdded:<nil>``, because fmt calls the nil pointer's
    ``GoString``, which panics, and prints ``<nil>``). A set ``timeAdded`` prints through
    ``time.Time.GoString`` as ``time.Date(2024, time.May, 1, 12, 0, 0, 0, time.Local)``; we
    render it that way assuming the API server's local zone is UTC (a documented deviation
    for servers in other zones), and fall back to the quoted raw value if it does not parse.
    """
    added = taint.get("timeAdded")
    rendered = "<nil>" if added is None else _go_time(added)
    return Raw(
        f"core.Taint{{Key:{_field(taint, 'key')}, "
        f"Value:{_field(taint, 'value')}, "
        f"Effect:{_field(taint, 'effect')}, "
        f"TimeAdded:{rendered}}}"
    )


def cut(value: Any) -> Any:
    """``value`` for a field error: itself when it is not a long string, else a :class:`Raw`
    of its Go-quoted first :data:`~webhooks.k8s.excerpt.SHOWN` characters and its length.

    Why not in :func:`invalid` for every value: upstream's messages quote values whole, and
    the conformance tests compare them; callers cut what can be arbitrarily long (a value
    of megabytes would make a message of megabytes).
    """
    if isinstance(value, str) and len(value) > SHOWN:
        return Raw(f"{go_quote(value[:SHOWN])}... ({len(value)} characters)")
    return value


def _bad_value(value: Any) -> str:
    # ErrorBody prints a nil bad value as "null" (recent apimachinery), everything else via fmt.
    return "null" if value is None else go_repr(value)


def _render(path: str, kind: str, value: str | None, detail: str) -> str:
    head = f"{path}: {kind}" if value is None else f"{path}: {kind}: {value}"
    return f"{head}: {detail}" if detail else head


def invalid(path: str, value: Any, detail: str) -> str:
    """Render ``field.Invalid``: ``<path>: Invalid value: <value>: <detail>``.

    Most validation failures are reported this way, and users and tests match the text.
    """
    return _render(path, INVALID, _bad_value(value), detail)


def unsupported(path: str, value: Any, supported: Sequence[str]) -> str:
    """Render ``field.NotSupported``: ``<path>: Unsupported value: <value>: supported values: …``.

    Listing the accepted values (each Go-quoted, comma-separated) tells the user how to fix an
    enum field; with no list upstream adds no detail at all.
    """
    detail = "supported values: " + ", ".join(map(go_quote, supported)) if supported else ""
    return _render(path, UNSUPPORTED, _bad_value(value), detail)


def duplicate(path: str, value: Any, detail: str = "") -> str:
    """Render ``field.Duplicate``: ``<path>: Duplicate value: <value>[: <detail>]``.

    Upstream sets a detail on the taint case ("taints must be unique by key and effect pair"),
    so the detail is optional here as it is there.
    """
    return _render(path, DUPLICATE, _bad_value(value), detail)


def required(path: str, detail: str = "") -> str:
    """Render ``field.Required``: ``<path>: Required value[: <detail>]``.

    Upstream never prints a value for this type, so none is taken.
    """
    return _render(path, REQUIRED, None, detail)


def forbidden(path: str, detail: str) -> str:
    """Render ``field.Forbidden``: ``<path>: Forbidden: <detail>``.

    Upstream never prints a value for this type, only the reason, so none is taken.
    """
    return _render(path, FORBIDDEN, None, detail)


def aggregate(messages: Iterable[str]) -> str:
    """Join messages like ``utilerrors.Aggregate``: one stays bare, several become ``[a, b]``.

    Upstream drops repeated messages while keeping first-seen order, and callers must match
    its text; an empty input gives the empty string.
    """
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]" if unique else ""


def pod_forbidden(pod: Mapping[str, Any], reason: str) -> str:
    """Render ``errors.NewForbidden`` for pods as the in-tree plugins call it (spec §0).

    Why the object's own name: LimitPodHardAntiAffinityTopology and PodNodeSelector pass
    ``pod.Name``, so a CREATE that only has ``generateName`` reads
    ``pods is forbidden: <reason>`` with no name at all.
    """
    meta = pod.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return f"pods is forbidden: {reason}"
    return f"pods {go_quote(name)} is forbidden: {reason}"
