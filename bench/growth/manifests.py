"""Manifests: the reader over every shape an input can grow in, and ``check`` over documents.

Why these shapes: the reader is the front door of ``check``, ``mutate``, ``explain`` and
``test``, and CI runs it on whatever a pull request holds. A stream grows in documents,
a document in entries, a line in length, an object in depth (up to kubectl's 10,000
levels, so N is half the limit), and aliases multiply nodes; separators with comments and
JSON values back to back are the two places where the reader rewrites or rescans the
text, and a JSON object too deep for Python's ``json`` is read again by the YAML parser.
Each input is a new text (a counter in it), and each is parsed from scratch. Two sizes are
chosen past steps that are not the reader's: one scalar of 8 MB to 16 MB crosses the
allocator's threshold for its buffers (2.3x there, 2.0x from 16 MB on), and 20,000 to
40,000 small JSON objects cross a step of the garbage collector's schedule (2.4x there,
2.0x with the collector off, 2.1x from 80,000 on).
"""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

from bench.growth.measure import Surface, in_process
from webhooks.configfile import read_config
from webhooks.dryrun.run import dry_run
from webhooks.manifests.files import read_file
from webhooks.manifests.limits import A_MANIFEST, MAX_DEPTH, MAX_FILE_BYTES
from webhooks.manifests.reader import Document, Source, split
from webhooks.manifests.writer import dump_all

_fresh = itertools.count()

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web-{i}
  namespace: shop
  labels: {{app: web, tier: front}}
spec:
  containers:
  - name: app
    image: registry.example/web:1.2.{i}
    resources:
      requests: {{cpu: 100m, memory: 128Mi}}
  tolerations:
  - {{key: dedicated, operator: Equal, value: web, effect: NoSchedule}}
"""


def _source(text: str) -> Source:
    return Source(f"in-{next(_fresh)}.yaml", text)


def _split(source: Source) -> int:
    docs, problem = split(source)
    assert problem is None, problem
    return len(docs)


def _documents(n: int) -> Source:
    tag = next(_fresh)
    return _source("".join("---\n" + POD.format(i=f"{tag}-{i}") for i in range(n)))


def _entries(n: int) -> Source:
    tag = next(_fresh)
    data = "".join(f"  key-{i}: value-{tag}-{i}\n" for i in range(n))
    return _source(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata:\n{data}")


def _flow_line(n: int) -> Source:
    tag = next(_fresh)
    items = ", ".join(f"k{i}: v{tag}" for i in range(n))
    return _source(f"apiVersion: v1\nkind: ConfigMap\ndata: {{{items}}}\n")


def _addresses(n: int) -> Source:
    # The last address ends in ":]", which libyaml refuses: the pure-Python parser reads it all.
    tag = next(_fresh)
    items = "".join(f"2001:db8:{tag:x}::{i:x}, " for i in range(n))
    return _source(f"apiVersion: v1\nkind: ConfigMap\ndata: {{a: [{items}001:db8::]}}\n")


def _colon_scalar(n: int) -> Source:
    # One plain scalar of n colons in a flow list, ending in ":]": the pure-Python parser.
    return _source(f"apiVersion: v1\nkind: ConfigMap\ndata: {{a: [{next(_fresh)}{'x:' * n}]}}\n")


def _long_scalar(n: int) -> Source:
    return _source(f"apiVersion: v1\nkind: ConfigMap\ndata:\n  big: {next(_fresh)}{'x' * n}\n")


def _flow_depth(n: int) -> Source:
    return _source("x: " + "[" * (n - 1) + str(next(_fresh)) + "]" * (n - 1) + "\n")


def _block_depth(n: int) -> Source:
    return _source("- " * n + f"v{next(_fresh)}\n")  # a sequence in a sequence, on one line


def _aliases(n: int) -> Source:
    anchor = f"base: &b {{cpu: {next(_fresh)}m, memory: 1Mi, a: 1, b: 2, c: 3}}\n"
    return _source(anchor + "items:\n" + "- *b\n" * n)


def _comment_separators(n: int) -> Source:
    tag = next(_fresh)
    return _source(
        "".join(
            f"---# part {i}\nkind: ConfigMap\nmetadata: {{name: c{tag}-{i}}}\n" for i in range(n)
        )
    )


def _json_line(n: int) -> Source:
    tag = next(_fresh)
    return _source(
        "".join(f'{{"kind":"ConfigMap","metadata":{{"name":"c{tag}-{i}"}}}}' for i in range(n))
    )


#: Deeper than Python's ``json`` recurses (its limit is the interpreter's, about 1,000).
_DEEP_JSON = 1_500


def _deep_json(n: int) -> Source:
    tag = next(_fresh)
    one = '{"a":' * _DEEP_JSON + str(tag) + "}" * _DEEP_JSON + "\n"
    return _source(one * n)


def _file(n: int) -> Path:
    fd, name = tempfile.mkstemp(suffix=".yaml")
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"# " + b"x" * (n - 3) + b"\n")
    return Path(name)


def _read_file(path: Path) -> int:
    try:
        return len(read_file(path, MAX_FILE_BYTES, A_MANIFEST))
    finally:
        path.unlink()


_CONFIG = read_config(None)


def _check_input(n: int) -> list[Document]:
    docs, _ = split(_documents(n))
    return docs


def _check(docs: list[Document]) -> int:
    report = dry_run(docs, _CONFIG, None, namespace="default")
    return len(report.checked)


def _mutate_output(n: int) -> list[object]:
    return [doc.obj for doc in _check_input(n)]


SURFACES = [
    Surface(
        "manifests: Pod documents in one stream", "documents", 2_000, in_process(_documents, _split)
    ),
    Surface("manifests: entries of one document", "entries", 40_000, in_process(_entries, _split)),
    Surface("manifests: a flow map on one line", "entries", 40_000, in_process(_flow_line, _split)),
    Surface("manifests: one long scalar", "bytes", 16_000_000, in_process(_long_scalar, _split)),
    Surface(
        "manifests: IPv6 addresses in a flow list (pure-Python parser)",
        "entries",
        20_000,
        in_process(_addresses, _split),
    ),
    Surface(
        "manifests: one flow scalar of colons (pure-Python parser)",
        "colons",
        1_000_000,
        in_process(_colon_scalar, _split),
    ),
    Surface(
        "manifests: flow nesting depth ([[[...]]])",
        "levels",
        MAX_DEPTH // 2,
        in_process(_flow_depth, _split),
    ),
    Surface(
        "manifests: block nesting depth (- - - ...)",
        "levels",
        MAX_DEPTH // 2,
        in_process(_block_depth, _split),
    ),
    Surface("manifests: aliases to one anchor", "aliases", 20_000, in_process(_aliases, _split)),
    Surface(
        "manifests: ---# comment separators",
        "documents",
        4_000,
        in_process(_comment_separators, _split),
    ),
    Surface(
        "manifests: JSON objects back to back on one line",
        "objects",
        80_000,
        in_process(_json_line, _split),
    ),
    Surface(
        "manifests: JSON objects too deep for json, in a stream",
        "objects",
        40,
        in_process(_deep_json, _split),
    ),
    Surface(
        "manifests: one regular file read (files.read_file)",
        "bytes",
        16 << 20,
        in_process(_file, _read_file),
    ),
    Surface(
        "check: Pod documents admitted (dry run)",
        "documents",
        400,
        in_process(_check_input, _check),
    ),
    Surface(
        "mutate: documents written (dump_all)",
        "documents",
        2_000,
        in_process(_mutate_output, dump_all),
    ),
]
