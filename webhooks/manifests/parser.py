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

Both parsers are state machines with explicit stacks, so neither recurses on deep input,
and both produce the same events for the same text. Their error messages differ, which
is why :mod:`.syntax` words every error itself.
"""

from __future__ import annotations

import importlib
from typing import Any

import yaml
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.scanner import Scanner, ScannerError

from webhooks.manifests.limits import MAX_DEPTH


class PureEvents(Reader, Scanner, Parser):
    """PyYAML's pure-Python event parser, linear in the depth of flow collections.

    Why not ``yaml.BaseLoader`` as it is: its scanner keeps one possible simple key per
    open flow level and walks all of them on every token, so ``[[[...]]]`` costs time
    quadratic in its depth (10,000 levels: minutes). The keys are kept in the order of
    their levels, which is also the order of their positions (a level's key is dropped
    when the level closes, and a new key is always the deepest), so the nearest key is the
    first, and the stale ones (on an earlier line, or more than 1,024 characters back) are
    a prefix: both questions are answered without walking the rest. The answers, and the
    events, are PyYAML's own.
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
    """Whether libyaml stopped at a nesting limit (its own, or :data:`FAST_FLOW_DEPTH`), so
    the text must be read again.

    Why recognise it by its words: libyaml raises it as an ordinary scanner error, with no
    code of its own. Only this decision reads the parser's words; what the user sees is
    worded by the reader (:mod:`.limits`, :mod:`.syntax`), whichever parser ran.
    """
    if isinstance(exc, FlowTooDeep):
        return True
    problem = getattr(exc, "problem", None)
    return isinstance(problem, str) and "maximum nesting depth" in problem


raise_libyaml_limit()
