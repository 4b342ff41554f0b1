"""Manifests in: files, directories and stdin split into documents that know their lines.

Parsing uses libyaml (``CSafeLoader``) and keeps, per document, only its start line and its
text span. Why not keep the YAML node trees for line numbers: holding thousands of node trees
alive makes the cyclic garbage collector walk them again and again (about 2.5x the cost of a
plain load in our measurements), while re-composing one document's span on demand is cheap
and only needed for the few documents that have a finding pointing into them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

STDIN = "-"
STDIN_NAME = "<stdin>"
SUFFIXES = (".yaml", ".yml", ".json")

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_NUMBERS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_PLAIN_KEYS = frozenset({_STR, _NULL, _BOOL, *_NUMBERS})


class _Unusual(Exception):
    """The document needs the full constructor (aliases, merge keys, explicit tags)."""


class _Loader(_Base):  # type: ignore[misc]
    """libyaml's safe loader that remembers each document's root node while it is built.

    Timestamps stay strings, as the API server's decoder keeps them: a ``datetime`` would
    fail schema validation and change how values are printed back. Documents made only of
    plain maps, lists and scalars (nearly every manifest) are built by one tight recursive
    function, about a quarter faster than the generic constructor; anything else falls
    back to the generic constructor, so results never differ.
    """

    root: Any = None

    def construct_document(self, node: Any) -> Any:
        self.root = node
        try:
            return self._plain(node, set())
        except (_Unusual, RecursionError):
            return super().construct_document(node)

    def _plain(self, node: Any, seen: set[int]) -> Any:
        cls, tag = node.__class__, node.tag
        if cls is yaml.ScalarNode:
            if tag == _STR:
                return node.value
            if tag == _NULL:
                return None
            if tag == _BOOL:
                return self.bool_values[node.value.lower()]
            if tag in _NUMBERS:
                return self.yaml_constructors[tag](self, node)
            raise _Unusual
        if id(node) in seen:
            raise _Unusual  # an alias: anchors are the generic constructor's business
        seen.add(id(node))
        if cls is yaml.MappingNode and tag == _MAP:
            out = {}
            for key, value in node.value:
                if key.__class__ is not yaml.ScalarNode or key.tag not in _PLAIN_KEYS:
                    raise _Unusual  # merge keys ("<<") and complex keys
                out[self._plain(key, seen)] = self._plain(value, seen)
            return out
        if cls is yaml.SequenceNode and tag == _SEQ:
            return [self._plain(item, seen) for item in node.value]
        raise _Unusual


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}
# A bare "=" resolves to YAML 1.1's value tag, which the safe constructor cannot build.
_Loader.add_constructor("tag:yaml.org,2002:value", _Base.construct_yaml_str)


@dataclass(frozen=True, slots=True)
class Problem:
    """Input that cannot be used: a file that cannot be read or YAML that does not parse.

    Rendered ``path:line: reason`` (``path: reason`` when no line is known), the shape
    compilers use, so editors and CI log viewers can jump to it.
    """

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.reason}"


@dataclass(eq=False, slots=True)
class Source:
    """One input (a file, or stdin) and its text; re-composes document spans on demand."""

    name: str
    text: str
    _cache: dict[tuple[int, int], Any] = field(default_factory=dict, repr=False)

    def node(self, span: tuple[int, int, int]) -> Any:
        """The YAML node tree of one document span, composed again (the last few are kept).

        Only documents with a finding that points into them pay for this.
        """
        start, end, column = span
        key = (start, end)
        if key not in self._cache:
            if len(self._cache) > 8:
                self._cache.clear()
            snippet = " " * column + self.text[start:end]
            try:
                self._cache[key] = yaml.compose(snippet, Loader=_Loader)
            except yaml.YAMLError:  # pragma: no cover - the span parsed once already
                self._cache[key] = None
        return self._cache[key]


@dataclass(eq=False, slots=True)
class Document:
    """One object from the input: where it came from, and the parsed value.

    ``index`` counts the YAML documents of the file from 0, empty ones included (as ``yq``
    does); ``item`` is the position inside a ``kind: List`` (``parent``); ``line`` is 1-based.
    """

    source: Source
    index: int
    line: int
    obj: Any
    item: int | None = None
    span: tuple[int, int, int] | None = None
    first_line: int = 0
    parent: Any = None

    @property
    def path(self) -> str:
        """The file name as the user gave it; reports echo it so paths match the command."""
        return self.source.name

    def line_of(self, field_path: str) -> int:
        """The 1-based line of ``field_path`` (``spec.tolerations[2].key``) in this document.

        Why the nearest existing ancestor when the path is absent: a finding about a field
        the manifest does not write (a missing key, a path upstream names differently) is
        best shown where its parent is written.
        """
        tokens = parse_field(field_path)
        if self.span is None or not tokens:
            return self.line
        node = self.source.node(self.span)
        if node is None:  # pragma: no cover - defensive
            return self.line
        if self.item is not None:
            tokens = ["items", self.item, *tokens]
        found = locate(node, tokens)
        return self.line if found is None else self.first_line + found + 1


_TOKEN_RE = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


def parse_field(path: str) -> list[str | int]:
    """Split an upstream field path into keys and indexes: ``a.b[2][x/y]`` → ``a, b, 2, x/y``.

    Bracketed parts are list indexes when numeric and map keys otherwise, which is how
    apimachinery's ``field.Path`` renders ``Index`` and ``Key``.
    """
    tokens: list[str | int] = []
    for match in _TOKEN_RE.finditer(path):
        bracket, name = match.groups()
        if name is not None:
            tokens.append(name)
        elif bracket is not None:
            tokens.append(int(bracket) if bracket.isdigit() else bracket)
    return tokens


def locate(node: Any, tokens: Sequence[str | int]) -> int | None:
    """The 0-based line of the deepest node on ``tokens`` (a key's own line for mappings).

    A key's line rather than its value's, because a block value starts on the next line.
    """
    line: int | None = None
    for token in tokens:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(token):
                    line = key.start_mark.line
                    node = value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(token, int):
            if not 0 <= token < len(node.value):
                return line
            node = node.value[token]
            line = node.start_mark.line
        else:
            return line
    return line


def _is_list(obj: Any) -> bool:
    kind = obj.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list)


def _yaml_problem(name: str, exc: yaml.YAMLError) -> Problem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    reason = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    return Problem(name, mark.line + 1 if mark is not None else 0, reason.replace("\n", " "))


def split(source: Source) -> tuple[list[Document], Problem | None]:
    """Parse ``source`` into documents; ``kind: List`` items become documents of their own.

    Documents before a syntax error are kept, so one bad document late in a long stream does
    not hide findings in the good ones; the error is returned alongside.
    """
    docs: list[Document] = []
    loader = _Loader(source.text)
    index = -1
    try:
        while loader.check_data():
            loader.root = None
            obj = loader.get_data()
            index += 1
            root = loader.root
            start, end = root.start_mark, root.end_mark
            span = (start.index, end.index, start.column)
            if isinstance(obj, dict) and _is_list(obj) and obj["items"]:
                items = next(
                    (v for k, v in root.value if getattr(k, "value", None) == "items"), None
                )
                for i, item in enumerate(obj["items"]):
                    line = start.line + 1
                    if isinstance(items, yaml.SequenceNode) and i < len(items.value):
                        line = items.value[i].start_mark.line + 1
                    docs.append(Document(source, index, line, item, i, span, start.line, obj))
            else:
                docs.append(Document(source, index, start.line + 1, obj, None, span, start.line))
    except yaml.YAMLError as exc:
        problem = _yaml_problem(source.name, exc)
        if not docs and source.text.lstrip()[:1] in ("{", "["):
            return _json(source, problem)
        return docs, problem
    finally:
        loader.dispose()
    return docs, None


def _json(source: Source, problem: Problem) -> tuple[list[Document], Problem | None]:
    # JSON that libyaml rejects (tabs in indentation, say) is still JSON; lines are lost.
    try:
        obj = orjson.loads(source.text)
    except orjson.JSONDecodeError:
        return [], problem
    if isinstance(obj, dict) and _is_list(obj):
        items = obj["items"]
        return [Document(source, 0, 1, item, i, parent=obj) for i, item in enumerate(items)], None
    return [Document(source, 0, 1, obj)], None


def _walk(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and name.lower().endswith(SUFFIXES):
                yield Path(root) / name


def read(
    paths: Iterable[str], stdin: bytes | None = None, stdin_name: str = STDIN_NAME
) -> tuple[list[Source], list[Problem]]:
    """Read every input: files as named, directories recursively (``*.yaml|yml|json``), stdin.

    Directories are walked in sorted order, hidden entries skipped, so output is stable
    across machines; unreadable inputs become :class:`Problem` values, not exceptions.
    """
    sources: list[Source] = []
    problems: list[Problem] = []

    def add(name: str, data: bytes) -> None:
        try:
            sources.append(Source(name, data.decode("utf-8-sig")))
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, 0, f"not UTF-8 text (byte {exc.start})"))

    for path in paths:
        if path == STDIN:
            add(stdin_name, stdin or b"")
            continue
        target = Path(path)
        files = list(_walk(target)) if target.is_dir() else [target]
        for file in files:
            try:
                data = file.read_bytes()
            except OSError as exc:
                problems.append(Problem(str(file), 0, f"cannot read: {exc.strerror}"))
                continue
            add(str(file), data)
    return sources, problems
