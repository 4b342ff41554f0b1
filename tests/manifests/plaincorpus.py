"""A generated corpus of plain (unquoted) scalars in every YAML context a manifest uses.

Why generated: which characters end a plain scalar, and which start or break one, depends on
the character, where it sits in the scalar, what follows it, and whether the scalar is in a
flow collection (``[...]``, ``{...}``) or in block context. Hand-picked cases miss the
combinations; this module writes every one of them from a few tables, in a fixed order, so
the corpus is the same on every machine and kubectl's answers for it can be stored
(``make yaml-reference``, ``tests/controlplane/yamlref.py``) and compared with the reader's
(``tests/manifests/test_plain_scalars.py``).

Each case is a whole document: a map with one key ``k`` whose value holds the scalar, so
kubectl reads it as an object.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

#: The characters whose meaning in a plain scalar depends on context: the value and key
#: indicators, the comment sign, the sequence entry sign, the flow indicators and the
#: space. Every pair of them is tried at the start, in the middle and at the end.
INDICATORS = (":", "#", "?", "-", ",", "[", "]", "{", "}", " ")

#: The other characters YAML gives a meaning to, and the tab; each alone is tried in every
#: position.
OTHERS = ("!", "&", "*", "|", ">", "'", '"', "%", "@", "`", ".", "=", "/", "<", "\t")

#: Values people write unquoted that are made of the characters above.
WRITTEN = (
    "2001:db8::1",
    "001:db8::",
    "::1",
    "::",
    "fe80::1%eth0",
    "[::1]:8080",
    "10.0.0.1:53",
    "http://example.com:8080/a?b=c#d",
    "image:tag@sha256:abc",
    "a:b:c",
    "1:30",
    "-1",
    "--flag=value",
    "a - b",
    "a #b",
    "a# b",
    "C#",
    "what?",
    "x,y",
    "key=value,other=1",
)


def scalars() -> Iterator[str]:
    """Every scalar of the corpus, each once, in a fixed order."""
    seen: set[str] = set()
    singles = [
        form.format(c=char)
        for char in INDICATORS + OTHERS
        for form in ("{c}", "{c}a", "a{c}", "a{c}b", "{c}{c}")
    ]
    pairs = [
        form.format(c=first, d=second)
        for first, second in itertools.product(INDICATORS, repeat=2)
        for form in ("{c}{d}a", "a{c}{d}", "a{c}{d}b")
    ]
    for scalar in itertools.chain(singles, pairs, WRITTEN):
        if scalar not in seen:
            seen.add(scalar)
            yield scalar


#: Where a scalar ``{s}`` is written: (what the place is, the document around it). Block
#: mapping keys and values, block sequence items, flow sequences (first, last, alone, one
#: of several lines), flow mappings (key, value, a key without a value), a single-pair map
#: in a flow sequence, flow collections nested in each other, and a scalar continued on a
#: second line.
CONTEXTS: tuple[tuple[str, str], ...] = (
    ("a block mapping value", "k: {s}\n"),
    ("a block mapping value continued on the next line", "k: {s}\n  more\n"),
    ("a block mapping key", "k:\n  {s}: v\n"),
    ("a block sequence item", "k:\n- {s}\n"),
    ("a block mapping value inside a block sequence", "k:\n- a: {s}\n"),
    ("a flow sequence's only item", "k: [{s}]\n"),
    ("a flow sequence's first item", "k: [{s}, x]\n"),
    ("a flow sequence's last item", "k: [x, {s}]\n"),
    ("a flow sequence item on a line of its own", "k: [\n  {s},\n  x\n]\n"),
    ("a flow sequence item continued on the next line", "k: [{s}\n  more]\n"),
    ("a flow mapping value", "k: {{a: {s}}}\n"),
    ("a flow mapping value before another entry", "k: {{a: {s}, b: c}}\n"),
    ("a flow mapping key", "k: {{{s}: v}}\n"),
    ("a flow mapping key without a value", "k: {{{s}}}\n"),
    ("a flow mapping key without a value before another entry", "k: {{{s}, b: c}}\n"),
    ("a single-pair map's key in a flow sequence", "k: [{s}: v]\n"),
    ("a flow sequence in a flow sequence", "k: [[{s}]]\n"),
    ("a flow mapping value in a flow sequence", "k: [{{a: {s}}}]\n"),
    ("a flow sequence in a flow mapping", "k: {{a: [{s}]}}\n"),
    ("a block mapping value ending a file without a line break", "k: {s}"),
    ("a flow sequence ending a file without a line break", "k: [x, {s}]"),
)

#: Block and quoted scalars, written only where a file ends without a final line break:
#: what a literal or folded scalar keeps of its last line depends on its chomping indicator
#: and on the line break that is not there.
LAST = (
    *(
        f"{style}{chomp}\n  {body}"
        for style in "|>"
        for chomp in ("", "-", "+")
        for body in ("x", "x  ", "x\n  y", "x\n\n", "")
    ),
    "'x'",
    '"x"',
    "'x\n  y'",
    "x\n  y",
)
LAST_CONTEXT = "a block or quoted scalar ending a file without a line break"


def cases() -> Iterator[tuple[str, str]]:
    """Every case as ``(context, text)``: each scalar in each context, in a fixed order."""
    for context, template in CONTEXTS:
        for scalar in scalars():
            yield context, template.format(s=scalar)
    for scalar in LAST:
        yield LAST_CONTEXT, f"k: {scalar}"
