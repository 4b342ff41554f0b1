"""``mutate``'s YAML: as PyYAML writes it for ordinary objects, at any depth, read back intact."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from webhooks.manifests.decode import decode
from webhooks.manifests.limits import MAX_DEPTH
from webhooks.manifests.tree import depth
from webhooks.manifests.writer import dump_all

OBJECTS: list[Any] = [
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {}},
        "spec": {
            "replicas": 3,
            "template": {
                "spec": {
                    "containers": [{"name": "web", "image": "nginx:1.27", "args": []}],
                    "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 300}],
                }
            },
        },
    },
    {
        "text": "multi\nline\n",
        "unicode": "caf\u00e9 \u2603",
        "empty": "",
        "colon": "x: y",
        "hash": "#c",
        "quote": "it's",
        "dash": "- a",
        "long": "very " * 200,
        "number": "123",
        "null": None,
        "true": True,
        "float": 1.5,
        "big": 2**63,
        "nested": [[1, [2]], {}],
    },
]


def _pyyaml(objects: list[Any]) -> str:
    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(
        objects,
        Dumper=dumper,
        explicit_start=True,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 30,
    )


def test_ordinary_objects_are_written_as_pyyaml_writes_them() -> None:
    assert dump_all(OBJECTS) == _pyyaml(OBJECTS)


AMBIGUOUS = ["y", "n", "N", "on", "1e3", "0o17", "09", "<<", "1:30", "yes", "~", "=", "True"]


@pytest.mark.parametrize("text", AMBIGUOUS)
def test_a_string_kubectl_would_read_as_something_else_is_quoted(text: str) -> None:
    written = dump_all([{text: text}])
    assert written.count("'") == 4 or written.count('"') == 4, written
    (raw,) = decode(written).documents
    assert raw.value == {text: text}


def test_ten_thousand_levels_are_written_without_recursion() -> None:
    obj: Any = {"x": 1}
    for _ in range(MAX_DEPTH - 1):
        obj = {"a": obj}
    written = dump_all([obj, [obj]])
    first, second = decode(written).documents[0], None
    assert depth(first.value) == MAX_DEPTH
    assert second is None


def test_the_output_reads_back_as_the_same_objects() -> None:
    written = dump_all(OBJECTS)
    assert [raw.value for raw in decode(written).documents] == OBJECTS


@pytest.mark.parametrize(
    "document",
    [
        pytest.param({}, id="an empty map"),
        pytest.param([], id="an empty list"),
        pytest.param("hello", id="a string"),
        pytest.param(None, id="null"),
        pytest.param("a\n---\nb", id="a string whose lines look like separators"),
    ],
)
def test_a_document_that_is_not_a_block_collection_is_written_after_a_separator_of_its_own(
    document: Any,
) -> None:
    # An emitter writes these on the separator's line ("--- {}"), which kubectl refuses:
    # only spaces or a comment may follow "---".
    written = dump_all([document, {"kind": "Pod"}])
    assert all(line == "---" for line in written.splitlines() if line.startswith("---"))
    decoded = decode(written)
    assert decoded.error is None
    assert [raw.value for raw in decoded.documents] == [document, {"kind": "Pod"}]
