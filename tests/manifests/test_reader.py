"""Reading manifests: files, directories, stdin; documents, Lists, and the line of a field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from webhooks.manifests.reader import ManifestError, Problem, Source, load, parse_field, read, split

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
        ("a: 1\nb: [\n", Problem("bad.yaml", 3, "invalid YAML: a value is missing here")),
        (
            "a: 1\n  b: 2\n",
            Problem(
                "bad.yaml",
                2,
                "invalid YAML: a mapping value is not allowed here (check the indentation, "
                'or quote a value that holds ": ")',
            ),
        ),
    ],
    ids=["an unclosed flow sequence", "a mapping value where none may be"],
)
def test_a_syntax_error_is_a_problem_with_its_line(
    text: str, problem: Problem, parser_path: str
) -> None:
    _, found = split(Source("bad.yaml", text))
    assert found == problem
    assert str(found).startswith(f"bad.yaml:{problem.line}: invalid YAML: ")
    assert "\n" not in str(found)


def test_documents_before_a_syntax_error_are_kept() -> None:
    docs, problem = split(Source("s.yaml", "kind: Pod\n---\nkind: [\n"))
    assert [d.obj for d in docs] == [{"kind": "Pod"}]
    assert problem is not None and problem.line == 4


def test_json_that_libyaml_rejects_is_still_read() -> None:
    docs, problem = split(Source("p.json", '{\n\t"kind":\t"Pod",\n\t"metadata": {"name": "a"}\n}'))
    assert problem is None
    assert [(d.obj["kind"], d.line) for d in docs] == [("Pod", 1)]


def test_directories_are_walked_in_kubectls_order_with_kubectls_suffixes(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("b/z.yml", "a.yaml", "c.json", "C.JSON", "d.YAML", "notes.txt"):
        (tmp_path / name).write_text("kind: Pod\n")
    sources, problems = read([str(tmp_path)])
    assert problems == []
    assert [Path(s.name).relative_to(tmp_path).as_posix() for s in sources] == [
        "a.yaml",
        "b/z.yml",
        "c.json",
    ], "byte order of names, a directory where its name falls; suffixes matched as written"


def test_a_file_named_on_the_command_line_is_read_whatever_its_name(tmp_path: Path) -> None:
    (tmp_path / "pod.txt").write_text("kind: Pod\n")
    sources, problems = read([str(tmp_path / "pod.txt")])
    assert (problems, [s.text for s in sources]) == ([], ["kind: Pod\n"])


HIDDEN = [
    pytest.param(".overlay/deploy.yaml", id="a file under a hidden directory"),
    pytest.param(".hidden.yaml", id="a hidden file"),
    pytest.param("a/.git/x.yaml", id="a file under a hidden directory further down"),
]


@pytest.mark.parametrize("name", HIDDEN)
def test_hidden_paths_are_read_as_kubectl_apply_r_reads_them(tmp_path: Path, name: str) -> None:
    # kubectl apply -R -f DIR filters a walk by suffix only: nothing is skipped for a dot.
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text("kind: Pod\nmetadata: {name: hidden}\n")
    manifests = load([str(tmp_path)])
    assert manifests.problems == []
    assert [
        (Path(d.path).relative_to(tmp_path).as_posix(), d.line) for d in manifests.documents
    ] == [(name, 1)]


def test_an_empty_path_is_refused_rather_than_read_as_the_current_directory() -> None:
    manifests = load([""])
    assert [str(p) for p in manifests.problems] == [
        '"": an empty path names nothing (an unset variable?): give a file or a directory'
    ]
    assert manifests.documents == []


def test_an_unreadable_directory_is_a_problem_not_a_silent_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(path: object) -> object:
        raise PermissionError(13, "Permission denied")

    (tmp_path / "a.yaml").write_text("kind: Pod\n")
    monkeypatch.setattr("webhooks.manifests.reader.os.scandir", denied)
    sources, problems = read([str(tmp_path)])
    assert sources == []
    assert [str(p) for p in problems] == [f"{tmp_path}: cannot read: Permission denied"]


def test_stdin_unreadable_files_and_encodings(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    utf16 = tmp_path / "utf16.yaml"
    utf16.write_bytes("\ufeffkind: Pod\n".encode("utf-16-le"))
    utf32 = tmp_path / "utf32.yaml"
    utf32.write_bytes("\ufeffkind: Pod\n".encode("utf-32-le"))
    sources, problems = read(
        ["-", str(tmp_path / "missing.yaml"), str(latin), str(utf16), str(utf32)],
        b"kind: Pod\n",
        "chart",
    )
    assert [(s.name, s.text) for s in sources] == [
        ("chart", "kind: Pod\n"),
        (str(latin), "name: caf\ufffd\n"),
        (str(utf16), "kind: Pod\n"),
    ], "kubectl replaces bytes that are not UTF-8, and honours a UTF-16 byte-order mark"
    assert [str(p) for p in problems] == [
        f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory",
        f"{utf32}: UTF-32 text is not read (kubectl reads UTF-8 and UTF-16)",
    ]


EMPTY = [
    (
        "a directory without manifest files",
        {"notes.txt": "x"},
        "DIR",
        "no *.yaml, *.yml or *.json file",
    ),
    (
        "a directory of empty files",
        {"a.yaml": "", "b.yaml": "# nothing\n---\n"},
        "DIR",
        "2 files, all empty",
    ),
    ("a file of comments", {"a.yaml": "# TODO\n"}, "a.yaml", "the file is empty or only comments"),
    ("an empty stdin", {}, "-", "the input is empty"),
]


@pytest.mark.parametrize(
    ("files", "path", "reason"), [e[1:] for e in EMPTY], ids=[e[0] for e in EMPTY]
)
def test_a_path_that_holds_no_manifest_is_a_problem(
    tmp_path: Path, files: dict[str, str], path: str, reason: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    target = "-" if path == "-" else str(tmp_path if path == "DIR" else tmp_path / path)
    manifests = load([target], b"", "<stdin>")
    assert [p.reason for p in manifests.problems] == [f"no manifests found: {reason}"]
    name = "<stdin>" if path == "-" else target
    assert str(manifests.problems[0]) == f"{name}: no manifests found: {reason}"


def test_load_counts_files_and_keeps_documents_in_order(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("kind: A\n---\nkind: B\n")
    (tmp_path / "b.json").write_text('{"kind": "C"}{"kind": "D"}')
    (tmp_path / "c.yaml").write_text("# an empty file beside others is fine\n")
    manifests = load([str(tmp_path), "-"], b"kind: E\n")
    assert manifests.problems == []
    assert manifests.files == 4
    assert [d.obj["kind"] for d in manifests.documents] == ["A", "B", "C", "D", "E"]


def test_a_list_that_is_empty_still_counts_as_a_manifest() -> None:
    manifests = load(["-"], b"apiVersion: v1\nkind: List\nitems: []\n")
    assert manifests.problems == []
    assert [d.obj["kind"] for d in manifests.documents] == ["List"]


def test_the_one_error_type_renders_file_line_reason() -> None:
    assert Problem is ManifestError
    assert str(ManifestError("a.yaml", 3, "bad")) == "a.yaml:3: bad"
    assert str(ManifestError("a.yaml", 0, "bad")) == "a.yaml: bad"
    with pytest.raises(ManifestError) as caught:
        raise ManifestError("a.yaml", 3, "bad")
    assert caught.value == ManifestError("a.yaml", 3, "bad")


def test_lines_in_a_json_stream_and_a_json_list() -> None:
    text = (
        '{"kind": "Pod", "spec": {}}\n'
        '{"kind": "Pod",\n "spec": {"tolerations": [\n  {"key": "a"}]}}\n'
        '{"kind": "List", "items": [\n {"kind": "Pod"},\n {"kind": "Node"}]}\n'
    )
    docs, problem = split(Source("s.json", text))
    assert problem is None
    assert [(d.line, d.item) for d in docs] == [(1, None), (2, None), (6, 0), (7, 1)]
    assert docs[1].line_of("spec.tolerations[0].key") == 4
    assert docs[3].line_of("kind") == 7


def test_the_line_of_a_field_five_thousand_levels_deep() -> None:
    text = "kind: Widget\nspec:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(5000))
    text += "  " * 5001 + "x: 1\n"
    (doc,), problem = split(Source("deep.yaml", text))
    assert problem is None
    assert doc.line_of("spec" + ".a" * 5000 + ".x") == 5003
    assert doc.line_of("spec" + ".a" * 10 + ".missing") == 12


def test_the_line_of_a_field_past_libyamls_own_limit(parser_path: str) -> None:
    text = "kind: Widget\nspec:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(1500))
    text += "  " * 1501 + "x: 1\n"
    (doc,), problem = split(Source("deep.yaml", text))
    assert problem is None
    assert doc.line_of("spec" + ".a" * 1500 + ".x") == 1503


def test_a_pod_whose_node_selector_aliases_its_labels_gets_a_copy() -> None:
    text = "kind: Pod\nmetadata:\n  labels: &labels\n    app: web\nspec:\n  nodeSelector: *labels\n"
    (doc,), _ = split(Source("p.yaml", text))
    doc.obj["spec"]["nodeSelector"]["sandbox"] = "gvisor"
    assert doc.obj["metadata"]["labels"] == {"app": "web"}


AS_KUBECTL = Path(__file__).parent.parent / "fixtures" / "as-kubectl-reads"


def test_a_directory_of_what_kubectl_reads_is_read_whole(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(AS_KUBECTL, corpus)
    # `kubectl get nodes -o yaml > nodes.yaml` in Windows PowerShell writes UTF-16.
    nodes = (AS_KUBECTL / "nodes" / "nodes.yaml").read_text()
    (corpus / "nodes" / "utf16.yaml").write_bytes(("\ufeff" + nodes).encode("utf-16-le"))
    manifests = load([str(corpus)])
    assert manifests.problems == []
    assert manifests.files == 6
    found = [(Path(d.path).name, d.line, d.obj["kind"]) for d in manifests.documents if d.obj]
    assert found == [
        ("anchors.yaml", 2, "Pod"),
        ("nodes.yaml", 6, "Node"),
        ("nodes.yaml", 17, "Node"),
        ("utf16.yaml", 6, "Node"),
        ("utf16.yaml", 17, "Node"),
        ("pods.json", 1, "Pod"),
        ("pods.json", 2, "Pod"),
        ("rendered-chart.yaml", 4, "RuntimeClass"),
        ("rendered-chart.yaml", 14, "Deployment"),
        ("windows-line-ends.yaml", 1, "DaemonSet"),
    ], "in kubectl's order: the nodes/ directory where its name falls among the files"
    pod = manifests.documents[0].obj
    assert pod["spec"]["containers"][1] == {"name": "sidecar", "image": "nginx:1.27"}
    deployment = next(d.obj for d in manifests.documents if d.obj and d.obj["kind"] == "Deployment")
    seconds = [
        t["tolerationSeconds"] for t in deployment["spec"]["template"]["spec"]["tolerations"]
    ]
    assert seconds == [300, 300]
    assert all(type(s) is int for s in seconds)


NOT_OBJECTS = [
    pytest.param("This is garbage\n", 1, "the document is a string", "string", id="a text scalar"),
    pytest.param("- a\n- b\n", 1, "the document is a list", "array", id="a list at top level"),
    pytest.param("42\n", 1, "the document is a number", "number", id="a number"),
    pytest.param("1.5\n", 1, "the document is a number", "number", id="a float"),
    pytest.param("true\n", 1, "the document is a boolean", "bool", id="a boolean"),
    pytest.param('"quoted"\n', 1, "the document is a string", "string", id="a JSON string"),
    pytest.param(
        "kind: Pod\n---\n# a comment\nplain text\n",
        4,
        "the document is a string",
        "string",
        id="a scalar after an object, at its own line",
    ),
    pytest.param(
        "apiVersion: v1\nkind: List\nitems:\n- {kind: Pod}\n- just text\n",
        5,
        "item 1 of the List is a string",
        "string",
        id="a List item that is a scalar",
    ),
]


@pytest.mark.parametrize(("text", "line", "what", "go"), NOT_OBJECTS)
def test_a_document_that_is_not_a_mapping_is_refused_as_kubectl_refuses_it(
    text: str, line: int, what: str, go: str
) -> None:
    manifests = load(["-"], text.encode(), "in.yaml")
    reason = (
        f"not a Kubernetes object: {what}, not a mapping with apiVersion and kind "
        f"(kubectl refuses it too: cannot unmarshal {go} into an object)"
    )
    assert [str(p) for p in manifests.problems] == [f"in.yaml:{line}: {reason}"]
    assert all(isinstance(d.obj, dict) for d in manifests.documents)


def test_mappings_and_empty_documents_are_not_refused_for_their_shape() -> None:
    manifests = load(["-"], b"---\n---\n{}\n---\nmetadata: {name: x}\n---\nnull\n")
    assert manifests.problems == []
    assert [d.obj for d in manifests.documents if d.obj is not None] == [
        {},
        {"metadata": {"name": "x"}},
    ]


def test_a_reader_of_other_files_gets_every_document_and_judges_it_itself() -> None:
    manifests = load(["-"], b"- a\n---\n42\n", objects=False)
    assert manifests.problems == []
    assert [d.obj for d in manifests.documents] == [["a"], 42]


OTHER_FILES = [
    pytest.param("", [], id="an empty file is not a manifest"),
    pytest.param("# only a comment\n", [], id="a file of comments is not one"),
    pytest.param("[1, 2]\n", [[1, 2]], id="a JSON array is not one"),
    pytest.param("- a\n---\n42\n", [["a"], 42], id="a stream of scalars and lists is not one"),
]


@pytest.mark.parametrize(("text", "kept"), OTHER_FILES)
def test_a_file_without_a_mapping_is_skipped_when_asked_and_refused_otherwise(
    tmp_path: Path, text: str, kept: list[object]
) -> None:
    path = tmp_path / "other.yaml"
    path.write_text(text)
    assert load([str(path)]).problems != []
    manifests = load([str(path)], skip_other_files=True)
    assert manifests.problems == []
    assert [d.obj for d in manifests.documents if d.obj is not None] == kept


STILL_REFUSED = [
    pytest.param("kind: Pod\n---\nplain text\n", 3, id="a stray scalar beside an object"),
    pytest.param("a: [\n", 2, id="a file that does not parse"),
]


@pytest.mark.parametrize(("text", "line"), STILL_REFUSED)
def test_skipping_other_files_still_refuses_a_broken_manifest(
    tmp_path: Path, text: str, line: int
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    manifests = load([str(path)], skip_other_files=True)
    assert [p.line for p in manifests.problems] == [line]
