"""``doctor``'s cluster-side checks on real API servers: ``in-tree-twins``, ``apis`` and
``availability``, each with an installation broken on purpose and a healthy one.

Three API servers on one etcd, no scheduler and no controller-manager (the Deployment's
status is then the test's to write, as no kubelet runs its pods):

* ``managed``: what EKS runs in tree (DefaultTolerationSeconds, ExtendedResourceToleration,
  RuntimeClass) plus the three opt-in twins left (PodNodeSelector, PodTolerationRestriction,
  LimitPodHardAntiAffinityTopology), with ``serve`` registered behind them;
* ``webhooks``: every in-tree twin off, ``serve`` registered;
* ``gated``: no webhook; the gates the settings need turned on by flag where the release
  has them off by default.

A group-version that is not served is proven by the unit tests only: a kube-apiserver
started without ``resource.k8s.io/v1`` never becomes ready (its own ResourceSlice
informer waits for it).

Each check is called on an :class:`Installation` read from the live server, as ``doctor``
reads it: the webhook configurations, the release from ``/version`` and a configuration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from controlplane.harness import (
    ApiServerOptions,
    ControlPlane,
    ControlPlaneOptions,
    create_namespace,
)
from controlplane.harness.apply import apply_objects, delete_objects
from controlplane.harness.modes import apiserver_options
from controlplane.release import RELEASE
from tests.command import run_cli
from tests.controlplane.chart.served import rendered
from tests.controlplane.conftest import FIGURES, started_plane
from webhooks.cluster.version import read_release
from webhooks.core.config import load_config
from webhooks.install.doctor import apis, availability, twins
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation
from webhooks.install.webhookconfig import read_configurations
from webhooks.k8s.namespaces import NODE_SELECTOR_ANNOTATION
from webhooks.k8s.releases import DRA_EXTENDED_RESOURCE, TOLERATION_COMPARISONS
from webhooks.plugins import REGISTRY

NAME = NAMESPACE = "placement-webhooks"
#: What ``serve`` runs on both webhook servers: the defaults plus every plugin with an
#: in-tree twin, so all six twins are looked for.
SERVED = {
    "plugins": {
        name: {"enabled": True}
        for name in ("pod-node-selector", "pod-toleration-restriction", "anti-affinity-topology")
    }
}
#: What ``managed`` runs in tree beyond what EKS does.
EXTRA_IN_TREE = ("PodNodeSelector", "PodTolerationRestriction", "LimitPodHardAntiAffinityTopology")
HAS_COMPARISONS = TOLERATION_COMPARISONS in RELEASE.gates


#: The gates the settings of :data:`NEEDS_GATES` need that this release has, off by default:
#: the ``gated`` server turns them on by flag.
TURNED_ON = tuple(
    gate
    for gate in (DRA_EXTENDED_RESOURCE, TOLERATION_COMPARISONS)
    if gate in RELEASE.gates and not RELEASE.gate_on(gate)
)


def _gated_flags() -> tuple[str, ...]:
    if not TURNED_ON:
        return ()
    return ("--feature-gates=" + ",".join(f"{gate}=true" for gate in TURNED_ON),)


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The three API servers, each with the installation's namespace (annotated with a node
    selector, so PodNodeSelector can show itself) and its ``default`` ServiceAccount."""
    config = tmp_path_factory.mktemp("doctor") / "config.yaml"
    config.write_text(yaml.safe_dump(SERVED))
    managed = apiserver_options("managed", config)
    admission = dataclasses.replace(
        managed.admission,
        enable=(*managed.admission.enable, *EXTRA_IN_TREE),
        disable=tuple(p for p in managed.admission.disable if p not in EXTRA_IN_TREE),
    )
    options = ControlPlaneOptions(
        apiservers=(
            dataclasses.replace(managed, admission=admission),
            apiserver_options("webhooks", config),
            ApiServerOptions(name="gated", extra_args=_gated_flags()),
        ),
        scheduler=False,
        controller_manager=None,
    )
    with started_plane(options, "etcd, 3 API servers, 2 serve (doctor)") as started:
        for server in started.apiservers.values():
            with server.client() as api:
                create_namespace(
                    api, NAMESPACE, annotations={NODE_SELECTOR_ANNOTATION: "pool=system"}
                )
        yield started


def _installation(api: Any, config: dict[str, Any] | None) -> Installation:
    kinds = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    return Installation(
        api=api,
        name=NAME,
        namespace=NAMESPACE,
        release=read_release(api, 10.0),
        configurations=tuple(read_configurations(api, [(kind, NAME) for kind in kinds])),
        config=load_config(config, REGISTRY),
    )


def _by_plugin(found: list[Finding]) -> dict[str, Finding]:
    return {f.reason.split(":", 1)[0]: f for f in found}


def _record(server: str, found: list[Finding]) -> None:
    for finding in found:
        FIGURES.append(f"doctor on {server} ({RELEASE.name}): {finding.line()}")


@pytest.mark.parametrize(
    ("server", "failing"),
    [
        pytest.param(
            "managed",
            {
                "pod-node-selector",
                "pod-toleration-restriction",
                "extended-resource-toleration",
                "anti-affinity-topology",
            },
            id="the four opt-in twins on in tree beside ours fail; the two default ones are ok",
        ),
        pytest.param("webhooks", set(), id="with every in-tree twin off all is ok"),
    ],
)
def test_in_tree_twins_are_seen_from_a_dry_run_pod(
    plane: ControlPlane, server: str, failing: set[str]
) -> None:
    with plane.apiservers[server].client() as api:
        found = twins.check(_installation(api, SERVED))
        pods = client.CoreV1Api(api).list_namespaced_pod(NAMESPACE).items
    _record(server, found)
    by_plugin = _by_plugin(found)
    assert set(by_plugin) == {p.name for p in REGISTRY if p.upstream}
    assert {name for name, f in by_plugin.items() if f.status == Status.FAIL} == failing
    assert {f.status for f in found} <= {Status.OK, Status.FAIL}
    for name in failing:
        upstream = REGISTRY.get(name).upstream
        assert upstream in by_plugin[name].reason
        assert f"remove {upstream} from kube-apiserver's --enable-admission-plugins" in (
            by_plugin[name].fix
        )
        assert f"plugins.{name}.enabled: false" in by_plugin[name].fix
    on_by_default = "also on" if server == "managed" else "is off"
    assert on_by_default in by_plugin["default-toleration-seconds"].reason
    assert on_by_default in by_plugin["runtime-class"].reason
    assert pods == []  # dry runs only: nothing was stored


def test_default_toleration_seconds_in_tree_with_other_seconds_than_ours_fails(
    plane: ControlPlane,
) -> None:
    config = {"plugins": {"default-toleration-seconds": {"notReadySeconds": 60}}}
    with plane.apiservers["managed"].client() as api:
        found = twins.check(_installation(api, config))
    _record("managed, notReadySeconds 60", found)
    seconds = _by_plugin(found)["default-toleration-seconds"]
    assert seconds.status == Status.FAIL
    assert "300 s / 300 s" in seconds.reason
    assert "--default-not-ready-toleration-seconds=60" in seconds.fix


NEEDS_GATES = {
    "plugins": {
        "extended-resource-toleration": {"deviceClaims": True},
        "taint-toleration-rules": {"comparisonOperators": True},
    }
}


def _setting(found: list[Finding], key: str) -> Finding:
    [finding] = [f for f in found if f.reason.startswith("plugins.") and key in f.reason]
    return finding


def test_apis_judge_each_setting_by_the_server_s_own_gates(plane: ControlPlane) -> None:
    with plane.apiservers["webhooks"].client() as api:
        found = apis.check(_installation(api, NEEDS_GATES))
    _record("webhooks", found)
    claims = _setting(found, "deviceClaims")
    expected = Status.OK if RELEASE.gate_on(DRA_EXTENDED_RESOURCE) else Status.FAIL
    assert claims.status == expected
    if expected == Status.FAIL:
        assert f"--feature-gates={DRA_EXTENDED_RESOURCE}=true" in claims.fix
    comparisons = _setting(found, "comparisonOperators")
    assert comparisons.status == Status.FAIL
    assert "in this API server" in comparisons.reason
    flag = f"--feature-gates={TOLERATION_COMPARISONS}=true" if HAS_COMPARISONS else "upgrade to"
    assert flag in comparisons.fix
    served = [f for f in found if not f.reason.startswith("plugins.")]
    assert {f.status for f in served} == {Status.OK}
    assert any(f.reason.startswith("ResourceClaim (resource.k8s.io/v1)") for f in served)


def test_apis_see_a_gate_turned_on_by_flag(plane: ControlPlane) -> None:
    with plane.apiservers["gated"].client() as api:
        found = apis.check(_installation(api, NEEDS_GATES))
    _record("gated", found)
    for key, gate in (
        ("deviceClaims", DRA_EXTENDED_RESOURCE),
        ("comparisonOperators", TOLERATION_COMPARISONS),
    ):
        expected = Status.OK if gate in RELEASE.gates else Status.FAIL
        assert _setting(found, key).status == expected
    assert {f.status for f in found if not f.reason.startswith("plugins.")} == {Status.OK}


@pytest.fixture
def chart_release(plane: ControlPlane) -> Iterator[Any]:
    """Applies the chart's Deployment and budget for given values on ``webhooks``, with
    the status a controller would write once every replica is ready; removed afterwards."""
    applied: list[dict[str, Any]] = []
    with plane.apiservers["webhooks"].client() as api:

        def install(values: dict[str, Any]) -> None:
            objects = [
                o
                for o in rendered(values, NAME, NAMESPACE, upgrade=False)
                if o["kind"] in {"Deployment", "PodDisruptionBudget"}
            ]
            applied.extend(objects)
            apply_objects(api, objects)
            [deployment] = [o for o in objects if o["kind"] == "Deployment"]
            replicas = deployment["spec"]["replicas"]
            counts = ("replicas", "readyReplicas", "availableReplicas", "updatedReplicas")
            client.AppsV1Api(api).patch_namespaced_deployment_status(
                NAME, NAMESPACE, {"status": dict.fromkeys(counts, replicas)}
            )

        yield install, api
        delete_objects(api, applied)


@pytest.mark.parametrize(
    ("values", "failing"),
    [
        pytest.param({}, [], id="the chart's defaults are all ok"),
        pytest.param(
            {"replicaCount": 1},
            ["1 replica(s) behind the fail-closed webhook(s)"],
            id="one replica behind the fail-closed validating webhook fails",
        ),
        pytest.param(
            {"podDisruptionBudget": {"minAvailable": 2}},
            ["PodDisruptionBudget placement-webhooks (minAvailable 2) with 2 replica(s)"],
            id="a budget with minAvailable equal to the replicas fails: drains deadlock",
        ),
    ],
)
def test_availability_of_the_chart_s_deployment(
    chart_release: Any, values: dict[str, Any], failing: list[str]
) -> None:
    install, api = chart_release
    install(values)
    found = availability.check(_installation(api, SERVED))
    _record(f"webhooks, chart values {values}", found)
    fails = [f for f in found if f.status == Status.FAIL]
    assert len(fails) == len(failing)
    for finding, prefix in zip(fails, failing, strict=True):
        assert finding.reason.startswith(prefix)
        assert finding.fix
    assert all(f.status != Status.WARN for f in found)


def test_the_doctor_command_reads_the_chart_s_config_and_names_twins_and_budget(
    plane: ControlPlane,
) -> None:
    """``placement-webhooks doctor`` on ``managed``, with the chart's ConfigMap, Deployment and
    budget applied (``minAvailable`` equal to the replicas): the config it finds through the
    Deployment enables the four opt-in twins' plugins, whose lines fail with their fix, as
    does the budget's (and readiness: no kubelet runs the pods); exit 1."""
    server = plane.apiservers["managed"]
    values = {"plugins": SERVED["plugins"], "podDisruptionBudget": {"minAvailable": 2}}
    kinds = {"ConfigMap", "Deployment", "PodDisruptionBudget"}
    objects = [o for o in rendered(values, NAME, NAMESPACE, upgrade=False) if o["kind"] in kinds]
    with server.client() as api:
        apply_objects(api, objects)
        try:
            proc = run_cli(
                "doctor", "--name", NAME, "-n", NAMESPACE, "--kubeconfig", str(server.kubeconfig)
            )
        finally:
            delete_objects(api, objects)
    lines = proc.stdout.splitlines()
    FIGURES.extend(f"doctor command on managed ({RELEASE.name}): {line}" for line in lines)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for name in SERVED["plugins"]:
        upstream = REGISTRY.get(name).upstream
        [line] = [x for x in lines if x.startswith(f"fail in-tree-twins: {name}: ")]
        assert f"remove {upstream} from kube-apiserver's --enable-admission-plugins" in line
    assert any(x.startswith("fail in-tree-twins: extended-resource-toleration: ") for x in lines)
    assert any(
        x.startswith("fail availability: PodDisruptionBudget placement-webhooks (minAvailable 2)")
        for x in lines
    )
    checks = list(dict.fromkeys(line.split()[1].rstrip(":") for line in lines))
    assert checks[-3:] == ["in-tree-twins", "apis", "availability"]


def test_the_config_file_is_what_serve_runs(plane: ControlPlane) -> None:
    """The installations above judge the configuration ``serve`` was started with."""
    served = Path(plane.webhooks["webhooks"].config).read_text(encoding="utf-8")
    assert yaml.safe_load(served)["plugins"] == SERVED["plugins"]
