"""Property tests over the manifest reader and ``check``: any input, a report, never a crash.

The reader's contract (``webhooks.manifests.reader``): whatever the bytes, :func:`load`
returns documents and problems and raises nothing; every problem is one line naming the
input; every document holds JSON values only, no deeper than kubectl's limit, with no
object shared between two places; and what aliases make of a document is bounded by the
text (go-yaml v2's alias ratio lets aliases supply at most 99% of a document's nodes).
Texts are drawn from YAML's own pieces (indicators, anchors, separators, flow brackets,
tabs, byte-order marks) so the parser's corners are reached, not only its happy path.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.properties.hostile import json_values
from tests.properties.strategies import any_object
from webhooks.configfile import read_config
from webhooks.dryrun.run import dry_run
from webhooks.manifests.limits import MAX_DEPTH
from webhooks.manifests.reader import Manifests, load
from webhooks.manifests.scalars import json_number
from webhooks.manifests.writer import dump_all

#: YAML's pieces: indicators, directives, separators, anchors and aliases, merge keys, tags,
#: quotes and escapes, flow brackets, block indentation, tabs, and characters YAML refuses.
PIECES = [
    "---", "--- ", "---#c", "...", "\n", "\n  ", "\n- ", "- ", ": ", ":", "? ", ",", "[", "]",
    "{", "}", "&a ", "*a", "&b ", "*b", "<<: ", "!!str ", "!!int ", "!!binary ", "!t ", "%YAML 1.1",
    "%TAG ! x:", '"', "'", "\\", "\\x", "\\u00e9", "#", " #c", "|", ">", "|-", "\t", "\r\n",
    "kind: Pod", "apiVersion: v1", "items:", "kind: List", "metadata: {name: a}", "1e3", "0x1F",
    "0o17", "~", "null", "yes", "n", ".inf", "-.nan", "1_000", "2024-05-01", "=", "é", "\u2028",
    "\x00", "\x07", "\ufeff", "\ud800", "{\"a\":1}", "[1,2]", "a", "b", "x" * 40,
]  # fmt: skip

texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)
encoded = st.one_of(
    texts.map(lambda t: t.encode("utf-8", "surrogatepass")),
    texts.map(lambda t: b"\xff\xfe" + t.encode("utf-16-le", "surrogatepass")),
    st.binary(max_size=200),
)


def _nodes_and_depth(value: Any) -> tuple[int, int]:
    """How many values ``value`` holds, and how deep, walked without recursion."""
    count, deepest = 0, 0
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        node, level = todo.pop()
        count += 1
        if isinstance(node, dict | list):
            assert id(node) not in seen, "an object shared between two places"
            seen.add(id(node))
            deepest = max(deepest, level + 1)
            items = node.values() if isinstance(node, dict) else node
            todo.extend((item, level + 1) for item in items)
            if isinstance(node, dict):
                assert all(isinstance(key, str) for key in node), "a key that is not a string"
        else:
            assert node is None or isinstance(node, str | bool | int | float), type(node)
            assert not isinstance(node, float) or math.isfinite(node)
    return count, deepest


def _holds_the_contract(manifests: Manifests, size: int) -> None:
    for problem in manifests.problems:
        rendered = str(problem)
        assert "\n" not in rendered and rendered.startswith(problem.path)
        assert problem.line >= 0 and problem.reason
    total = 0
    for document in manifests.documents:
        count, deepest = _nodes_and_depth(document.obj)
        assert deepest <= MAX_DEPTH
        assert document.line >= 0
        total += count
    # Aliases may supply 99% of a document's nodes, and any document 1,000 nodes.
    assert total <= 100 * (size + 1) + 1_000 * len(manifests.documents)


@given(encoded)
def test_any_bytes_on_stdin_give_documents_and_problems_never_an_exception(data: bytes) -> None:
    _holds_the_contract(load(["-"], data), len(data))


@given(texts)
def test_any_text_in_a_file_gives_documents_and_problems_never_an_exception(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    manifests = load(["-"], data, "in.yaml")
    _holds_the_contract(manifests, len(data))
    for document in manifests.documents:
        document.line_of("metadata.name")  # the line index reads what the decoder read


def _as_read_back(value: Any) -> Any:
    # The API server receives a float as Go writes it, integral ones as integers.
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, list):
        return [_as_read_back(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_read_back(item) for key, item in value.items()}
    return value


_readable = json_values.filter(lambda v: "\x00" not in repr(v) and "\ud800" not in repr(v))


#: The heavier properties (a whole stream written, or admitted) run a quarter of the examples.
_QUARTER = settings(max_examples=max(settings.default.max_examples // 4, 1))


@_QUARTER
@given(st.lists(st.dictionaries(st.text(max_size=8), _readable, max_size=4), max_size=4))
def test_what_mutate_writes_reads_back_as_the_same_values(objects: list[dict[str, Any]]) -> None:
    written = dump_all(objects).encode()
    manifests = load(["-"], written)
    assert manifests.problems == [] or objects == []
    assert [d.obj for d in manifests.documents] == [_as_read_back(o) for o in objects]


_CONFIG = read_config(None)


@_QUARTER
@given(st.lists(any_object, min_size=1, max_size=3))
def test_check_on_random_manifests_reports_every_object_and_points_into_the_file(
    objects: list[dict[str, Any]],
) -> None:
    text = dump_all(objects)
    manifests = load(["-"], text.encode(), "in.yaml")
    assert manifests.problems == []
    report = dry_run(manifests.documents, _CONFIG, None, namespace="default")
    assert report.exit_code() in (0, 1)
    lines = text.count("\n") + 1
    for checked in report.checked:
        for finding in checked.findings:
            assert 0 <= finding.line <= lines
