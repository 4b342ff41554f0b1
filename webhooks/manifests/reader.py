"""Manifests in: files, directories and stdin, split into documents that know their lines.

This is the one reader behind ``check``/``mutate``/``explain`` PATHS, ``--nodes`` and
``--objects``, so all of them take what kubectl takes and refuse what it refuses
(:mod:`.decode` says how), and every refusal is one :class:`ManifestError` rendered
``file:line: reason``. A document keeps only its value, its start line and its text span;
the line of a field inside it is found on demand (:mod:`.lines`), because only the few
documents with a finding need it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from webhooks.manifests.decode import decode
from webhooks.manifests.encoding import text_of
from webhooks.manifests.errors import ManifestError, Refused
from webhooks.manifests.files import Unreadable, read_file, read_stream
from webhooks.manifests.limits import A_MANIFEST, MAX_FILE_BYTES
from webhooks.manifests.lines import Index, index_lines, locate, parse_field

__all__ = [
    "STDIN",
    "STDIN_NAME",
    "SUFFIXES",
    "Document",
    "ManifestError",
    "Manifests",
    "Problem",
    "Source",
    "Stdin",
    "api_document",
    "load",
    "not_an_object",
    "other_file",
    "parse_field",
    "read",
    "split",
    "walk",
]

STDIN = "-"
STDIN_NAME = "<stdin>"
SUFFIXES = (".yaml", ".yml", ".json")

#: The name the dry-run report gives unusable input; the same type as :class:`ManifestError`.
Problem = ManifestError


@dataclass(eq=False, slots=True)
class Source:
    """One input (a file, or stdin) and its decoded text; indexes document lines on demand."""

    name: str
    text: str
    _cache: dict[tuple[int, int], Index] = field(default_factory=dict, repr=False)

    def lines(self, span: tuple[int, int, int]) -> Index:
        """The line index (:func:`~.lines.index_lines`) of one document span, kept for reuse.

        Only documents with a finding that points into them pay for this; the last few are
        kept because findings of one document arrive together.
        """
        start, end, column = span
        key = (start, end)
        if key not in self._cache:
            if len(self._cache) > 8:
                self._cache.clear()
            self._cache[key] = index_lines(" " * column + self.text[start:end])
        return self._cache[key]


@dataclass(eq=False, slots=True)
class Document:
    """One object from the input: where it came from, and the parsed value.

    ``index`` counts the documents of the file from 0, empty ones included (as ``yq``
    does); ``item`` is the position inside a ``kind: List`` (``parent``); ``line`` is 1-based.
    ``obj`` holds JSON values only (dicts, lists, strings, numbers, booleans, ``None``),
    and no two places share an object, so mutating one field never changes another.
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
        if self.item is not None:
            tokens = ["items", self.item, *tokens]
        found = locate(self.source.lines(self.span), tokens)
        return self.line if found is None else self.first_line + found + 1


def api_document(obj: Any, where: str) -> Document:
    """A :class:`Document` for an object read from the API server, named ``where``.

    Why a document at all: the dry run admits documents, and the live audit must admit
    exactly as ``check`` does. ``where`` (``api:pods/shop/web-0``) stands in for the file,
    and the line is 0 because there is no text to point into.
    """
    return Document(Source(where, ""), 0, 0, obj)


@dataclass(slots=True)
class Manifests:
    """What :func:`load` read: documents in input order, every problem, and counts.

    ``files`` counts the files read (stdin counts as one); a PATH that yielded no document
    at all is among the ``problems``, because a CI job pointed at the wrong directory must
    fail rather than pass on nothing.
    """

    documents: list[Document] = field(default_factory=list)
    problems: list[ManifestError] = field(default_factory=list)
    files: int = 0


def _is_list(obj: Any) -> bool:
    kind = obj.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list)


def split(source: Source) -> tuple[list[Document], ManifestError | None]:
    """Parse ``source`` into documents; ``kind: List`` items become documents of their own.

    Documents before an error are kept, so one bad document late in a long stream does not
    hide findings in the good ones; the error is returned alongside.
    """
    decoded = decode(source.text)
    docs: list[Document] = []
    for raw in decoded.documents:
        span = (raw.start, raw.end, raw.column)
        first = raw.line - 1
        obj = raw.value
        if isinstance(obj, dict) and _is_list(obj) and obj["items"]:
            lines = raw.items
            if lines is None or len(lines) != len(obj["items"]):  # JSON, or merged items
                index = source.lines(span)
                lines = [
                    first + (locate(index, ("items", i)) or 0) + 1 for i in range(len(obj["items"]))
                ]
            for i, item in enumerate(obj["items"]):
                docs.append(Document(source, raw.index, lines[i], item, i, span, first, obj))
        else:
            docs.append(Document(source, raw.index, raw.line, obj, None, span, first))
    problem = None
    if decoded.error is not None:
        problem = ManifestError(source.name, *decoded.error)
    return docs, problem


def walk(directory: Path, suffixes: tuple[str, ...] = SUFFIXES) -> Iterator[Path]:
    """The files under ``directory`` whose names end in ``suffixes``, in kubectl's order.

    Why kubectl's walk (cli-runtime ``ExpandPathsToFileVisitors``, Go's ``filepath.Walk``):
    ``kubectl apply -R -f DIR`` applies every file it finds there, hidden directories and
    hidden files included, so a check that skipped ``.overlay/deploy.yaml`` would pass what
    the cluster then receives. Like kubectl, entries are taken in byte order of their
    names, each directory where its name falls among the files; the suffix is matched as
    written (``a.YAML`` is not read); a symbolic link to a directory is not followed. An
    unreadable directory raises ``OSError``, as it stops kubectl.
    """
    pending: list[Iterator[os.DirEntry[str]]] = [_entries(directory)]
    while pending:
        entry = next(pending[-1], None)
        if entry is None:
            pending.pop()
        elif entry.is_dir(follow_symlinks=False):
            pending.append(_entries(Path(entry.path)))
        elif entry.name.endswith(suffixes):
            yield Path(entry.path)


def _entries(directory: Path) -> Iterator[os.DirEntry[str]]:
    with os.scandir(directory) as found:
        entries = sorted(found, key=lambda entry: entry.name.encode("utf-8", "surrogateescape"))
    return iter(entries)


#: The refusal of ``""`` as a path: it is what an unset variable makes of ``check "$DIR"``,
#: and read as a path it would name the current directory.
EMPTY_PATH = "an empty path names nothing (an unset variable?): give a file or a directory"


#: What stdin is given as: its bytes (tests, callers that read it), a stream read on first
#: use, or nothing (``-`` then reads as empty).
Stdin = bytes | BinaryIO | None


def read(
    paths: Iterable[str], stdin: Stdin = None, stdin_name: str = STDIN_NAME
) -> tuple[list[Source], list[ManifestError]]:
    """Read every input: files as named, directories recursively (``*.yaml|yml|json``), stdin.

    Directories are walked as kubectl walks them (:func:`walk`), so what is checked is what
    ``kubectl apply -R -f`` applies. Only regular files are read, and none (nor stdin) past
    :data:`~.limits.MAX_FILE_BYTES`: a FIFO, a device, a socket or a link to one is refused
    by name, so a link to ``/dev/zero`` in a pull request is a problem in the report rather
    than a reader that never ends. Unreadable inputs become :class:`ManifestError` values,
    not exceptions, and the other inputs are still read.
    """
    return _read(paths, _once(stdin), stdin_name)


def _once(stdin: Stdin) -> Callable[[], bytes]:
    """Stdin's bytes, read (at most the cap and one byte) on the first call and kept.

    Why kept: ``-`` may be given more than once, and each must read what the first read.
    Raises :class:`~.files.Unreadable` on every call when stdin holds more than the cap.
    """
    kept: list[bytes | Unreadable] = []

    def get() -> bytes:
        if not kept:
            try:
                kept.append(_stdin_bytes(stdin))
            except Unreadable as exc:
                kept.append(exc)
        if isinstance(kept[0], Unreadable):
            raise kept[0]
        return kept[0]

    return get


def _stdin_bytes(stdin: Stdin) -> bytes:
    if stdin is None:
        return b""
    if isinstance(stdin, bytes):
        if len(stdin) > MAX_FILE_BYTES:
            raise Unreadable(
                f"over the limit of {MAX_FILE_BYTES:,} bytes for {A_MANIFEST}: "
                "stdin holds more than that"
            )
        return stdin
    return read_stream(stdin, MAX_FILE_BYTES, A_MANIFEST)


def _read(
    paths: Iterable[str], stdin: Callable[[], bytes], stdin_name: str
) -> tuple[list[Source], list[ManifestError]]:
    sources: list[Source] = []
    problems: list[ManifestError] = []

    def add(name: str, data: bytes) -> None:
        try:
            sources.append(Source(name, text_of(data)))
        except Refused as exc:
            problems.append(ManifestError(name, exc.line, exc.reason))

    for path in paths:
        if path == STDIN:
            try:
                add(stdin_name, stdin())
            except Unreadable as exc:
                problems.append(ManifestError(stdin_name, 0, exc.reason))
            continue
        if not path:
            problems.append(ManifestError('""', 0, EMPTY_PATH))
            continue
        target = Path(path)
        try:
            files = list(walk(target)) if target.is_dir() else [target]
        except OSError as exc:
            problems.append(ManifestError(path, 0, f"cannot read: {exc.strerror}"))
            continue
        for file in files:
            try:
                data = read_file(file, MAX_FILE_BYTES, A_MANIFEST)
            except Unreadable as exc:
                problems.append(ManifestError(str(file), 0, exc.reason))
                continue
            add(str(file), data)
    return sources, problems


def load(
    paths: Iterable[str],
    stdin: Stdin = None,
    stdin_name: str = STDIN_NAME,
    *,
    objects: bool = True,
    skip_other_files: bool = False,
) -> Manifests:
    """Every document of every PATH (files, directories, ``-`` for ``stdin``), in order.

    The one entry point for commands. Why it refuses a PATH that holds no manifests: an
    empty directory, a wrong glob or an empty pipe would otherwise read as "0 objects, all
    clean", and kubectl itself refuses to apply nothing ("no objects passed to apply").
    With ``objects`` (manifests: what kubectl would apply) a document that is not a mapping
    is refused (:func:`not_an_object`); a caller reading files of another kind (JSON
    schemas) passes ``False`` and judges every document itself. With ``skip_other_files``
    a file that parses but holds no mapping at all (:func:`other_file`) is not a manifest
    and refuses nothing: its documents are kept, for the dry run to count as skipped. Why:
    a pre-commit hook is handed every staged YAML and JSON file, and a JSON array of test
    data or an emptied YAML file must not fail a commit; a syntax error still does.
    """
    result = Manifests()
    given = _once(stdin)
    for path in paths:
        sources, problems = _read([path], given, stdin_name)
        result.files += len(sources)
        found = 0
        for source in sources:
            docs, problem = split(source)
            if skip_other_files and other_file(docs, problem):
                result.documents.extend(docs)
                found += 1
                continue
            for doc in docs:
                refused = not_an_object(doc) if objects else None
                if refused is None:
                    result.documents.append(doc)
                    found += doc.obj is not None
                else:
                    problems.append(refused)
            if problem is not None:
                problems.append(problem)
        if not found and not problems:
            problems.append(_nothing(path, stdin_name, len(sources)))
        result.problems.extend(problems)
    return result


def other_file(docs: Iterable[Document], problem: ManifestError | None) -> bool:
    """Whether a file that parsed (``problem`` is ``None``) holds no mapping at all.

    Why no mapping, rather than no ``apiVersion`` and ``kind``: a mapping without them is
    already skipped by the dry run, while a file that mixes objects with a stray scalar is
    a manifest kubectl would refuse, and stays refused.
    """
    return problem is None and not any(isinstance(doc.obj, dict) for doc in docs)


#: What kubectl's decoder calls each JSON type that is not an object, and ours.
_JSON_TYPES: tuple[tuple[type, str, str], ...] = (
    (bool, "bool", "a boolean"),
    (str, "string", "a string"),
    (int, "number", "a number"),
    (float, "number", "a number"),
    (list, "array", "a list"),
)


def not_an_object(doc: Document) -> ManifestError | None:
    """The refusal of a document (or ``kind: List`` item) that is a value but not a mapping.

    Why refused rather than skipped: kubectl refuses it (``error validating data: invalid
    object to validate``, or with ``--validate=false`` ``unable to decode``: it cannot
    unmarshal a string, number or array into an object), so a stream holding one is never
    applied; a check that passed it, or a ``mutate`` that printed it back, would let CI pass
    what ``kubectl apply`` then fails on. ``None`` for a mapping or an empty document.
    """
    obj = doc.obj
    if obj is None or isinstance(obj, dict):
        return None
    go, ours = next(((g, o) for t, g, o in _JSON_TYPES if isinstance(obj, t)), ("value", "a value"))
    where = "the document" if doc.item is None else f"item {doc.item} of the List"
    return ManifestError(
        doc.path,
        doc.line,
        f"not a Kubernetes object: {where} is {ours}, not a mapping with apiVersion and kind "
        f"(kubectl refuses it too: cannot unmarshal {go} into an object)",
    )


def _nothing(path: str, stdin_name: str, files: int) -> ManifestError:
    if path == STDIN:
        return ManifestError(stdin_name, 0, "no manifests found: the input is empty")
    if not Path(path).is_dir():
        return ManifestError(path, 0, "no manifests found: the file is empty or only comments")
    if not files:
        return ManifestError(path, 0, "no manifests found: no *.yaml, *.yml or *.json file")
    return ManifestError(path, 0, f"no manifests found: {files} files, all empty")
