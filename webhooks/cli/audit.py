"""``placement-webhooks audit``: the live cluster against the policy, drift included.

Exit codes: 0 when nothing fails; 1 when an enforced violation (or an object that could not
be judged) is found; 2 for unusable input, or an API server that cannot be reached or
refuses, in one line naming the request (``list pods: HTTP 403: ...``).
"""

from __future__ import annotations

import sys

import click

from webhooks.audit import render
from webhooks.audit.publish import publish
from webhooks.audit.reports import MAX_RESULTS, REPORT_APIS, build
from webhooks.audit.scan import ScopeError, scan
from webhooks.cli.check import output_option, parse_outputs, write_output
from webhooks.cli.common import config_option, fail, read_config_or_exit
from webhooks.cluster.listing import ApiError, ClusterError, Paging, connect
from webhooks.install.webhookconfig import DEFAULT_EXCLUDED_NAMESPACES

HELP = """Audit the objects a cluster holds against the policy, as admission would judge them today.

Lists Pods, every workload kind `check` admits, and Nodes, in pages, and admits each with
the same engine and config as `check` (actions, overrides and exceptions included); the
cluster's Namespaces and RuntimeClasses are the context plugins look up, and its
DeviceClasses, ResourceClaimTemplates and ResourceClaims when extended-resource-toleration
resolves claims (deviceClaims or enforce). Each object is
admitted as the CREATE admission saw: status, the node binding, server-set metadata and a
generated name are left out.

\b
  violation  what the validators would refuse today: fail under enforce, warning under
             warn or audit
  drift      what the mutating chain would change today on a Pod or a DaemonSet's
             template, said as `check` says it (a warning)
  skipped    plugins an exception covers; mirror pods and finished pods are not admitted

Pods are reported once on their controller (a ReplicaSet's on its Deployment, a Job's on
its CronJob) with the number of pods affected. Namespaces the webhooks never see are left
out of a whole-cluster audit (kube-system, kube-node-lease and --exclude-namespace, which
should name the suite's own namespace); --namespace names exactly what to audit.

--write-reports writes one OpenReports Report per namespace that has results and one
ClusterReport for Nodes (server-side apply, field manager placement-webhooks, label
app.kubernetes.io/managed-by=placement-webhooks), and deletes this suite's reports that a
whole-cluster run (or the --namespace runs) no longer produces. Nothing is written when the
scan could not read everything. The CRDs are not part of this suite.

Connects like kubectl: inside a pod its service account, otherwise --kubeconfig (default
$KUBECONFIG, else ~/.kube/config) at --context. A page that fails with 429/5xx or a lost
connection is asked again a few times.

Exit codes: 0 nothing fails; 1 an enforced violation or an error (0 with --exit-zero); 2
unusable input, or an API server that cannot be reached or refuses (one line naming the
request).
"""


@click.command(help=HELP)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    help="Kubeconfig file [default: in a pod its service account, else $KUBECONFIG or "
    "~/.kube/config].",
)
@click.option("--context", "kube_context", help="Kubeconfig context [default: its current one].")
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="Audit only this namespace; repeatable [default: all, and Nodes].",
)
@click.option(
    "--exclude-namespace",
    "exclude",
    multiple=True,
    metavar="NS",
    help="Leave this namespace out of a whole-cluster audit, as the webhooks leave it out; "
    f"repeatable. {' and '.join(DEFAULT_EXCLUDED_NAMESPACES)} always are.",
)
@config_option()
@output_option("text, json or junit")
@click.option("--write-reports", is_flag=True, help="Write the results as policy reports.")
@click.option(
    "--report-api",
    type=click.Choice(sorted(REPORT_APIS)),
    default="openreports",
    show_default=True,
    help="openreports.io/v1alpha1 Report/ClusterReport, or wgpolicyk8s.io/v1alpha2 "
    "PolicyReport/ClusterPolicyReport.",
)
@click.option(
    "--max-results",
    type=click.IntRange(min=1),
    default=MAX_RESULTS,
    show_default=True,
    help="Results kept per report (the summary still counts all of them).",
)
@click.option(
    "--exit-zero",
    is_flag=True,
    help="Exit 0 even when something fails (a scheduled job whose output is the reports); "
    "2 still means the audit could not run.",
)
@click.option(
    "--page-size",
    type=click.IntRange(min=1),
    default=Paging().page_size,
    show_default=True,
    help="Objects asked per list request.",
)
def audit(
    kube_context: str | None,
    kubeconfig: str | None,
    namespaces: tuple[str, ...],
    exclude: tuple[str, ...],
    config_path: str | None,
    outputs: tuple[str, ...],
    write_reports: bool,
    report_api: str,
    max_results: int,
    exit_zero: bool,
    page_size: int,
) -> None:
    """Scan, render, write reports; the help text is :data:`HELP`."""
    targets = parse_outputs(outputs, list(render.FORMATS))
    config = read_config_or_exit(config_path)
    try:
        lister = connect(kubeconfig or "", kube_context or "", paging=Paging(page_size=page_size))
    except ClusterError as exc:
        fail(str(exc))
    with lister:
        try:
            excluded = (*DEFAULT_EXCLUDED_NAMESPACES, *exclude)
            found = scan(lister, config, tuple(dict.fromkeys(namespaces)), exclude=excluded)
        except (ApiError, ScopeError) as exc:
            fail(str(exc))
        for name, target in targets:
            write_output(render.FORMATS[name](found), target)
        if write_reports:
            api = REPORT_APIS[report_api]
            try:
                done = publish(lister, build(found, api, max_results), api, found.namespaces)
            except ApiError as exc:
                hint = ""
                if "HTTP 404" in str(exc):
                    hint = f" (is the {api.namespaced.group} CRD installed?)"
                fail(f"{exc}{hint}")
            click.echo(f"placement-webhooks: {done.line()}", err=True)
    sys.exit(0 if exit_zero else found.exit_code())
