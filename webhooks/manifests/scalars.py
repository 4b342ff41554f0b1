"""Scalars as go-yaml v2 resolves them, and as they survive kubectl's conversion to JSON.

Why not PyYAML's resolver: what the cluster receives is decided by kubectl, which hands each
document to sigs.k8s.io/yaml, that is go-yaml v2 and then ``encoding/json``. So
``y``/``n``/``on``/``off`` are booleans, ``1:30`` is a string, ``1e3`` and ``300.0`` are
numbers that reach the API server as the integers 1000 and 300, map keys become strings,
and a value JSON cannot carry (``.inf``) is refused. The YAML decoder calls these per
scalar, so the tables are shaped for its hot loop.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from decimal import Decimal
from typing import Any

from webhooks.manifests.errors import Refused, show

#: A plain ``<<`` key: a merge, where a quoted one is an ordinary key.
MERGE = object()
#: Plain scalars go-yaml v2 reads as booleans, null or special floats.
WORDS: dict[str, Any] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), True),
    **dict.fromkeys(("on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), False),
    **dict.fromkeys(("off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
    "<<": MERGE,
}
#: go-yaml looks a plain scalar up only when its first character may start a non-string:
#: a word of :data:`WORDS`, a number, or a float starting with a dot.
WORD, NUMBER, DOT = 1, 2, 3
HINT: dict[str, int] = {
    **dict.fromkeys("yYnNtTfFoO~", WORD),
    **dict.fromkeys("+-0123456789", NUMBER),
    ".": DOT,
    "": WORD,
    "<": WORD,
}
_GO_INT = re.compile(
    r"([-+]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]([0-7]+)|0[bB]([01]+)|(0[0-7]*)|([1-9][0-9]*))\Z"
)
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?\Z")
_INT64 = 1 << 63
_UINT64 = 1 << 64
#: The digits of the largest uint64, 18446744073709551615.
_UINT64_DIGITS = 20


def resolve_plain(text: str) -> Any:
    """The value of a plain (unquoted, untagged) scalar, as go-yaml v2 resolves it.

    Why not PyYAML's resolver: it follows YAML 1.1 to the letter (``1:30`` is 90, ``1e3`` a
    string, ``y`` a string), while kubectl, through go-yaml v2, reads ``1:30`` as a string,
    ``1e3`` as 1000 and ``y`` as true; what the cluster receives is what counts.
    """
    hint = HINT.get(text[:1])
    if hint is None:
        return text
    if text in WORDS:
        return WORDS[text]
    if hint == NUMBER:
        return _number(text)
    if hint == DOT and _DOT_FLOAT.match(text):
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
        elif len(decimal) <= _UINT64_DIGITS:
            number = int(decimal)
        else:  # fits no int64 or uint64; int() would take time quadratic in the digits
            number = _UINT64
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


#: The refusal of a map or a list used as a map key.
COMPLEX_KEY = "a map key is a map or a list; kubectl accepts only scalar keys"

_TAG = "tag:yaml.org,2002:"
_SHORT = {bool: "!!bool", int: "!!int", float: "!!float", str: "!!str", type(None): "!!null"}


def tagged(tag: str, text: str, line: int) -> Any:
    """A scalar with an explicit tag, as go-yaml v2 decodes it into an untyped value.

    Why not keep the text, as PyYAML's base loader does: go-yaml resolves ``!!int "12"`` to
    the number 12 and refuses a tag its text does not fit, and kubectl sends what go-yaml
    made of it.
    """
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


def as_key(value: Any, line: int) -> Any:
    """A resolved scalar as a map key: sigs.k8s.io/yaml turns every key into a string.

    Why: JSON has only string keys, so a key ``1e3`` reaches the API server as ``"1000"``
    (float32's digits) and ``y`` as ``"true"``; a null or a collection as a key is refused.
    """
    if value.__class__ is str or value is MERGE:
        return value
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        raise Refused(line, "a map key is null; kubectl accepts only string, number or bool keys")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float_key(value)
    raise Refused(line, COMPLEX_KEY)


def as_value(value: Any, line: int) -> Any:
    """A resolved scalar as a value: what survives Go's conversion to JSON.

    Why: an integral float reaches the API server as an integer, and infinity or NaN
    cannot be written in JSON at all, so kubectl refuses them.
    """
    if value.__class__ is float:
        if not math.isfinite(value):
            spelled = ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
            raise Refused(line, f"{spelled} is not a number JSON can carry, so kubectl refuses it")
        return json_number(value)
    if value is MERGE:
        return "<<"
    return value
