"""The YAML event parsers the reader runs on, and the depth they must reach.

Why a module of its own: the depth rule is kubectl's (10,000 levels read, the 10,001st
refused) and the reader enforces it itself, counting levels on the events
(:mod:`.limits`). libyaml's event parser is the fast way to those events, but libyaml
builds from 0.2.6 on (PyYAML 6.0.4's wheels bundle one) stop at a nesting limit of their
own, 1,000 by default, with a message of their own. So:

- where the C binding offers a setter, its limit is raised once, on import, well above
  ours (raised, never lowered; it is the process's only libyaml);
- where it does not, or the C parser stops on depth anyway, the text is read again by
  PyYAML's pure-Python parser, which has no such limit (:func:`fell_short` says when);
- where there is no C binding at all, the pure-Python parser reads everything;
- and past :data:`FAST_FLOW_DEPTH` levels of flow nesting, where libyaml's cost per token
  grows with the depth, the pure-Python parser reads the text again too.

Both parsers are state machines with explicit stacks, so neither recurses on deep input.
Their error messages differ, which is why :mod:`.syntax` words every error itself.

Where libyaml reads a text otherwise than go-yaml v2 (kubectl's parser) does, the text is
read again by the pure-Python parser, whose rules for those places are go-yaml's (and
whose tabs, unlike PyYAML's own, are blanks where go-yaml's and libyaml's are):

- a ``:`` inside a plain scalar in a flow collection ends the scalar only when a space, a
  line break or the end follows it (``[2001:db8::1, 001:db8::]`` holds two strings), where
  libyaml refuses a ``:`` followed by ``,``, ``?``, ``[``, ``]``, ``{`` or ``}``
  ("found unexpected ':'"), and PyYAML's own scanner ends the scalar there;
- a ``?`` ends a plain scalar in a flow collection (so ``[a?b]`` is refused, as kubectl
  refuses it), where libyaml reads on;
- a tag in a flow collection takes ``,``, ``[`` and ``]`` into its name, as go-yaml's does,
  where libyaml stops the tag there (or refuses it, when nothing else is left of it).

libyaml's refusals are recognised by :func:`fell_short`, and the decoders recognise the
rest on its events (:class:`NotAsKubectl`), so only a text that has such a place pays for
a second reading.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import yaml
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner, ScannerError
from yaml.tokens import ScalarToken

from webhooks.manifests.limits import MAX_DEPTH


class PureEvents(Reader, Scanner, Parser):
    """PyYAML's pure-Python event parser, linear in the depth of flow collections.

    Why not ``yaml.BaseLoader`` as it is: its scanner keeps one possible simple key per
    open flow level and walks all of them on every token, so ``[[[...]]]`` costs time
    quadratic in its depth (10,000 levels: minutes). The keys are kept in the order of
    their levels, which is also the order of their positions (a level's key is dropped
    when the level closes, and a new key is always the deepest), so the nearest key is the
    first, and the stale ones (on an earlier line, or more than 1,024 characters back) are
    a prefix: both questions are answered without walking the rest. The answers are
    PyYAML's own, and so are the events, except where PyYAML's scanner and go-yaml v2's
    (kubectl's, and libyaml's there) differ: plain scalars in flow collections end where
    go-yaml ends them (:meth:`scan_plain`), and tabs are blanks where go-yaml takes them
    as blanks (:meth:`scan_to_next_token`, :meth:`scan_plain_spaces`).
    """

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)

    def next_possible_simple_key(self) -> int | None:
        """The token number of the nearest possible simple key: the first one kept."""
        for key in self.possible_simple_keys.values():
            number: int = key.token_number
            return number
        return None

    def stale_possible_simple_keys(self) -> None:
        """Drop the keys that can no longer be simple keys, walking only those."""
        keys = self.possible_simple_keys
        stale: list[int] = []
        for level, key in keys.items():
            if key.line == self.line and self.index - key.index <= _SIMPLE_KEY_SPAN:
                break
            if key.required:
                raise ScannerError(
                    "while scanning a simple key",
                    key.mark,
                    "could not find expected ':'",
                    self.get_mark(),
                )
            stale.append(level)
        for level in stale:
            del keys[level]

    def scan_plain(self) -> ScalarToken:
        """A plain scalar, ended where go-yaml v2 ends it (kubectl reads manifests with it).

        Why not PyYAML's: in a flow collection it ends a scalar at a ``:`` followed by
        ``,``, ``[``, ``]``, ``{`` or ``}``, which go-yaml keeps in the scalar: kubectl
        reads ``[001:db8::]`` as the string ``001:db8::``. Everything else is the same
        rule: a scalar is runs of non-blank characters (:meth:`_plain_run`) joined by the
        spaces and line breaks between them, and ends at a ``#`` after a space, at a line
        indented less than its block, or at a document marker.
        """
        start_mark = self.get_mark()
        end_mark = start_mark
        indent = self.indent + 1
        chunks: list[str] = []
        spaces: list[str] | None = []
        while self.peek() != "#":
            length = self._plain_run()
            if not length:
                break
            self.allow_simple_key = False
            chunks.extend(spaces or ())
            chunks.append(self.prefix(length))
            self.forward(length)
            end_mark = self.get_mark()
            spaces = self.scan_plain_spaces(indent, start_mark)
            if not spaces or self.peek() == "#" or (not self.flow_level and self.column < indent):
                break
        return ScalarToken("".join(chunks), True, start_mark, end_mark)

    def scan_to_next_token(self) -> None:
        """Skip blanks, comments and line breaks up to the next token, tabs as go-yaml does.

        Why not PyYAML's: it skips spaces only, so a tab between tokens (after ``{a:``) is
        refused, where go-yaml skips a tab inside a flow collection, and in block context
        wherever a simple key cannot start (after a key's ``:``, so ``k:`` then a tab and
        ``v`` is read), and keeps refusing one that would indent a line.
        """
        if self.index == 0 and self.peek() == "\ufeff":
            self.forward()
        while True:
            tabs = bool(self.flow_level) or not self.allow_simple_key
            length = 0
            while (ch := self.peek(length)) == " " or (tabs and ch == "\t"):
                length += 1
            if length:
                self.forward(length)
            if self.peek() == "#":
                length = 0
                while self.peek(length) not in _BREAKZ:
                    length += 1
                self.forward(length)
            if not self._line_break():
                return
            if not self.flow_level:
                self.allow_simple_key = True

    def scan_plain_spaces(self, indent: int, start_mark: Any) -> list[str] | None:
        """The blanks and line breaks after a run of a plain scalar, as the text joining it
        to the next run; ``None`` at a document marker, which ends the scalar.

        Why not PyYAML's: it takes spaces only, so a tab inside a plain scalar (between
        ``a`` and ``b``) ended it, where go-yaml keeps tabs as it keeps spaces. A tab that
        indents a continuation line less than the scalar's block is refused, as go-yaml
        refuses it. Line breaks fold as YAML folds them: one becomes a space, more keep
        all but the first.
        """
        length = 0
        while self.peek(length) in " \t":
            length += 1
        blanks = self.prefix(length)
        self.forward(length)
        if self.peek() not in _BREAKS:
            return [blanks] if blanks else []
        first = self._line_break()
        self.allow_simple_key = True
        more: list[str] = []
        while True:
            if self._at_document_marker():
                return None
            while (ch := self.peek()) in " \t":
                if ch == "\t" and self.column < indent:
                    raise ScannerError(
                        "while scanning a plain scalar",
                        start_mark,
                        "found a tab character that violates indentation",
                        self.get_mark(),
                    )
                self.forward()
            if self.peek() not in _BREAKS:
                break
            more.append(self._line_break())
        folded = [first] if first != "\n" else [] if more else [" "]
        return folded + more

    def _line_break(self) -> str:
        """PyYAML's reading of one line break ("" where there is none), typed."""
        found: str = self.scan_line_break()  # type: ignore[no-untyped-call]
        return found

    def _at_document_marker(self) -> bool:
        """Whether a ``---`` or ``...`` line starts here (a plain scalar ends before it)."""
        return self.column == 0 and self.prefix(3) in ("---", "...") and self.peek(3) in _BLANKZ

    def _plain_run(self) -> int:
        """How many characters from the pointer on belong to a plain scalar, up to a blank.

        go-yaml's rule: a ``:`` ends the run when a blank, a line break or the end follows
        it; in a flow collection, so do ``,``, ``?``, ``[``, ``]``, ``{`` and ``}``. The run
        is found by searching for its end, which keeps no state per character (a pattern
        that matched the run itself would, hundreds of bytes each). A ``:`` that is the last
        character of a streamed text's buffer is no end until the next character is known,
        so the search goes on from it after more is read (each time twice as much, as the
        reader copies its buffer when it reads): the run costs its own length however the
        text arrives.
        """
        stop = _FLOW_STOP if self.flow_level else _BLOCK_STOP
        done = 0  # characters past the pointer already known to be in the run
        while True:
            buffer: str = self.buffer
            pointer: int = self.pointer
            found = stop.search(buffer, pointer + done)
            # The buffer of a str, or of a stream read to its end, ends with "\0", an end.
            if found is not None:
                return found.start() - pointer
            done = max(len(buffer) - pointer - 1, 0)
            self.update(2 * done + 2)  # twice as much each time: the reader's copies stay linear


#: What ends a plain scalar: go-yaml's blanks (spaces, tabs, line breaks and the end, which
#: PyYAML's buffer marks with "\0"), and a ":" followed by one of them.
_BLANKZ = "\0 \t\r\n\x85\u2028\u2029"
_BREAKS = "\r\n\x85\u2028\u2029"
_BREAKZ = "\0" + _BREAKS
_BLOCK_STOP = re.compile(f"[{_BLANKZ}]|:(?=[{_BLANKZ}])")
#: In a flow collection the flow indicators end a plain scalar too, but a ":" before one of
#: them stays in it (go-yaml checks the ":" first, against blanks only).
_FLOW_STOP = re.compile(f"[{_BLANKZ},?\\[\\]{{}}]|:(?=[{_BLANKZ}])")

#: The YAML specification limits a simple key to one line and 1,024 characters.
_SIMPLE_KEY_SPAN = 1024

#: The pure-Python event parser: slower than libyaml's, and without a nesting limit.
PURE: Any = PureEvents

#: libyaml's event parser, or ``None`` where PyYAML was built without libyaml. The decoders
#: read it on every call, so a test can take it away to force the pure-Python path.
FAST: Any = getattr(yaml, "CBaseLoader", None)

#: libyaml's limit is raised to this. Its scanner reads ahead of the events the decoders
#: count (a possible simple key may span 1,024 characters, each of them a ``[``), so the
#: limit must clear ours by more than that for our refusal to come first.
LIBYAML_NEST_LIMIT = 2 * MAX_DEPTH


#: The flow nesting (``[[[...]]]``, ``{"a": {"a": ...}}``) past which a text read by libyaml is
#: read again by the pure-Python parser. Why: libyaml's scanner walks every open flow level
#: at every token it scans, so its time grows with the square of flow depth (10,000 levels
#: cost it as much as the pure-Python parser, and a wide list 10,000 levels down costs it
#: three times more, ~25 µs a byte). Up to 1,000 levels (libyaml's own default limit) that
#: walk costs less than the pure-Python parser does per token; past it, the text goes to
#: the pure-Python parser, whose cost per token does not depend on depth. Block nesting
#: costs libyaml nothing per level and is not counted.
FAST_FLOW_DEPTH = 1_000


class NotAsKubectl(yaml.YAMLError):
    """Raised by a decoder when libyaml has read something go-yaml v2 reads otherwise.

    Why an error: like :class:`FlowTooDeep`, it leaves libyaml's pass, so the decoders' one
    fallback (:func:`fell_short`) reads the text again with the pure-Python parser, whose
    rules there are go-yaml's (see the module's docstring for the places).
    """


class FlowTooDeep(yaml.YAMLError):
    """Raised by a decoder when libyaml reaches :data:`FAST_FLOW_DEPTH` flow levels.

    Why an error: it leaves libyaml's pass the way its own nesting limit does, so the
    decoders' one fallback (:func:`fell_short`) reads the text again, with the pure parser.
    """


def flow_limit(loader: Any) -> int:
    """The flow depth a decoder may reach with ``loader`` before raising :class:`FlowTooDeep`.

    Why per loader: only libyaml's cost grows with flow depth; the pure-Python parser has no
    such limit (the reader's own :data:`~.limits.MAX_DEPTH` still applies to both).
    """
    return FAST_FLOW_DEPTH if loader is FAST and FAST is not None else MAX_DEPTH + 1


def raise_libyaml_limit() -> int | None:
    """Raise libyaml's nesting limit to :data:`LIBYAML_NEST_LIMIT`; the limit now in force.

    Why only raise: a limit set higher by someone else still reaches ours. ``None`` means
    the binding has no such setting: either its libyaml has no limit, or it cannot be
    changed, and then :func:`fell_short` sends deep texts to the pure-Python parser.
    """
    try:
        binding = importlib.import_module("yaml._yaml")
    except ImportError:
        return None
    get = getattr(binding, "_get_max_nest_level", None)
    set_ = getattr(binding, "_set_max_nest_level", None)
    if get is None or set_ is None:
        return None
    if get() < LIBYAML_NEST_LIMIT:
        set_(LIBYAML_NEST_LIMIT)
    limit: int = get()
    return limit


def fell_short(exc: yaml.YAMLError) -> bool:
    """Whether libyaml's pass cannot stand, so the text must be read again: it stopped at a
    nesting limit (its own, or :data:`FAST_FLOW_DEPTH`), refused a ``:`` that go-yaml keeps
    in a plain scalar, or met something else it reads otherwise (:class:`NotAsKubectl`).

    Why recognise libyaml's refusals by their words: it raises them as ordinary scanner
    errors, with no code of their own. Only this decision reads the parser's words; what
    the user sees is worded by the reader (:mod:`.limits`, :mod:`.syntax`), whichever
    parser ran.
    """
    if isinstance(exc, FlowTooDeep | NotAsKubectl):
        return True
    problem = getattr(exc, "problem", None)
    return isinstance(problem, str) and (
        "maximum nesting depth" in problem or problem in _READ_OTHERWISE
    )


#: libyaml's refusals of text go-yaml reads: a ``:`` before a flow indicator in a plain
#: scalar, and a tag whose name is only flow indicators (``[!!, x]``, the tag ``!!,`` on
#: ``x`` for go-yaml).
_READ_OTHERWISE = frozenset(("found unexpected ':'", "did not find expected tag URI"))


raise_libyaml_limit()
