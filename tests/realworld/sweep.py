"""Run ``check``, ``mutate`` twice and ``check --fail-on-mutation`` over directories of manifests.

Why a sweep of its own: each command is tested on cases we wrote, but what breaks trust in
CI is a real repository where ``mutate``'s output does not read back, does not settle, or
differs when run again. This runs the same library calls the commands make over any
directory, once per configuration, and prints one row per directory and configuration:

* ``docs``: documents read (empty ones not counted), ``refused``: unusable input (what makes
  ``check`` exit 2), ``skipped``: objects that are not ours to admit;
* ``denials``: enforced violations (what makes ``check`` exit 1); ``warnings``: what
  ``check`` prints as warnings (violations under warn or audit, a plugin's own warnings);
* ``converge``: convergence failures (a second mutating pass changed the object again);
* ``readback``: ``mutate``'s output that the reader refuses, or that holds a different
  number of objects than went in;
* ``settle``: objects of ``mutate``'s output on which ``check --fail-on-mutation`` finds a
  mutation;
* ``twice``: objects that ``mutate`` run on its own output prints differently.

The last four must be zero everywhere. The configurations are the built-in default and
``bench/configs/full.yaml`` (every plugin on) with its cluster objects
``bench/configs/cluster.yaml``, as ``check --config ... --objects ...`` would run them.

Usage: ``python -m tests.realworld.sweep DIR... [--config default|full|FILE] [--details]``.
A directory is read as ``check DIR`` reads it; its unreadable documents are left out of
the round trip, as a user would fix or drop them before piping ``mutate`` anywhere.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from webhooks.cluster.files import StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.config import Config
from webhooks.dryrun.report import CONVERGENCE, Report
from webhooks.dryrun.run import dry_run, written_documents
from webhooks.manifests.reader import Document, Source, load, split
from webhooks.manifests.writer import dump_all

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "bench" / "configs"
#: The configurations a sweep runs by default: the built-in one, and every plugin on.
CONFIG_FILES: dict[str, Path | None] = {"default": None, "full": CONFIGS / "full.yaml"}
#: The cluster objects each named configuration is checked against (``--objects``).
CLUSTER_FILES: dict[str, Path | None] = {"default": None, "full": CONFIGS / "cluster.yaml"}
COLUMNS = (
    "docs",
    "refused",
    "skipped",
    "denials",
    "warnings",
    "converge",
    "readback",
    "settle",
    "twice",
)
#: The columns that must be zero on any input.
FAILURES = ("converge", "readback", "settle", "twice")


@dataclass
class Row:
    """One directory under one configuration: the counts, and where each failure was."""

    target: str
    config: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0))
    details: list[str] = field(default_factory=list)

    def failed(self) -> bool:
        """Whether any failure class is non-zero."""
        return any(self.counts[name] for name in FAILURES)


def _denials(report: Report) -> int:
    return sum(
        f.level == "error" and f.type == "violation" for c in report.checked for f in c.findings
    )


def _mutations(report: Report) -> Iterator[str]:
    for checked in report.checked:
        for finding in checked.findings:
            if finding.type == "mutation":
                where = f"{checked.document.path}:{checked.document.line}"
                yield f"{where}: {checked.subject}: {', '.join(finding.plugins)}"


def _read_back(text: str, name: str) -> tuple[list[Document], int, list[str]]:
    """The documents of ``mutate``'s output, how many top-level objects they make (a List
    counts once, as ``mutate`` wrote it), and every problem the reader has with them."""
    docs, problem = split(Source(name, text))
    top = sum(doc.obj is not None and doc.parent is None for doc in docs)
    top += len({id(doc.parent) for doc in docs if doc.parent is not None})
    return docs, top, [] if problem is None else [str(problem)]


def sweep(target: str, name: str, config: Config, cluster: StaticCluster | None) -> Row:
    """Every count of one directory (or file) under one configuration."""
    row = Row(target, name)
    manifests = load([target])
    documents = [doc for doc in manifests.documents if doc.obj is not None]
    row.counts["docs"] = len(documents)
    row.counts["refused"] = len(manifests.problems)
    row.details.extend(f"refused: {p}" for p in manifests.problems)
    first = dry_run(manifests.documents, config, cluster)
    row.counts["skipped"] = sum(first.skipped.values())
    row.counts["denials"] = _denials(first)
    row.counts["warnings"] = first.warnings()
    row.counts["converge"] = first.count(CONVERGENCE)
    row.details.extend(
        f"converge: {c.document.path}:{c.document.line}: {c.subject}"
        for c in first.checked
        if any(f.type == CONVERGENCE for f in c.findings)
    )
    written = written_documents(first, manifests.documents)
    once = dump_all(written)
    again_docs, objects, problems = _read_back(once, f"mutate({target})")
    if problems or objects != len(written):
        row.counts["readback"] = max(1, len(problems))
        row.details.extend(f"readback: {p}" for p in problems)
        row.details.append(f"readback: {len(written)} objects written, {objects} read")
        return row
    second = dry_run(again_docs, config, cluster)
    settle = list(_mutations(second))
    row.counts["settle"] = len(settle)
    row.details.extend(f"settle: {line}" for line in settle)
    twice = dump_all(written_documents(second, again_docs))
    if twice != once:
        differing = _differing(once, twice)
        row.counts["twice"] = len(differing)
        row.details.extend(f"twice: document {i} differs" for i in differing)
    return row


def _differing(once: str, twice: str) -> list[int]:
    first = once.split("\n---\n")
    second = twice.split("\n---\n")
    if len(first) != len(second):
        return [-1]
    return [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]


def configurations(names: Sequence[str]) -> list[tuple[str, Config, StaticCluster | None]]:
    """The configurations named (``default``, ``full``) or given as files."""
    out = []
    for name in names:
        path = CONFIG_FILES[name] if name in CONFIG_FILES else Path(name)
        objects = CLUSTER_FILES.get(name)
        cluster = read_objects([objects]) if objects is not None else None
        out.append((name, read_config(path), cluster))
    return out


def render(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table, as docs carry it."""
    head = ["directory", "config", *COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row.target, row.config, *(f"{row.counts[c]:,}" for c in COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; exit 1 when any failure class is non-zero."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="DIR")
    parser.add_argument("--config", action="append", metavar="default|full|FILE")
    parser.add_argument("--details", action="store_true", help="list every refusal and failure")
    args = parser.parse_args(argv)
    rows = []
    for name, config, cluster in configurations(args.config or list(CONFIG_FILES)):
        for path in args.paths:
            row = sweep(path, name, config, cluster)
            rows.append(row)
            if args.details:
                for line in row.details:
                    print(f"{path} [{name}] {line}", file=sys.stderr)
    sys.stdout.write(render(rows))
    return 1 if any(row.failed() for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
