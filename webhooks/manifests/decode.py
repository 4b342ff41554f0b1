"""Manifest text to plain values, read the way kubectl reads it.

What a cluster receives is decided by kubectl's reader, not by the YAML specification:
k8s.io/apimachinery ``util/yaml`` splits a stream on lines that start with ``---`` (followed
only by spaces or a ``#`` comment, else "invalid Yaml document separator"), ending each line
it reads with a line break, the last one too, decodes a stream
that starts with ``{`` as JSON objects one after another, and hands each YAML document to
sigs.k8s.io/yaml, which runs go-yaml v2 and then ``encoding/json``. This module is that
splitting, and the one entry point; each step is a module of its own:

- :mod:`.encoding`: bytes to text (byte-order marks, bytes that are not UTF-8);
- :mod:`.jsonstream`: JSON values back to back, with Go's number rules;
- :mod:`.yamlstream`: YAML documents from the parser's events, without recursion;
- :mod:`.scalars`: plain and tagged scalars as go-yaml v2 resolves them;
- :mod:`.limits`: kubectl's depth and aliasing limits, enforced by the reader itself;
- :mod:`.parser`: libyaml's event parser, with the pure-Python one behind it;
- :mod:`.syntax`: YAML syntax errors in the reader's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from webhooks.manifests.encoding import text_of
from webhooks.manifests.errors import Refused, show
from webhooks.manifests.jsonstream import read_json
from webhooks.manifests.raw import Raw, blank, blank_all
from webhooks.manifests.syntax import problem
from webhooks.manifests.yamlstream import read_yaml

__all__ = ["GO_SPACE", "Decoded", "Raw", "Refused", "decode", "text_of"]

# Go's unicode.IsSpace, which kubectl's separator and JSON sniffing use.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)


@dataclass(slots=True)
class Decoded:
    """Every document read from one text, and the first error that stopped the reading.

    Documents before the error are kept, as kubectl applies them before it fails.
    """

    documents: list[Raw]
    error: tuple[int, str] | None = None


_MARKER = re.compile(r"\n(?:---|\.\.\.)")


def _separators(text: str, begin: int) -> tuple[str, tuple[int, str] | None]:
    """Make the YAML parser split ``text`` where kubectl's line reader splits it.

    kubectl ends a document at every line starting with ``---`` that is followed only by
    spaces or a comment (``---# note`` included, which libyaml would not split on) and
    refuses any other such line. Inside one of its chunks go-yaml reads only the first
    document, so whatever follows a ``...`` end marker up to the next separator is dropped,
    as kubectl drops it. Returns the text to parse (same offsets and lines) and the
    refusal at a bad separator, if any (the text is cut there).
    """
    blanks: list[tuple[int, int]] = []
    markers = [m.start() + 1 for m in _MARKER.finditer(text, max(begin - 1, 0))]
    if text.startswith(("---", "..."), begin) and begin not in markers[:1]:
        markers.insert(0, begin)
    ended = -1  # where a "..." marker line ended, while looking for the next separator
    for start in markers:
        stop = text.find("\n", start)
        stop = len(text) if stop == -1 else stop
        rest = text[start + 3 : stop]
        if text.startswith("...", start):
            if ended < 0 and (not rest or rest[0] in " \t\r"):
                ended = stop
            continue
        trimmed = rest.strip(GO_SPACE)
        if trimmed and trimmed[0] != "#":
            if ended >= 0:
                blanks.append((ended, start))
            cut = blank_all(text[:start], blanks)
            line = text.count("\n", 0, start) + 1
            return cut, (
                line,
                f"invalid document separator {show(text[start:stop])}: only "
                "spaces or a # comment may follow ---",
            )
        if trimmed and rest[0] not in " \t":
            blanks.append((start + 3, stop))  # "---# note": libyaml needs a space first
        if ended >= 0:
            blanks.append((ended, start))
            ended = -1
    if ended >= 0:
        blanks.append((ended, len(text)))
    return blank_all(text, blanks), None


def decode(text: str) -> Decoded:
    """Every document of ``text`` as kubectl would send it, and what stopped the reading.

    Why documents and an error together: kubectl applies the documents before a broken one,
    and a report that shows their findings too hides nothing behind the first typo.
    """
    documents: list[Raw] = []
    add = documents.append
    index = begin = 0
    first = len(text) - len(text.lstrip(GO_SPACE))
    if text.startswith("{", first):
        try:
            begin, index = read_json(text, first, index, add)
        except Refused as exc:
            return Decoded(documents, (exc.line, exc.reason))
        if begin >= len(text):
            return Decoded(documents)
        text = blank(text, 0, begin)  # the rest is YAML; offsets and lines stay
    source, refused = _separators(text, begin)
    if source and not source.endswith("\n"):
        # kubectl's line reader ends every line it hands on with a line break, the last one
        # too: a literal or folded scalar ending the file keeps a final "\n" (`k: |` then
        # `  x` and no line break is "x\n" to the cluster). Appended, nothing shifts.
        source += "\n"
    try:
        read_yaml(source, index, add)
    except Refused as exc:
        return Decoded(documents, (exc.line, exc.reason))
    except yaml.YAMLError as exc:
        return Decoded(documents, problem(exc, source))
    return Decoded(documents, refused)
