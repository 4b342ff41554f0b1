"""Property tests over config files: whatever the bytes, a ``Config`` or one ``ConfigError``.

The reader (:func:`webhooks.configfile.parse_config`) and the loader
(:func:`webhooks.core.config.load_config`) are fed YAML-ish text, raw bytes, and documents of
the config's own shape with a wrong value put anywhere (a huge integer, NaN, a string of
twenty thousand characters, a list nine thousand levels deep, a map where a list
belongs). Each answer is a config, or one bounded line naming the file and the key or
line; a valid document reads back from its text as the config it was loaded as.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from tests.properties.strategies import EXCEPTIONS, PLUGIN_SETTINGS, policy
from webhooks.configfile import parse_config
from webhooks.core.config import Config, ConfigError, load_config
from webhooks.k8s.excerpt import MESSAGE_CHARS
from webhooks.plugins import REGISTRY

NAME = "config.yaml"
#: Room for the file name and the key path a message starts with, beside the bounded rest.
PREFIX = 200


def _check_refusal(exc: ConfigError, name: str | None = NAME) -> None:
    text = str(exc)
    if name is not None:
        assert text.startswith(f"{name}:"), text[:200]
    assert "\n" not in text and "\r" not in text, text[:200]
    assert len(text) <= MESSAGE_CHARS + PREFIX, text[:200]


def _read(data: bytes) -> Config | None:
    try:
        return parse_config(data, NAME)
    except ConfigError as exc:
        _check_refusal(exc)
        return None


def _load(document: Any) -> Config | None:
    try:
        return load_config(document, REGISTRY)
    except ConfigError as exc:
        _check_refusal(exc, name=None)
        return None


# --- text and bytes -------------------------------------------------------------------------

#: Pieces of YAML that steer a parser into its corners, and the config's own words.
TOKENS = (
    *("plugins", "exceptions", "cluster", "name", "enabled", "namespaces", "source"),
    *("runtime-class", "dedicated-nodes", "default-toleration-seconds", "objectSelector"),
    *("notReadySeconds", "lookupTimeoutSeconds", "actionOverrides", "expires", "matchLabels"),
    *(": ", ":", "- ", "-", "\n", "  ", " ", "\t", "[", "]", "{", "}", ", ", "? ", "#"),
    *("&a ", "*a", "&b ", "*b", "<<: ", "!!int ", "!!str ", "!!binary ", "!!float ", "!foo "),
    *("'", '"', "\\", "|", ">", "---", "...", "%YAML 1.1\n", "~", "null", "true", "y", "no"),
    *("1e400", "9" * 30, "0x1F", "0o17", ".nan", "-.inf", "1.5", "-0", "300", "2027-01-31"),
    *("\x00", "\x85", "é", "\ufeff", "\u2028", "\ud7ff", "\U0001f600"),
)

yamlish = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)


@given(yamlish)
@example("plugins:\n  runtime-class: {enabled: *a}\n")
@example("cluster: &a [*a]\n")
@example("a: &a [*a, *a]\nb: &b [*a, *a]\n")
def test_yaml_ish_text_reads_as_a_config_or_one_bounded_config_error(text: str) -> None:
    _read(text.encode("utf-8", "surrogatepass"))


@given(st.binary(max_size=300))
@example(b"\xff\xfe\x00\xd8")
@example(b"\xef\xbb\xbfcluster: {}")
@example(b"\x00\x00\xfe\xff")
def test_raw_bytes_read_as_a_config_or_one_bounded_config_error(data: bytes) -> None:
    _read(data)


# --- documents of the config's shape, a wrong value anywhere --------------------------------


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A config document that loads: settings, policy and exceptions drawn as configs() are."""
    plugins = {}
    for name in REGISTRY.names:
        section = {**draw(PLUGIN_SETTINGS.get(name, st.just({}))), **draw(policy(name))}
        if draw(st.booleans()):
            section["enabled"] = draw(st.booleans())
        if section:
            plugins[name] = section
    exceptions = [{"name": f"exception-{i}", **fields} for i, fields in enumerate(draw(EXCEPTIONS))]
    document: dict[str, Any] = {"plugins": plugins, "exceptions": exceptions}
    if draw(st.booleans()):
        document["cluster"] = {
            "source": "none",
            "lookupTimeoutSeconds": draw(st.sampled_from([0.5, 2, 30])),
        }
    return document


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value] if levels % 2 else {"k": value}
    return value


#: What a hostile or careless file puts where something else belongs.
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63 - 2, max_value=2**64),
    st.sampled_from([40, 5000]).map(lambda digits: 10**digits),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308]),
    st.text(max_size=20),
    st.sampled_from(["x" * 20_000, "a\nb", "\x00", "é" * 70, "*", "plugins", "kube-system"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=8), st.integers(), max_size=3),
    # Wide and deep values are built anew for each draw: a document is changed in place.
    st.sampled_from([3, 200, 9_000]).map(_deep),
    st.just(5_000).map(lambda n: list(range(n))),
    st.just(3_000).map(lambda n: {f"k{i}": i for i in range(n)}),
)


def _places(document: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``document``: where a wrong value can go."""
    places: list[tuple[Any, Any]] = []
    todo = [document]
    while todo:
        node = todo.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            places.append((node, key))
            if isinstance(value, dict | list):
                todo.append(value)
    return places


@st.composite
def damaged(draw: st.DrawFn) -> Any:
    """A document with one to three values replaced by wrong ones, or keys added."""
    if draw(st.integers(0, 9)) == 0:
        return draw(WRONG)  # the whole document is something else
    document = json.loads(json.dumps(draw(documents())))  # the strategies share their constants
    places = _places(document)  # of the document as drawn, never inside a wrong value
    maps = [document, *[container for container, _ in places if isinstance(container, dict)]]
    for _ in range(draw(st.integers(1, 3))):
        if not places or draw(st.integers(0, 4)) == 0:
            draw(st.sampled_from(maps))[draw(st.text(max_size=10))] = draw(WRONG)
        else:
            container, key = draw(st.sampled_from(places))
            container[key] = draw(WRONG)
    return document


@given(damaged())
def test_a_document_with_wrong_values_anywhere_loads_or_is_one_config_error(document: Any) -> None:
    _load(document)


def _text(document: Any) -> str | None:
    # JSON is YAML; a value JSON cannot write (too deep for json, or an integer too long for
    # str) is left to the loader test above.
    try:
        return json.dumps(document, ensure_ascii=False)
    except (RecursionError, ValueError):
        return None


@given(damaged())
def test_a_file_with_wrong_values_anywhere_reads_or_is_one_config_error(document: Any) -> None:
    text = _text(document)
    if text is not None:
        _read(text.encode())


@given(documents())
def test_a_config_reads_back_from_its_text_as_it_was_loaded(document: dict[str, Any]) -> None:
    loaded = load_config(json.loads(json.dumps(document)), REGISTRY)
    assert parse_config(json.dumps(document, indent=2).encode(), NAME) == loaded
