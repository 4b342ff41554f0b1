"""An audit as policy reports: one per namespace with results, one for cluster-scoped objects.

The format is OpenReports (``openreports.io/v1alpha1`` Report and ClusterReport), which
Policy Reporter and other dashboards read; ``wgpolicyk8s.io/v1alpha2`` PolicyReport and
ClusterPolicyReport are offered for dashboards that still read the older API. Their
differences: the older API has no report-level ``source`` (it goes on every result) and no
``configuration.limits`` (the cap goes unrecorded); its schema knows only the severities
high, medium and low, which are all this suite uses.

Why one report per namespace and not per resource: results are already one per workload
(its pods counted, not listed) and capped, so a namespace's report stays far below etcd's
object size limit, while a report per resource would mean thousands of objects to write
and delete on every run. Each result names its subject in ``resources`` (with its uid);
``policy`` is the plugin and ``rule`` what was found (``violation`` or ``drift``).
The ``summary`` counts every result, also those cut off by ``maxResults``, so a dashboard
never shows a capped report as healthier than the cluster is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from webhooks.audit.results import Audit, Result
from webhooks.cluster.listing import Kind

#: The name of every report the audit writes (one per namespace, one cluster-wide).
NAME: Final = "placement-webhooks"
#: ``source`` of the reports and the field manager of their server-side applies.
SOURCE: Final = "placement-webhooks"
#: The label every report carries; only reports with it are ever replaced or deleted.
MANAGED_BY: Final = ("app.kubernetes.io/managed-by", "placement-webhooks")
#: Results per report unless ``--max-results`` says otherwise.
MAX_RESULTS: Final = 500


@dataclass(frozen=True, slots=True)
class ReportApi:
    """A report API: its namespaced and cluster-scoped kinds, and what its schema has.

    ``report_source``: a report-level ``source`` and ``configuration.limits`` exist
    (OpenReports); otherwise ``source`` is written on each result and the cap nowhere.
    """

    name: str
    namespaced: Kind
    cluster: Kind
    report_source: bool

    def kind(self, namespace: str) -> Kind:
        """The kind of the report for ``namespace`` (``""``: cluster-scoped objects).

        Why one place: writing, listing and deleting must agree on it.
        """
        return self.namespaced if namespace else self.cluster


OPENREPORTS = ReportApi(
    "openreports",
    Kind("Report", "reports", "openreports.io", "v1alpha1", True),
    Kind("ClusterReport", "clusterreports", "openreports.io", "v1alpha1", False),
    report_source=True,
)
WGPOLICYK8S = ReportApi(
    "wgpolicyk8s",
    Kind("PolicyReport", "policyreports", "wgpolicyk8s.io", "v1alpha2", True),
    Kind("ClusterPolicyReport", "clusterpolicyreports", "wgpolicyk8s.io", "v1alpha2", False),
    report_source=False,
)
#: The report APIs by the name ``--report-api`` takes.
REPORT_APIS: Mapping[str, ReportApi] = {api.name: api for api in (OPENREPORTS, WGPOLICYK8S)}


def label_selector() -> str:
    """The label selector that finds this suite's reports (``key=value``).

    Why by label: stale reports are found by it, and nothing without it is ever deleted.
    """
    return "=".join(MANAGED_BY)


def timestamp(moment: dt.datetime) -> dict[str, int]:
    """``{seconds, nanos}`` since the epoch, the protobuf Timestamp shape reports use.

    Why integer arithmetic: a float timestamp rounds nanoseconds away at today's epochs.
    """
    since = moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return {"seconds": since // dt.timedelta(seconds=1), "nanos": moment.microsecond * 1000}


def summary(results: Sequence[Result]) -> dict[str, int]:
    """Counts of every result by outcome (``pass`` is always 0: passes are not listed).

    Why from all results: a capped report must not look healthier than the namespace is.
    """
    counts = {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}
    for result in results:
        counts[result.outcome] += 1
    return counts


def entry(result: Result, when: Mapping[str, int], api: ReportApi) -> dict[str, Any]:
    """One report result: policy (the plugin), rule, outcome, severity, message, subject.

    ``properties`` are strings, as the schema requires: ``pods`` (how many Pods showed it,
    for a workload), ``action`` (of a violation), ``exception`` (of a skip).
    """
    out: dict[str, Any] = {}
    if not api.report_source:
        out["source"] = SOURCE
    out["policy"] = result.policy
    out["rule"] = result.rule
    out["result"] = result.outcome
    if result.severity:
        out["severity"] = result.severity
    out["message"] = result.message
    out["resources"] = [result.ref.reference()]
    out["timestamp"] = dict(when)
    properties = dict(result.properties)
    if result.pods:
        properties["pods"] = str(result.pods)
    if properties:
        out["properties"] = properties
    return out


def report(
    api: ReportApi,
    namespace: str,
    results: Sequence[Result],
    when: Mapping[str, int],
    max_results: int = MAX_RESULTS,
) -> dict[str, Any]:
    """The report for ``namespace`` (``""``: the cluster report) holding ``results``.

    ``results`` come in the order to keep (what fails first); past ``max_results`` they are
    cut, while ``summary`` still counts them all.
    """
    kind = api.kind(namespace)
    meta: dict[str, Any] = {"name": NAME}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {MANAGED_BY[0]: MANAGED_BY[1]}
    body: dict[str, Any] = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}
    if api.report_source:
        body["source"] = SOURCE
        body["configuration"] = {"limits": {"maxResults": max_results}}
    body["summary"] = summary(results)
    body["results"] = [entry(r, when, api) for r in results[:max_results]]
    return body


def build(audit: Audit, api: ReportApi, max_results: int = MAX_RESULTS) -> list[dict[str, Any]]:
    """Every report for ``audit``: one per namespace with results, then the cluster report.

    A namespace without results gets none (a stale one is deleted when publishing).
    """
    when = timestamp(audit.started)
    reports = [
        report(api, namespace, results, when, max_results)
        for namespace, results in audit.by_namespace()
        if namespace
    ]
    cluster = [r for namespace, results in audit.by_namespace() if not namespace for r in results]
    if cluster:
        reports.append(report(api, "", cluster, when, max_results))
    return reports
