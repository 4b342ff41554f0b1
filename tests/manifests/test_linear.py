"""The reader's cost is linear in its input: counted in copies, characters scanned and parsers.

No time is measured here (the growth bench does that): each test counts the work a shape of
input makes the reader do, so a step that copies or rescans the whole text once per
document, per value or per level fails the count at any machine speed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from webhooks.manifests import decode as decode_module
from webhooks.manifests import jsonstream, lines, parser
from webhooks.manifests.decode import decode
from webhooks.manifests.limits import MAX_DEPTH
from webhooks.manifests.tree import depth


def _counting(counts: list[int], real: Callable[..., str]) -> Callable[..., str]:
    def count(*args: Any) -> str:
        counts.append(1)
        return real(*args)

    return count


@pytest.mark.parametrize(
    "separator",
    [
        pytest.param("---# part\n", id="--- followed by a comment without a space"),
        pytest.param("...\n---\n", id="an end marker before every separator"),
    ],
)
def test_separators_that_need_blanking_copy_the_text_once_however_many(
    monkeypatch: pytest.MonkeyPatch, separator: str
) -> None:
    copies: list[int] = []
    monkeypatch.setattr(decode_module, "blank", _counting(copies, decode_module.blank))
    blank_all = getattr(decode_module, "blank_all", None)
    if blank_all is not None:
        monkeypatch.setattr(decode_module, "blank_all", _counting(copies, blank_all))
    docs = (f"{separator}kind: ConfigMap\nmetadata: {{name: c{i}}}\n" for i in range(500))
    text = "kind: First\n" + "".join(docs)
    decoded = decode(text)
    assert decoded.error is None
    assert decoded.documents[-1].value["metadata"]["name"] == "c499"
    assert len(copies) <= 1, f"the text was copied {len(copies)} times for 500 documents"


class Scanned(str):
    """A text that counts the characters its ``rfind`` and ``count`` calls walk over.

    ``rfind`` walks back from the end of its range to what it finds; ``count`` walks it all.
    """

    walked = 0

    def rfind(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        found = super().rfind(sub, start, end)
        stop = len(self) if end is None else end
        Scanned.walked += stop - (found if found >= 0 else (start or 0))  # walks back to it
        return found

    def count(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        Scanned.walked += (len(self) if end is None else end) - (start or 0)
        return super().count(sub, start, end)


@pytest.mark.parametrize(
    "joint",
    [
        pytest.param("", id="JSON objects back to back on one line"),
        pytest.param(" ", id="JSON objects separated by spaces on one line"),
        pytest.param("\n", id="JSON objects one a line"),
    ],
)
def test_json_values_find_their_line_and_column_scanning_the_text_a_bounded_number_of_times(
    joint: str,
) -> None:
    text = Scanned(joint.join(f'{{"kind":"ConfigMap","n":{i}}}' for i in range(2_000)))
    Scanned.walked = 0
    added: list[Any] = []
    jsonstream.read_json(text, 0, 0, added.append)
    assert len(added) == 2_000
    assert added[-1].column == (0 if joint == "\n" else added[-1].start)
    assert Scanned.walked <= 3 * len(text), f"walked {Scanned.walked:,} of {len(text):,}"


def _fed(counts: list[int], loader: Any) -> Any:
    """``loader`` counting the characters each parser is given, or reads from a stream."""

    def make(source: Any) -> Any:
        if isinstance(source, str):
            counts.append(len(source))
            return loader(source)
        read = source.read

        def counted(size: int = -1) -> str:
            piece: str = read(size)
            counts.append(len(piece))
            return piece

        source.read = counted
        return loader(source)

    return make


def test_a_stream_of_objects_too_deep_for_json_is_read_once_not_once_per_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fed: list[int] = []
    monkeypatch.setattr(parser, "FAST", parser.FAST and _fed(fed, parser.FAST))
    monkeypatch.setattr(parser, "PURE", _fed(fed, parser.PURE))
    one = '{"a":' * 1_100 + "1" + "}" * 1_100
    text = "\n".join([one] * 20)
    decoded = decode(text)
    assert decoded.error is None
    assert [depth(raw.value) for raw in decoded.documents] == [1_100] * 20
    assert [raw.line for raw in decoded.documents] == list(range(1, 21))
    assert fed, "too deep for Python's json: read by a YAML parser"
    # Each object costs its own length and a parser's look-ahead (16 KiB for libyaml, read
    # again by the pure-Python parser past libyaml's flow depth), never the rest of the text.
    assert sum(fed) <= 2 * (len(text) + 20 * 16_384), f"{sum(fed):,} fed for {len(text):,}"


def _flow(levels: int) -> str:
    return "x: " + "[" * (levels - 1) + "1" + "]" * (levels - 1) + "\n"


def _flow_wide(levels: int) -> str:
    return "x: " + "[" * (levels - 1) + "1, " * 1_000 + "1" + "]" * (levels - 1) + "\n"


def _block(levels: int) -> str:
    return "- " * levels + "x\n"


@pytest.mark.skipif(parser.FAST is None, reason="no libyaml: the pure-Python parser reads all")
@pytest.mark.parametrize(
    ("text", "pure"),
    [
        pytest.param(
            _flow(parser.FAST_FLOW_DEPTH + 1), False, id="flow nesting up to the bound: libyaml"
        ),
        pytest.param(
            _flow(parser.FAST_FLOW_DEPTH + 2), True, id="deeper flow nesting: the pure parser"
        ),
        pytest.param(_flow_wide(3_000), True, id="a wide list 3,000 levels down: the pure parser"),
        pytest.param(_block(MAX_DEPTH), False, id="block nesting at the reader's limit: libyaml"),
    ],
)
def test_libyaml_reads_flow_nesting_only_to_a_depth_where_its_cost_per_token_is_bounded(
    monkeypatch: pytest.MonkeyPatch, text: str, pure: bool
) -> None:
    # libyaml walks every open flow level at every token: past FAST_FLOW_DEPTH that walk
    # makes its time quadratic in depth, and the pure-Python parser (linear) reads instead.
    used: list[int] = []
    monkeypatch.setattr(parser, "PURE", _fed(used, parser.PURE))
    decoded = decode(text)
    assert decoded.error is None
    assert bool(used) is pure
    used.clear()
    lines.index_lines(text)
    assert bool(used) is pure, "the line index reads as the decoder does"
