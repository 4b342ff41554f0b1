"""The dry run as a library: documents, config and cluster objects in; a report out.

Why one function: ``check``, ``mutate``, ``explain``, the policy tests and the live-cluster
audit must admit objects identically, and none of them should need a command line (or end
the process) to do it. Reading files, printing and exit codes belong to the CLI.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import Config
from webhooks.dryrun.engine import Engine, SchemaCheck, context_cluster
from webhooks.dryrun.report import Checked, Report
from webhooks.k8s.claims import unresolved_subject
from webhooks.manifests.errors import ManifestError
from webhooks.manifests.reader import Document
from webhooks.manifests.tree import depth
from webhooks.plugins import REGISTRY


def engine_for(
    documents: Sequence[Document],
    config: Config,
    cluster: StaticCluster | None = None,
    *,
    namespace: str = "default",
    schema: SchemaCheck | None = None,
    now: Callable[[], dt.datetime] | None = None,
) -> Engine:
    """An :class:`Engine` for ``documents``: the config, and the cluster objects among them.

    Why the documents' own Namespaces and RuntimeClasses join ``cluster``, and their
    CustomResourceDefinitions the ``schema``: a chart that ships them must be checked
    against them, as the cluster would see it once applied.
    """
    context = context_cluster(documents, cluster if cluster is not None else StaticCluster())
    if schema is not None:
        schema.learn(doc.obj for doc in documents)
    return Engine(Admission(REGISTRY, config, context, now), namespace, schema)


def admit(
    engine: Engine, doc: Document, report: Report, user: Mapping[str, Any] | None = None
) -> Checked | None:
    """:meth:`Engine.admit` on one document; one nested too deep for Python is unusable input.

    Why: kubectl accepts objects 10,000 levels deep, and a library inside the chain may
    still recurse on one; the run must then say so in one ``file:line: reason`` (exit 2),
    never end in a traceback. ``user`` is the object's requester when known.
    """
    try:
        if user is None:  # manifests: no requester, the call ``check`` has always made
            return engine.admit(doc, report)
        return engine.admit(doc, report, user=user)
    except RecursionError:
        reason = f"nested too deeply to check ({depth(doc.obj)} levels)"
        report.problems.append(ManifestError(doc.path, doc.line, reason))
        return None


def dry_run(
    documents: Sequence[Document],
    config: Config,
    cluster: StaticCluster | None = None,
    *,
    namespace: str = "default",
    schema: SchemaCheck | None = None,
    problems: Iterable[ManifestError] = (),
    files: int = 0,
    now: Callable[[], dt.datetime] | None = None,
) -> Report:
    """Admit every document under ``config`` and report what admission would do, in order.

    ``problems`` and ``files`` come from reading the documents and are kept in the report,
    so it can say the run proves nothing about input it could not read.
    """
    engine = engine_for(documents, config, cluster, namespace=namespace, schema=schema, now=now)
    return admit_all(engine, documents, Report(problems=list(problems), files=files))


def admit_all(engine: Engine, documents: Iterable[Document], report: Report) -> Report:
    """:func:`admit` every document in order into ``report``, which is returned.

    Why in input order, one at a time: reports and ``mutate`` output then read in the same
    order as the manifests. The loop :func:`dry_run` runs, for callers with an engine of
    their own.
    """
    for doc in documents:
        checked = admit(engine, doc, report)
        if checked is not None:
            report.checked.append(checked)
    return once_per_run(report)


def once_per_run(report: Report) -> Report:
    """Each warning about an unresolved input object, once per run, on the first object
    that met it, saying how many objects did.

    Why: a DeviceClass or claim template missing from the inputs is one fact about the
    input, not one per pod; repeated on every pod that names it (a hundred in one
    repository of examples) it buried the warnings that were about the pods. One pass over
    the findings, so the run stays linear.
    """
    first: dict[tuple[str, str], tuple[Checked, int]] = {}
    count: dict[tuple[str, str], int] = {}
    for checked in report.checked:
        kept = []
        for finding in checked.findings:
            if finding.type != "warning" or unresolved_subject(finding.message) is None:
                kept.append(finding)
                continue
            key = (finding.rule, finding.message)
            count[key] = count.get(key, 0) + 1
            if key not in first:
                first[key] = (checked, len(kept))
                kept.append(finding)
        checked.findings[:] = kept
    for key, (checked, index) in first.items():
        if count[key] > 1:
            finding = checked.findings[index]
            message = f"{finding.message} ({count[key]} objects refer to it; reported here once)"
            checked.findings[index] = dataclasses.replace(finding, message=message)
    return report


def written_documents(report: Report, documents: Sequence[Document]) -> list[Any]:
    """The documents as ``mutate`` prints them, in input order, Lists put back together.

    Why from the report: each admitted object carries its patches, so the written form is
    derived without running the chain again.
    """
    by_document = {id(c.document): c for c in report.checked}
    out: list[Any] = []
    lists: dict[int, list[Any]] = {}
    for doc in documents:
        checked = by_document.get(id(doc))
        obj = Engine.written_object(checked) if checked is not None else doc.obj
        if doc.parent is None:
            if obj is not None:
                out.append(obj)
            continue
        items = lists.get(id(doc.parent))
        if items is None:
            items = lists[id(doc.parent)] = []
            out.append({**doc.parent, "items": items})
        items.append(obj)
    return out
