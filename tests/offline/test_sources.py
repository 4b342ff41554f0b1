"""Reading manifests: files, directories, stdin; documents, Lists, and the line of a field."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhooks.manifests.reader import Problem, Source, parse_field, read, split

STREAM = """\
# Source: chart/templates/a.yaml
---
---
# an empty document above, a comment here
apiVersion: v1
kind: Pod
metadata:
  name: a
  creationTimestamp: 2024-05-01T12:00:00Z
spec:
  tolerations:
  - key: a
  - key: b
    value: =
  nodeSelector:
    kubernetes.io/arch: arm64
---
apiVersion: v1
kind: List
items:
- kind: Pod
  metadata: {name: x}
- kind: Pod
  spec:
    tolerations: [{key: q}]
"""


def test_a_stream_splits_into_documents_and_list_items() -> None:
    docs, problem = split(Source("s.yaml", STREAM))
    assert problem is None
    shape = [(d.index, d.item, d.line) for d in docs]
    assert shape == [(0, None, 3), (1, None, 5), (2, 0, 21), (2, 1, 23)]
    assert docs[0].obj is None, "an empty document is kept as None, so indexes match yq"
    assert docs[2].parent["kind"] == "List"


def test_timestamps_and_bare_equals_stay_strings() -> None:
    docs, _ = split(Source("s.yaml", STREAM))
    pod = docs[1].obj
    assert pod["metadata"]["creationTimestamp"] == "2024-05-01T12:00:00Z"
    assert pod["spec"]["tolerations"][1]["value"] == "="


@pytest.mark.parametrize(
    ("doc", "field", "line"),
    [
        (1, "spec.tolerations[1].value", 14),
        (1, "spec.tolerations[0]", 12),
        (1, "spec.nodeSelector[kubernetes.io/arch]", 16),
        (1, "spec.tolerations[7].key", 11),
        (1, "status.phase", 5),
        (1, "", 5),
        (3, "spec.tolerations[0].key", 25),
        (2, "metadata.name", 22),
    ],
    ids=[
        "a key inside a list item",
        "a list item",
        "a map key in brackets with dots and a slash",
        "a missing index falls back to the list",
        "a missing top-level field falls back to the object",
        "no path is the object's line",
        "a field of a List item in flow style",
        "a field of the first List item",
    ],
)
def test_the_line_of_a_field(doc: int, field: str, line: int) -> None:
    docs, _ = split(Source("s.yaml", STREAM))
    assert docs[doc].line_of(field) == line


@pytest.mark.parametrize(
    ("path", "tokens"),
    [
        (
            "spec.template.spec.tolerations[2].key",
            ["spec", "template", "spec", "tolerations", 2, "key"],
        ),
        ("metadata.annotations[example.com/a.b]", ["metadata", "annotations", "example.com/a.b"]),
        ("metadata.taints[0]", ["metadata", "taints", 0]),
        ("", []),
    ],
    ids=["indexes are integers", "bracketed map keys keep dots", "a trailing index", "empty"],
)
def test_parse_field(path: str, tokens: list[object]) -> None:
    assert parse_field(path) == tokens


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "a: 1\nb: [\n",
            Problem(
                "bad.yaml",
                3,
                "invalid YAML: did not find expected node content (while parsing a flow node)",
            ),
        ),
        (
            "a: 1\n  b: 2\n",
            Problem("bad.yaml", 2, "invalid YAML: mapping values are not allowed in this context"),
        ),
    ],
    ids=["an unclosed flow sequence", "a mapping value where none may be"],
)
def test_a_syntax_error_is_a_problem_with_its_line(text: str, problem: Problem) -> None:
    _, found = split(Source("bad.yaml", text))
    assert found == problem
    assert str(found).startswith(f"bad.yaml:{problem.line}: invalid YAML: ")


def test_documents_before_a_syntax_error_are_kept() -> None:
    docs, problem = split(Source("s.yaml", "kind: Pod\n---\nkind: [\n"))
    assert [d.obj for d in docs] == [{"kind": "Pod"}]
    assert problem is not None and problem.line == 4


def test_json_that_libyaml_rejects_is_still_read() -> None:
    docs, problem = split(Source("p.json", '{\n\t"kind":\t"Pod",\n\t"metadata": {"name": "a"}\n}'))
    assert problem is None
    assert [(d.obj["kind"], d.line) for d in docs] == [("Pod", 1)]


def test_directories_are_walked_in_order_skipping_hidden_and_other_files(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("b/z.yml", "a.yaml", "c.JSON", "notes.txt", ".hidden.yaml", ".git/x.yaml"):
        (tmp_path / name).write_text("kind: Pod\n")
    sources, problems = read([str(tmp_path)])
    assert problems == []
    assert [Path(s.name).relative_to(tmp_path).as_posix() for s in sources] == [
        "a.yaml",
        "c.JSON",
        "b/z.yml",
    ]


def test_stdin_unreadable_files_and_bad_encodings(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    sources, problems = read(
        ["-", str(tmp_path / "missing.yaml"), str(latin)], b"kind: Pod\n", "chart"
    )
    assert [(s.name, s.text) for s in sources] == [("chart", "kind: Pod\n")]
    assert [str(p) for p in problems] == [
        f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory",
        f"{latin}: not UTF-8 text (byte 9)",
    ]


TRICKY = [
    "a: 0x1F\nb: 0o17\nc: 017\nd: 1_000\ne: 1:30\nf: -.inf\ng: .NaN\nh: 1e3\n",
    "a: yes\nb: No\nc: ~\nd:\ne: 'yes'\nf: !!str 12\n",
    "base: &b {x: 1, y: [1, 2]}\nuse: *b\nmerged:\n  <<: *b\n  y: 3\n",
    "? !!str long key\n: explicit key\n'quoted': 1\n",
    "bin: !!binary aGVsbG8=\nset: !!set {a, b}\n",
    "nested:\n- - - deep\n- {k: [1, {z: null}]}\n1: int key\ntrue: bool key\n",
]


@pytest.mark.parametrize(
    "text",
    TRICKY,
    ids=[
        "YAML 1.1 numbers",
        "booleans, nulls and explicit strings",
        "anchors, aliases and merge keys",
        "explicit and quoted keys",
        "binary and set tags",
        "nesting and non-string keys",
    ],
)
def test_the_fast_constructor_agrees_with_the_generic_one(text: str) -> None:
    import math

    import yaml

    docs, problem = split(Source("t.yaml", text))
    assert problem is None
    expected = yaml.load(text, Loader=yaml.SafeLoader)
    actual = docs[0].obj
    if "NaN" in text:
        assert math.isnan(actual.pop("g")) and math.isnan(expected.pop("g"))
    assert actual == expected


def test_an_unhashable_key_is_the_generic_constructors_error() -> None:
    _, problem = split(Source("t.yaml", "? [a, b]\n: complex key\n"))
    assert problem is not None
    assert problem.reason == "invalid YAML: found unhashable key (while constructing a mapping)"
