"""Everything the chart renders is accepted by a real API server's server-side dry run.

For every values scenario of the chart's own tests (each TLS mode, every option on in
turn: ServiceMonitor, PrometheusRule, dashboard, NetworkPolicy, autoscaling, Nodes,
selectors, the knobs, the audit CronJob, a staged rollout, one webhook per plugin, ...)
plus the audit with DRA claims and the older report API, every object ``helm template``
renders, hooks included, is server-side applied with ``dryRun=All`` and
``fieldValidation=Strict``: defaulting, validation, strict fields and every admission
plugin of a stock API server run, and nothing is stored. Namespaced objects go into the
release namespace, made first. The kinds a stock API server lacks are installed first
from :mod:`tests.controlplane.chartcrds` (see there where their schemas come from).

Objects go in Helm's install order: the release's objects by kind, then the
``post-install`` hooks by weight, then the ``test`` hooks. A dry run stores nothing, so an
object whose admission reads another one (a hook Pod's ServiceAccount) would be refused for
that alone; ServiceAccounts are therefore really applied once their dry run passed, as the
install would have made them by then.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    create_namespace,
    running,
)
from controlplane.harness.resources import apply, install_crds
from tests.charts.render import NAMESPACE, is_hook, render
from tests.charts.test_chart import SCENARIOS
from tests.controlplane.chartcrds import CRDS
from tests.controlplane.conftest import FIGURES

#: Helm's install order of kinds (its ``InstallOrder``); kinds not listed go last.
INSTALL_ORDER = [
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
]
ERT = "extended-resource-toleration"
EXTRA = {
    "the audit resolving DRA claims, writing wgpolicyk8s reports": lambda: {
        "audit": {"enabled": True, "reportApi": "wgpolicyk8s"},
        "plugins": {ERT: {"deviceClaims": True}},
    }
}
ALL = {**SCENARIOS, **EXTRA}
#: What was dry-run, for the summary: (apiVersion, kind) -> objects.
TALLY: Counter[tuple[str, str]] = Counter()


def install_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects in the order ``helm install`` (then ``helm test``) sends them."""

    def key(obj: dict[str, Any]) -> tuple[int, int, int]:
        kind = obj["kind"]
        rank = INSTALL_ORDER.index(kind) if kind in INSTALL_ORDER else len(INSTALL_ORDER)
        if not is_hook(obj):
            return (0, 0, rank)
        annotations = obj["metadata"]["annotations"]
        events = annotations["helm.sh/hook"].split(",")
        weight = int(annotations.get("helm.sh/hook-weight", "0"))
        return (1 if "post-install" in events else 2, weight, rank)

    return sorted(objects, key=key)


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A stock API server (no scheduler, no controllers), the CRDs and the namespace."""
    with running(ControlPlaneOptions(scheduler=False, controller_manager=None)) as started:
        install_crds(started.api, CRDS)
        with started.api.client() as api:
            create_namespace(api, NAMESPACE)
        yield started
    if TALLY:
        kinds = ", ".join(f"{kind} ({version}) {n}" for (version, kind), n in sorted(TALLY.items()))
        FIGURES.append(
            f"chart server-side dry run: {len(ALL)} scenarios, {sum(TALLY.values())} objects "
            f"accepted: {kinds}"
        )


@pytest.mark.parametrize("scenario", list(ALL), ids=list(ALL))
def test_every_rendered_object_passes_a_server_side_dry_run(
    plane: ControlPlane, scenario: str
) -> None:
    objects = install_order(render(ALL[scenario]()))
    refused = []
    for obj in objects:
        what = f"{obj['kind']} {obj['metadata']['name']}"
        status, body = apply(
            plane.api, obj, field_manager="helm", dry_run=True, namespace=NAMESPACE
        )
        if status not in (200, 201):
            message = body.get("message") if isinstance(body, dict) else body
            refused.append(f"{what}: HTTP {status}: {message}")
            continue
        TALLY[obj["apiVersion"], obj["kind"]] += 1
        if obj["kind"] == "ServiceAccount":
            with contextlib.suppress(Exception):
                apply(plane.api, obj, field_manager="helm", namespace=NAMESPACE)
    assert not refused, "\n".join(refused)


def test_a_dry_run_stores_nothing(plane: ControlPlane) -> None:
    """The proof that the dry runs above were dry: the chart's webhook configurations,
    dry-run in every scenario, are not registered (they would send every pod to a
    webhook that is not there)."""
    for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        status, body = plane.api.get(f"/apis/admissionregistration.k8s.io/v1/{plural}")
        assert status == 200
        assert [i["metadata"]["name"] for i in body["items"]] == []


def test_the_server_refuses_what_the_crds_do_not_describe(plane: ControlPlane) -> None:
    """The other side: the installed CRDs do check what they describe."""
    objects = render(SCENARIOS["ServiceMonitor, NetworkPolicy and autoscaling on"]())
    monitor = next(o for o in objects if o["kind"] == "ServiceMonitor")
    monitor["spec"]["endpoints"][0]["scheme"] = "gopher"
    status, body = apply(plane.api, monitor, field_manager="helm", dry_run=True)
    assert status == 422, body
    assert "Unsupported value" in body["message"]
    monitor["spec"]["endpoints"][0]["scheme"] = "http"
    monitor["spec"]["endpoints"][0]["colour"] = "red"
    status, body = apply(plane.api, monitor, field_manager="helm", dry_run=True)
    assert status >= 400, body
    assert "colour" in body["message"]
