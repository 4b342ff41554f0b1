"""``mutate``'s output reads back and settles, for the default and the full configuration.

The README promises that ``check --fail-on-mutation`` finds nothing to change on what
``mutate`` prints. Here manifests of every kind that carries a pod spec go through the
pipeline a user runs, in process: written as YAML, read by the one reader, admitted, the
result written as ``mutate`` writes it and read back. The first run must report no
convergence failure; the second must find no mutation and no convergence failure, and
must print what the first printed (``mutate`` twice is ``mutate`` once).

The manifests are drawn to meet the plugins' branches: tolerations with wildcards, empty
keys, Exists and Equal (and the DaemonSet defaults, exactly or more broadly), node
selectors, affinities, resources with extended resources, RuntimeClasses, and a pod spec
or template that is missing, null or empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.properties.strategies import (
    API_VERSIONS,
    CANNED_TOLERATIONS,
    affinities,
    clusters,
    configs,
    containers,
    label_maps,
    selector_maps,
    workloads,
)
from webhooks.cluster.files import StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.config import Config
from webhooks.dryrun.report import CONVERGENCE, Report
from webhooks.dryrun.run import dry_run, written_documents
from webhooks.manifests.reader import load
from webhooks.manifests.writer import dump_all

BENCH = Path(__file__).resolve().parents[2] / "bench" / "configs"
CONFIGS: dict[str, Config] = {
    "default": read_config(None),
    "full": read_config(BENCH / "full.yaml"),
}
#: The full config's cluster: namespace "shop" carries every annotation the plugins read,
#: "monitoring" is its exception's, RuntimeClass "gvisor" has overhead and scheduling.
CLUSTER_FILE = BENCH / "cluster.yaml"

#: What manifests write, valid toleration by valid toleration: the DaemonSet defaults and
#: their broader forms, wildcards, empty keys, Exists and Equal, NoExecute with seconds.
TOLERATIONS: tuple[dict[str, Any], ...] = (
    *CANNED_TOLERATIONS,
    {"operator": "Exists", "effect": "NoSchedule"},
    {"key": "", "operator": "Exists"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "team", "operator": "Equal", "value": "shop", "effect": "NoSchedule"},
    {"key": "team", "operator": "Exists"},
    {"key": "spot", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "sandbox", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
    {"key": "example.com/fpga", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists"},
    {"key": "foo", "value": "bar", "effect": "NoSchedule"},
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 120,
    },
)
NAMESPACES = ("shop", "monitoring", "default", "kube-system", "team-a")
RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "example.com/fpga", "nvidia.com/mig-1g.12gb")

tolerations = st.lists(st.sampled_from(TOLERATIONS), max_size=5)
resource_maps = st.dictionaries(
    st.sampled_from(RESOURCES), st.sampled_from(["1", "100m", "2Gi"]), max_size=2
)
app_containers = st.fixed_dictionaries(
    {"name": st.just("app"), "image": st.just("busybox:1.36")},
    optional={
        "resources": st.fixed_dictionaries(
            {}, optional={"requests": resource_maps, "limits": resource_maps}
        )
    },
)
specs = st.fixed_dictionaries(
    {"containers": st.lists(app_containers, min_size=1, max_size=2)},
    optional={
        "initContainers": st.lists(containers("init"), max_size=1),
        "tolerations": tolerations,
        "nodeSelector": selector_maps
        | st.sampled_from([{"env": "prod"}, {"pool": "general"}, {"sandbox": "gvisor"}]),
        "affinity": affinities,
        "hostNetwork": st.booleans(),
        "runtimeClassName": st.sampled_from(["gvisor", "kata"]),
    },
)
#: A pod spec as manifests write it, or one missing, null or empty (the key then absent).
MISSING = object()
spec_or_missing = st.one_of(specs, st.sampled_from([MISSING, None, {}]))


def _with(mapping: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    if value is not MISSING:
        mapping[key] = value
    return mapping


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    """A Pod manifest; sometimes a DaemonSet's, so the DaemonSet defaults apply to it."""
    meta: dict[str, Any] = {"name": "p", "namespace": draw(st.sampled_from(NAMESPACES))}
    if draw(st.booleans()):
        meta["labels"] = draw(label_maps | st.just({"app": "dcgm-exporter"}))
    if draw(st.integers(0, 3)) == 0:
        owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u"}
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return _with(
        {"apiVersion": "v1", "kind": "Pod", "metadata": meta}, "spec", draw(spec_or_missing)
    )


@st.composite
def templated(draw: st.DrawFn) -> dict[str, Any]:
    """A workload whose pod template is drawn like a Pod's, missing or empty spec included."""
    kind = draw(st.sampled_from(sorted(API_VERSIONS.keys() - {"Pod", "Node"})))
    workload: dict[str, Any] = draw(workloads(kind))
    workload["metadata"] = {"name": "w", "namespace": draw(st.sampled_from(NAMESPACES))}
    template = workload["template"] if kind == "PodTemplate" else _template(workload, kind)
    template.pop("spec", None)
    _with(template, "spec", draw(spec_or_missing))
    return workload


def _template(workload: dict[str, Any], kind: str) -> dict[str, Any]:
    spec = workload["spec"]
    if kind == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    found: dict[str, Any] = spec["template"]
    return found


def _read_back(objs: list[Any]) -> list[Any]:
    manifests = load(["-"], dump_all(objs).encode(), "out.yaml")
    assert not manifests.problems, [str(p) for p in manifests.problems]
    return manifests.documents


def _mutate(
    documents: list[Any], config: Config, cluster: StaticCluster
) -> tuple[Report, list[Any]]:
    report = dry_run(documents, config, cluster)
    assert not report.problems, [str(p) for p in report.problems]
    return report, written_documents(report, documents)


def _findings(report: Report, *types: str) -> list[str]:
    return [
        f"{c.kind} {c.namespace}/{c.name}: {f.type}: {f.message}"
        for c in report.checked
        for f in c.findings
        if f.type in types
    ]


def _settles(objs: list[dict[str, Any]], config: Config, cluster: StaticCluster) -> None:
    first, once = _mutate(_read_back(objs), config, cluster)
    assert not _findings(first, CONVERGENCE)
    second, twice = _mutate(_read_back(once), config, cluster)
    assert not _findings(second, "mutation", CONVERGENCE), dump_all(once)
    assert twice == once


manifests = st.lists(pods() | templated(), min_size=1, max_size=3)


@pytest.mark.parametrize("config", sorted(CONFIGS))
@given(manifests)
def test_mutate_output_reads_back_with_nothing_left_to_change(
    config: str, objs: list[dict[str, Any]]
) -> None:
    _settles(objs, CONFIGS[config], read_objects([CLUSTER_FILE]))


@given(configs(), clusters(), manifests)
def test_it_does_so_under_every_plugin_with_settings_and_cluster_objects_drawn(
    config: Config, cluster: StaticCluster, objs: list[dict[str, Any]]
) -> None:
    """Every plugin on, with settings, actions and exceptions drawn, over drawn Namespaces
    (their annotations) and RuntimeClasses."""
    _settles(objs, config, cluster)
