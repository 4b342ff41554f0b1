"""Qualified-name, label-value and extended-resource-name rules of apimachinery (spec §3, §8).

The messages are byte-for-byte those of ``k8s.io/apimachinery/pkg/util/validation`` (including
the two spaces before "or" in the example lists), because clients and conformance tests match
on them. Lengths are counted in UTF-8 bytes, as Go's ``len`` does.
"""

from __future__ import annotations

import functools
import re

from webhooks.k8s.excerpt import clip

# --- patterns (the *_FMT strings are quoted verbatim inside the messages) ---------------------

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"

QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
#: The longest valid qualified name: a subdomain prefix, "/", and a name part. Messages
#: show keys this long whole and cut longer ones (which can only be invalid).
QUALIFIED_KEY_MAX_LENGTH = DNS1123_SUBDOMAIN_MAX_LENGTH + 1 + QUALIFIED_NAME_MAX_LENGTH


def shown_name(text: str) -> str:
    """``text`` as a message shows a key, value or name: whole when no valid one is longer
    (:data:`QUALIFIED_KEY_MAX_LENGTH`), else cut there (:func:`~webhooks.k8s.excerpt.clip`).

    Why: messages quote what users wrote, as upstream's do, but a pod may carry a string of
    megabytes where a key belongs, and the message must not cost as much as the string.
    """
    if len(text) <= QUALIFIED_KEY_MAX_LENGTH:
        return text
    return clip(text, QUALIFIED_KEY_MAX_LENGTH)


# Equivalent, capture-free forms used for matching (always with fullmatch, never ``$``).
_NAME = "[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL = "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(?:\." + _LABEL + ")*"
_NAME_RE = re.compile(_NAME)
_LABEL_VALUE_RE = re.compile("(?:" + _NAME + ")?")
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN)
# Fast path: an optional prefix and a name part in one pass (lengths are checked separately).
_QUALIFIED_RE = re.compile("(?:" + _SUBDOMAIN + "/)?" + _NAME)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


# --- exact messages -------------------------------------------------------------------------

EMPTY_ERROR = "must be non-empty"
QUALIFIED_NAME_REGEX_ERROR = _regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    QUALIFIED_NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
DNS1123_SUBDOMAIN_ERROR = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character",
    DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
LABEL_VALUE_REGEX_ERROR = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)

PREFIX_EMPTY_MSG = "prefix part " + EMPTY_ERROR
PREFIX_TOO_LONG_MSG = f"prefix part must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
PREFIX_REGEX_MSG = "prefix part " + DNS1123_SUBDOMAIN_ERROR
NAME_PART_EMPTY_MSG = "name part " + EMPTY_ERROR
NAME_PART_TOO_LONG_MSG = f"name part must be no more than {QUALIFIED_NAME_MAX_LENGTH} characters"
NAME_PART_REGEX_MSG = "name part " + QUALIFIED_NAME_REGEX_ERROR
TOO_MANY_PARTS_MSG = (
    "a qualified name "
    + QUALIFIED_NAME_REGEX_ERROR
    + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
LABEL_VALUE_TOO_LONG_MSG = f"must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
LABEL_VALUE_REGEX_MSG = LABEL_VALUE_REGEX_ERROR

# Resource-name constants (spec §3).
RESOURCE_REQUESTS_PREFIX = "requests."
RESOURCE_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
# "requests." + name must fit a 253-byte prefix, "/" and a 63-byte name part.
_EXTENDED_MAX_LENGTH = (
    DNS1123_SUBDOMAIN_MAX_LENGTH + 1 + QUALIFIED_NAME_MAX_LENGTH - len(RESOURCE_REQUESTS_PREFIX)
)


def _byte_len(value: str) -> int:
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def _name_part_errors(name: str, errs: list[str]) -> list[str]:
    if not name:
        errs.append(NAME_PART_EMPTY_MSG)
    elif _byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append(NAME_PART_TOO_LONG_MSG)
    if _NAME_RE.fullmatch(name) is None:
        errs.append(NAME_PART_REGEX_MSG)
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """Return the messages of upstream ``IsQualifiedName`` for ``value``; empty when valid.

    Label, taint and toleration keys and resource names must be rejected with exactly the text
    kube-apiserver produces, so the checks are independent and every applicable one is reported.
    """
    if _QUALIFIED_RE.fullmatch(value) is not None:
        # Common case: well-formed and ASCII, so only the two length limits remain to check.
        slash = value.find("/")
        if len(value) - slash - 1 <= QUALIFIED_NAME_MAX_LENGTH and (
            slash <= DNS1123_SUBDOMAIN_MAX_LENGTH
        ):
            return []
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        return _name_part_errors(value, errs)
    if len(parts) > 2:
        return [TOO_MANY_PARTS_MSG]
    prefix, name = parts
    if not prefix:
        errs.append(PREFIX_EMPTY_MSG)
    else:
        if _byte_len(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH:
            errs.append(PREFIX_TOO_LONG_MSG)
        if _SUBDOMAIN_RE.fullmatch(prefix) is None:
            errs.append(PREFIX_REGEX_MSG)
    return _name_part_errors(name, errs)


def is_qualified_name(value: str) -> bool:
    """Return True when :func:`qualified_name_errors` would report nothing.

    Callers that only branch on validity should not pay for building message lists.
    """
    return not qualified_name_errors(value)


def label_value_errors(value: str) -> list[str]:
    """Return the messages of upstream ``IsValidLabelValue`` for ``value``; empty when valid.

    Toleration and taint values are checked with these rules, and the length and pattern checks
    are reported independently just as upstream does; the empty string is valid.
    """
    regex_ok = _LABEL_VALUE_RE.fullmatch(value) is not None
    if regex_ok and len(value) <= LABEL_VALUE_MAX_LENGTH:
        return []  # fast path: a match is pure ASCII, so characters equal bytes
    errs: list[str] = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(LABEL_VALUE_TOO_LONG_MSG)
    if not regex_ok:
        errs.append(LABEL_VALUE_REGEX_MSG)
    return errs


def is_valid_label_value(value: str) -> bool:
    """Return True when :func:`label_value_errors` would report nothing.

    Callers that only branch on validity should not pay for building message lists.
    """
    return not label_value_errors(value)


def is_dns_subdomain(value: str) -> bool:
    """Whether ``value`` is a lowercase RFC 1123 subdomain of at most 253 characters.

    Why: the names of cluster-scoped objects such as DeviceClasses must be one.
    """
    return len(value) <= DNS1123_SUBDOMAIN_MAX_LENGTH and _SUBDOMAIN_RE.fullmatch(value) is not None


def is_native_resource_name(name: str) -> bool:
    """Return True for names upstream treats as native: no "/", or "kubernetes.io/" anywhere.

    Native resources (cpu, memory, hugepages-*, ``*.kubernetes.io/*``) are never extended
    resources, so they must not get ExtendedResourceToleration's toleration.
    """
    return "/" not in name or RESOURCE_DEFAULT_NAMESPACE_PREFIX in name


@functools.lru_cache(maxsize=1024)
def _is_extended_resource_name(name: str) -> bool:
    if is_native_resource_name(name) or name.startswith(RESOURCE_REQUESTS_PREFIX):
        return False
    return is_qualified_name(RESOURCE_REQUESTS_PREFIX + name)


def is_extended_resource_name(name: str) -> bool:
    """Return upstream ``IsExtendedResourceName`` for a resource name (spec §3).

    The same few names recur on every pod, so results are memoised; names too long to ever
    qualify are answered without touching the cache, which keeps its memory bounded. True means:
    not native, no "requests." prefix, and "requests." + name is a valid qualified name.
    """
    if len(name) > _EXTENDED_MAX_LENGTH:
        return False
    return _is_extended_resource_name(name)
