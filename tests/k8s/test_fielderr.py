"""Exact-text tests for field-error rendering (spec §8 "Field error rendering", §9, §10)."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.k8s.fielderr import (
    Raw,
    aggregate,
    duplicate,
    forbidden,
    go_quote,
    go_repr,
    invalid,
    required,
    taint_struct,
    toleration_struct,
    unsupported,
)
from webhooks.k8s.names import label_value_errors, qualified_name_errors

NAME_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", '"plain"'),
        ("", '""'),
        ("some\\bad\\value", '"some\\\\bad\\\\value"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("a\tb\nc\rd\a\b\f\v", '"a\\tb\\nc\\rd\\a\\b\\f\\v"'),
        ("\x00\x1f\x7f", '"\\x00\\x1f\\x7f"'),
        ("héllo 😀", '"héllo 😀"'),
        ("\u00a0\u200b", '"\\u00a0\\u200b"'),
        ("\U000e0001", '"\\U000e0001"'),
    ],
    ids=[
        "a plain string is just double-quoted",
        "the empty string is two quotes",
        "backslashes are doubled",
        "double quotes are escaped",
        "the C escapes are used for control characters that have them",
        "other ASCII controls and DEL use two-digit hex escapes",
        "printable non-ASCII letters and emoji stay literal",
        "non-printable BMP runes use lower-case four-digit escapes",
        "non-printable astral runes use eight-digit escapes",
    ],
)
def test_go_quote(value: str, expected: str) -> None:
    assert go_quote(value) == expected
    assert go_repr(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "<nil>"),
        (0, "0"),
        (-30, "-30"),
        (True, "true"),
        (False, "false"),
        (1.5, "1.5"),
        (3.0, "3"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (0.00001, "1e-05"),
        (Raw('core.Thing{A:"x"}'), 'core.Thing{A:"x"}'),
    ],
    ids=[
        "None prints as Go's nil",
        "zero is decimal",
        "negative integers are decimal",
        "true is lower case",
        "false is lower case",
        "a fraction prints its shortest digits",
        "an integral float has no decimal point",
        "a million switches to exponent form as Go's %v does",
        "six integer digits stay in plain form",
        "small magnitudes use a two-digit exponent",
        "a Raw value is printed unquoted",
    ],
)
def test_go_repr(value: Any, expected: str) -> None:
    assert go_repr(value) == expected


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (
            {"key": "spray", "operator": "Exists", "value": "mortein", "effect": "NoSchedule"},
            'core.Toleration{Key:"spray", Operator:"Exists", Value:"mortein", '
            'Effect:"NoSchedule", TolerationSeconds:(*int64)(nil)}',
        ),
        (
            {"operator": "Exists", "value": "x"},
            'core.Toleration{Key:"", Operator:"Exists", Value:"x", Effect:"", '
            "TolerationSeconds:(*int64)(nil)}",
        ),
        (
            {"key": "k", "operator": "Exists", "value": "v", "effect": None},
            'core.Toleration{Key:"k", Operator:"Exists", Value:"v", Effect:"", '
            "TolerationSeconds:(*int64)(nil)}",
        ),
        (
            {"key": "k", "operator": "Exists", "value": "v", "tolerationSeconds": 300},
            'core.Toleration{Key:"k", Operator:"Exists", Value:"v", Effect:"", '
            "TolerationSeconds:&300}",
        ),
        (
            {"key": 'q"k', "operator": "Exists", "value": "a\\b"},
            'core.Toleration{Key:"q\\"k", Operator:"Exists", Value:"a\\\\b", Effect:"", '
            "TolerationSeconds:(*int64)(nil)}",
        ),
    ],
    ids=[
        "a full toleration without seconds prints a nil seconds pointer",
        "absent string fields print as empty strings",
        "null string fields print as empty strings",
        "set seconds print as &N, the documented stand-in for Go's pointer address",
        "field strings are Go-quoted",
    ],
)
def test_toleration_struct(toleration: dict[str, Any], expected: str) -> None:
    rendered = toleration_struct(toleration)
    assert isinstance(rendered, Raw)
    assert rendered == expected


@pytest.mark.parametrize(
    ("taint", "expected"),
    [
        (
            {"key": "dedicated", "value": "special-user-2", "effect": "NoSchedule"},
            'core.Taint{Key:"dedicated", Value:"special-user-2", Effect:"NoSchedule", '
            "TimeAdded:<nil>}",
        ),
        (
            {"key": "k", "effect": "NoExecute", "timeAdded": None},
            'core.Taint{Key:"k", Value:"", Effect:"NoExecute", TimeAdded:<nil>}',
        ),
        (
            {"key": "k", "effect": "NoExecute", "timeAdded": "2024-05-01T12:00:00Z"},
            'core.Taint{Key:"k", Value:"", Effect:"NoExecute", '
            "TimeAdded:time.Date(2024, time.May, 1, 12, 0, 0, 0, time.Local)}",
        ),
        (
            {"key": "k", "effect": "NoExecute", "timeAdded": "2024-01-01T01:30:00.5+02:00"},
            'core.Taint{Key:"k", Value:"", Effect:"NoExecute", '
            "TimeAdded:time.Date(2023, time.December, 31, 23, 30, 0, 500000000, time.Local)}",
        ),
        (
            {"key": "k", "effect": "NoExecute", "timeAdded": "yesterday"},
            'core.Taint{Key:"k", Value:"", Effect:"NoExecute", TimeAdded:"yesterday"}',
        ),
    ],
    ids=[
        "a taint without timeAdded prints TimeAdded:<nil> as upstream does",
        "a null timeAdded also prints <nil>",
        "a UTC timeAdded prints as time.Date in the server's (assumed UTC) local zone",
        "an offset timeAdded is converted to UTC, keeping the fractional nanoseconds",
        "an unparseable timeAdded falls back to the quoted raw string",
    ],
)
def test_taint_struct(taint: dict[str, Any], expected: str) -> None:
    assert taint_struct(taint) == expected


# Messages from the upstream tables of spec §9 (tolerations) and §10 (node taints).
TOLERATION_EXAMPLE = {"key": "foo", "operator": "Exists", "value": "bar", "effect": "NoSchedule"}
RENDER_CASES = [
    (
        invalid(
            "spec.tolerations[0].key",
            "nospecialchars^=@",
            qualified_name_errors("nospecialchars^=@")[0],
        ),
        'spec.tolerations[0].key: Invalid value: "nospecialchars^=@": ' + NAME_REGEX,
    ),
    (
        unsupported("spec.tolerations[0].operator", "In", ["Equal", "Exists"]),
        'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", '
        '"Exists"',
    ),
    (
        invalid(
            "spec.tolerations[0].operator",
            toleration_struct(TOLERATION_EXAMPLE),
            "value must be empty when `operator` is 'Exists'",
        ),
        'spec.tolerations[0].operator: Invalid value: core.Toleration{Key:"foo", '
        'Operator:"Exists", Value:"bar", Effect:"NoSchedule", TolerationSeconds:(*int64)(nil)}: '
        "value must be empty when `operator` is 'Exists'",
    ),
    (
        invalid(
            "spec.tolerations[0].operator",
            "Equal",
            'operator must be Exists when `key` is empty, which means "match all values and all '
            'keys"',
        ),
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` '
        'is empty, which means "match all values and all keys"',
    ),
    (
        invalid(
            "spec.tolerations[0].effect",
            "NoSchedule",
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
        "when `tolerationSeconds` is set",
    ),
    (
        invalid(
            "spec.tolerations[0].operator",
            "a" * 64 + ",",
            ";".join(label_value_errors("a" * 64 + ",")),
        ),
        f'spec.tolerations[0].operator: Invalid value: "{"a" * 64},": must be no more than 63 '
        f"characters;{VALUE_REGEX}",
    ),
    (
        invalid(
            "metadata.taints[0].key",
            "NoUppercaseOrSpecialCharsLike=Equals",
            qualified_name_errors("NoUppercaseOrSpecialCharsLike=Equals")[0],
        ),
        'metadata.taints[0].key: Invalid value: "NoUppercaseOrSpecialCharsLike=Equals": '
        + NAME_REGEX,
    ),
    (
        invalid(
            "metadata.taints[0].value",
            "some\\bad\\value",
            ";".join(label_value_errors("some\\bad\\value")),
        ),
        'metadata.taints[0].value: Invalid value: "some\\\\bad\\\\value": ' + VALUE_REGEX,
    ),
    (
        required("metadata.taints[0].effect"),
        "metadata.taints[0].effect: Required value",
    ),
    (
        required("metadata.taints[0].effect", "an effect is needed"),
        "metadata.taints[0].effect: Required value: an effect is needed",
    ),
    (
        unsupported(
            "metadata.taints[0].effect",
            "NoScheduleNoAdmit",
            ["NoSchedule", "PreferNoSchedule", "NoExecute"],
        ),
        'metadata.taints[0].effect: Unsupported value: "NoScheduleNoAdmit": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"',
    ),
    (
        duplicate(
            "metadata.taints[1]",
            taint_struct({"key": "dedicated", "value": "special-user-2", "effect": "NoSchedule"}),
            "taints must be unique by key and effect pair",
        ),
        'metadata.taints[1]: Duplicate value: core.Taint{Key:"dedicated", '
        'Value:"special-user-2", Effect:"NoSchedule", TimeAdded:<nil>}: taints must be unique '
        "by key and effect pair",
    ),
    (
        duplicate("spec.items[2].name", "x"),
        'spec.items[2].name: Duplicate value: "x"',
    ),
    (
        forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ),
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds",
    ),
    (
        invalid("spec.overhead", None, "must be empty"),
        "spec.overhead: Invalid value: null: must be empty",
    ),
    (
        invalid("spec.x", 5, ""),
        "spec.x: Invalid value: 5",
    ),
    (
        unsupported("spec.x", "y", []),
        'spec.x: Unsupported value: "y"',
    ),
]


@pytest.mark.parametrize(
    ("rendered", "expected"),
    RENDER_CASES,
    ids=[
        "a bad toleration key quotes the key and carries the name-part message",
        "an unknown operator lists the two supported operators",
        "Exists with a value prints the whole toleration struct unquoted",
        "an empty key with Equal quotes the operator",
        "tolerationSeconds without NoExecute quotes the effect",
        "a bad toleration value joins its messages with semicolons on the operator path",
        "a bad taint key is reported under metadata.taints",
        "a bad taint value escapes its backslashes",
        "a missing taint effect is a bare required value",
        "a required value with a detail appends it",
        "an unknown taint effect lists the three supported effects",
        "a duplicated taint prints the taint struct and the uniqueness detail",
        "a duplicate without a detail has no trailing colon",
        "a forbidden update prints only the reason",
        "a nil bad value prints as null like recent ErrorBody",
        "an empty detail leaves no trailing colon",
        "an empty supported list adds no detail",
    ],
)
def test_rendered_messages(rendered: str, expected: str) -> None:
    assert rendered == expected


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([], ""),
        (["a: Required value"], "a: Required value"),
        (["a: Required value", "b: Forbidden: no"], "[a: Required value, b: Forbidden: no]"),
        (["x", "y", "x"], "[x, y]"),
        (["x", "x"], "x"),
    ],
    ids=[
        "no errors aggregate to the empty string",
        "a single error is shown bare",
        "several errors are bracketed and comma-separated",
        "repeated errors are dropped, keeping first-seen order",
        "errors that are all the same collapse to one bare message",
    ],
)
def test_aggregate(messages: list[str], expected: str) -> None:
    assert aggregate(messages) == expected
