"""Exact-message tests for the apimachinery name and value rules (spec §3, §8, §9, §10)."""

from __future__ import annotations

import pytest

from webhooks.k8s import names
from webhooks.k8s.names import (
    is_extended_resource_name,
    is_native_resource_name,
    is_qualified_name,
    is_valid_label_value,
    label_value_errors,
    qualified_name_errors,
)

# The upstream strings, written out literally (note the two spaces before each "or").
NAME_EMPTY = "name part must be non-empty"
NAME_TOO_LONG = "name part must be no more than 63 characters"
NAME_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
PREFIX_EMPTY = "prefix part must be non-empty"
PREFIX_TOO_LONG = "prefix part must be no more than 253 characters"
PREFIX_REGEX = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
TOO_MANY_PARTS = (
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
    "subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
VALUE_TOO_LONG = "must be no more than 63 characters"
VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def test_message_constants_match_the_literal_upstream_strings() -> None:
    assert names.NAME_PART_EMPTY_MSG == NAME_EMPTY
    assert names.NAME_PART_TOO_LONG_MSG == NAME_TOO_LONG
    assert names.NAME_PART_REGEX_MSG == NAME_REGEX
    assert names.PREFIX_EMPTY_MSG == PREFIX_EMPTY
    assert names.PREFIX_TOO_LONG_MSG == PREFIX_TOO_LONG
    assert names.PREFIX_REGEX_MSG == PREFIX_REGEX
    assert names.TOO_MANY_PARTS_MSG == TOO_MANY_PARTS
    assert names.LABEL_VALUE_TOO_LONG_MSG == VALUE_TOO_LONG
    assert names.LABEL_VALUE_REGEX_MSG == VALUE_REGEX


QUALIFIED_CASES = [
    ("simple", []),
    ("a", []),
    ("A_b.c-9", []),
    ("example.com/MyName", []),
    ("node.kubernetes.io/not-ready", []),
    ("a" * 63, []),
    ("example.com/" + "a" * 63, []),
    ("a" * 253 + "/x", []),
    ("", [NAME_EMPTY, NAME_REGEX]),
    ("cantendwithadash-", [NAME_REGEX]),
    ("-cantstartwithadash", [NAME_REGEX]),
    ("only/one/slash", [TOO_MANY_PARTS]),
    ("a/b/c/d", [TOO_MANY_PARTS]),
    ("a" * 254, [NAME_TOO_LONG]),
    ("a" * 64, [NAME_TOO_LONG]),
    ("a" * 63 + "-", [NAME_TOO_LONG, NAME_REGEX]),
    ("nospecialchars^=@", [NAME_REGEX]),
    ("NoUppercaseOrSpecialCharsLike=Equals", [NAME_REGEX]),
    ("/foo", [PREFIX_EMPTY]),
    ("/", [PREFIX_EMPTY, NAME_EMPTY, NAME_REGEX]),
    ("example.com/", [NAME_EMPTY, NAME_REGEX]),
    ("Example.com/x", [PREFIX_REGEX]),
    ("example.com./x", [PREFIX_REGEX]),
    ("a" * 254 + "/x", [PREFIX_TOO_LONG]),
    ("A" * 254 + "/x", [PREFIX_TOO_LONG, PREFIX_REGEX]),
    ("Bad_Prefix/bad^name", [PREFIX_REGEX, NAME_REGEX]),
    ("example.com/" + "a" * 64, [NAME_TOO_LONG]),
    ("é", [NAME_REGEX]),
    ("é" * 32, [NAME_TOO_LONG, NAME_REGEX]),
    ("trailing\n", [NAME_REGEX]),
]


@pytest.mark.parametrize(
    ("value", "expected"),
    QUALIFIED_CASES,
    ids=[
        "a plain lower-case name is valid",
        "a single character is valid",
        "upper case, underscore, dot, dash and digits are allowed in the name part",
        "a DNS prefix with a mixed-case name part is valid",
        "a kubernetes.io prefixed key is valid",
        "a 63-character name part is valid",
        "a prefix with a 63-character name part is valid",
        "a 253-character prefix is valid",
        "an empty key gets both the non-empty and the regex message",
        "a name ending with a dash gets the name-part regex message",
        "a name starting with a dash gets the name-part regex message",
        "two slashes get the single qualified-name message",
        "three slashes also get only the single qualified-name message",
        "a 254-character key gets only the length message",
        "a 64-character key gets only the length message",
        "an over-long name that also ends badly gets both length and regex messages",
        "special characters get the name-part regex message",
        "an equals sign in a taint key gets the name-part regex message",
        "an empty prefix is reported as such",
        "a lone slash reports the empty prefix and the empty name part",
        "a prefix with an empty name part gets both name-part messages",
        "an upper-case prefix gets the prefixed RFC 1123 message",
        "a prefix ending with a dot gets the prefixed RFC 1123 message",
        "a 254-character prefix gets only the prefixed length message",
        "an over-long upper-case prefix gets both prefixed messages",
        "a bad prefix and a bad name part are both reported",
        "a prefix with a 64-character name part gets the length message",
        "a non-ASCII name part gets the regex message",
        "length is counted in UTF-8 bytes, so 32 two-byte letters are too long",
        "a trailing newline is not forgiven by the anchor",
    ],
)
def test_qualified_name_errors(value: str, expected: list[str]) -> None:
    assert qualified_name_errors(value) == expected
    assert is_qualified_name(value) is (not expected)


def test_qualified_name_errors_returns_a_fresh_list_each_time() -> None:
    first = qualified_name_errors("")
    first.append("mutated")
    assert qualified_name_errors("") == [NAME_EMPTY, NAME_REGEX]


LABEL_VALUE_CASES = [
    ("", []),
    ("true", []),
    ("special-user_1.x", []),
    ("a" * 63, []),
    ("a" * 64, [VALUE_TOO_LONG]),
    ("some\\bad\\value", [VALUE_REGEX]),
    ("bad,value", [VALUE_REGEX]),
    ("?#$notsogood", [VALUE_REGEX]),
    ("-leading", [VALUE_REGEX]),
    ("a" * 63 + ".", [VALUE_TOO_LONG, VALUE_REGEX]),
    ("ü" * 32, [VALUE_TOO_LONG, VALUE_REGEX]),
]


@pytest.mark.parametrize(
    ("value", "expected"),
    LABEL_VALUE_CASES,
    ids=[
        "the empty value is valid",
        "a plain word is valid",
        "dashes, underscores and dots inside are valid",
        "a 63-character value is valid",
        "a 64-character value gets only the length message",
        "backslashes get the label regex message",
        "a comma gets the label regex message",
        "leading punctuation gets the label regex message",
        "a leading dash gets the label regex message",
        "an over-long value ending in a dot gets both messages",
        "length is counted in UTF-8 bytes for values too",
    ],
)
def test_label_value_errors(value: str, expected: list[str]) -> None:
    assert label_value_errors(value) == expected
    assert is_valid_label_value(value) is (not expected)


EXTENDED_CASES = [
    ("nvidia.com/gpu", True),
    ("example.com/Zeta", True),
    ("example.com/device-ek", True),
    ("Example.com/x", False),
    ("example.kubernetes.io/widget", False),
    ("kubernetes.io/foo", False),
    ("foo.kubernetes.io/x", False),
    ("requests.foo/bar", False),
    ("cpu", False),
    ("memory", False),
    ("hugepages-2Mi", False),
    ("ephemeral-storage", False),
    ("", False),
    ("a/b/c", False),
    ("example.com/", False),
    ("example.com/bad^name", False),
    ("a" * 244 + "/x", True),
    ("a" * 245 + "/x", False),
    ("example.com/" + "a" * 63, True),
    ("example.com/" + "a" * 64, False),
    ("a" * 10_000 + "/x", False),
]


@pytest.mark.parametrize(
    ("name", "expected"),
    EXTENDED_CASES,
    ids=[
        "nvidia.com/gpu is extended",
        "upper case in the name part is fine, so example.com/Zeta is extended",
        "the upstream test device example.com/device-ek is extended",
        "an upper-case prefix is not a valid subdomain, so Example.com/x is not extended",
        "kubernetes.io/ anywhere makes example.kubernetes.io/widget native",
        "kubernetes.io/foo is native",
        "foo.kubernetes.io/x is native",
        "a name already starting with requests. is not extended",
        "cpu has no slash and is native",
        "memory has no slash and is native",
        "hugepages-2Mi has no slash and is native",
        "ephemeral-storage has no slash and is native",
        "the empty name has no slash and is native",
        "two slashes fail the qualified-name rules",
        "an empty name part fails the qualified-name rules",
        "a bad name part fails the qualified-name rules",
        "a 244-character prefix still fits once requests. is prepended",
        "a 245-character prefix is too long once requests. is prepended",
        "a 63-character name part is allowed",
        "a 64-character name part is too long",
        "a huge name is rejected without being cached",
    ],
)
def test_is_extended_resource_name(name: str, expected: bool) -> None:
    assert is_extended_resource_name(name) is expected


def test_huge_names_do_not_enter_the_cache() -> None:
    names._is_extended_resource_name.cache_clear()
    assert is_extended_resource_name("a" * 10_000 + "/x") is False
    assert names._is_extended_resource_name.cache_info().currsize == 0
    assert is_extended_resource_name("nvidia.com/gpu") is True
    assert is_extended_resource_name("nvidia.com/gpu") is True
    info = names._is_extended_resource_name.cache_info()
    assert (info.currsize, info.hits) == (1, 1)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cpu", True),
        ("hugepages-1Gi", True),
        ("kubernetes.io/foo", True),
        ("example.kubernetes.io/widget", True),
        ("nvidia.com/gpu", False),
        ("example.com/kubernetes.io", False),
    ],
    ids=[
        "a name without a slash is native",
        "hugepages sizes are native",
        "the kubernetes.io/ prefix is native",
        "kubernetes.io/ inside a longer prefix is native",
        "a vendor-prefixed name is not native",
        "kubernetes.io without the trailing slash does not make a name native",
    ],
)
def test_is_native_resource_name(name: str, expected: bool) -> None:
    assert is_native_resource_name(name) is expected
