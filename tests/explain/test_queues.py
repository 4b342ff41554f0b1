"""Which Kueue ResourceFlavors ``explain`` offers a pod: only those of the ClusterQueue
behind its LocalQueue, and none to a pod Kueue does not manage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.command import invoke_cli
from webhooks.explain.queues import QUEUE_LABEL, Queues, queue_label

V2 = "kueue.x-k8s.io/v1beta2"


def flavor(name: str) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cluster_queue(
    name: str, *flavors: str, selector: Any = None, api: str = V2, **spec: Any
) -> dict[str, Any]:
    groups = [{"coveredResources": ["cpu"], "flavors": [{"name": f} for f in flavors]}]
    body: dict[str, Any] = {"resourceGroups": groups, **spec}
    if selector is not None:
        body["namespaceSelector"] = selector
    return {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def local_queue(
    name: str, target: str, namespace: str = "ml", api: str = V2, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": target, **spec},
    }


POD_SPEC = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {}}}]}


def job(queue: str | None = "team", namespace: str = "ml") -> dict[str, Any]:
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": namespace, "labels": labels},
        "spec": {"template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}},
    }


#: Two flavors, and the ClusterQueue team-cq that reaches only a100 through ml/team.
TWO = [flavor("a100"), flavor("spot")]
TEAM = [*TWO, cluster_queue("team-cq", "a100", selector={}), local_queue("team", "team-cq")]
NONE_OFFERED = "none"


def run(
    tmp_path: Path, templates: list[dict[str, Any]], workload: dict[str, Any], *flags: str
) -> tuple[int, dict[str, Any]]:
    kinds = tmp_path / "templates.yaml"
    kinds.write_text(yaml.safe_dump_all(templates), encoding="utf-8")
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(workload), encoding="utf-8")
    result = invoke_cli(
        ["explain", "-o", "json", "--node-templates", str(kinds), str(path), *flags]
    )
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def offered(out: dict[str, Any]) -> tuple[list[str], str]:
    """The flavors the pod is offered, and the reason every other one gives."""
    up = out["pods"][0]["scaleUp"]
    hosts = [t["name"] for t in up["templates"] if t["fits"]]
    reasons = {u["message"] for t in up["templates"] if not t["fits"] for u in t["unmet"]}
    return hosts, " | ".join(sorted(reasons))


CASES = [
    pytest.param(
        TEAM,
        job(),
        ["a100"],
        "not a flavor of ClusterQueue team-cq (LocalQueue ml/team's): Kueue gives its "
        "workloads only a100",
        id="a labelled Job is offered only its ClusterQueue's flavors",
    ),
    pytest.param(
        TEAM,
        job(queue=None),
        [],
        f"not managed by Kueue: no {QUEUE_LABEL} label",
        id="a Job without a queue label is not Kueue's and gets no flavor",
    ),
    pytest.param(
        [*TEAM, local_queue("default", "team-cq")],
        job(queue=None),
        ["a100"],
        "not a flavor of ClusterQueue team-cq (LocalQueue ml/default's)",
        id="a Job without a label gets the LocalQueue named default in its namespace",
    ),
    pytest.param(
        [*TEAM, local_queue("default", "team-cq", namespace="kube-system")],
        job(queue=None, namespace="kube-system"),
        [],
        "not managed by Kueue",
        id="the default LocalQueue does not apply in kube-system, which Kueue leaves alone",
    ),
    pytest.param(
        TEAM,
        job(queue="other"),
        [],
        f"{QUEUE_LABEL} names LocalQueue ml/other, which is not among --node-templates: the "
        "flavors of its ClusterQueue cannot be known",
        id="a label naming an unknown LocalQueue gets no flavor and says so",
    ),
    pytest.param(
        TEAM,
        job(namespace="research"),
        [],
        "LocalQueue research/team, which is not among --node-templates",
        id="a LocalQueue is looked up in the pod's own namespace",
    ),
    pytest.param(
        TWO,
        job(),
        [],
        "(no LocalQueue is among the inputs)",
        id="flavors given without any queue are offered to no pod",
    ),
    pytest.param(
        [*TWO, local_queue("team", "gone")],
        job(),
        [],
        "LocalQueue ml/team points at ClusterQueue gone, which is not among --node-templates",
        id="a LocalQueue pointing at an unknown ClusterQueue gets no flavor",
    ),
    pytest.param(
        [*TWO, cluster_queue("team-cq", "a100"), local_queue("team", "team-cq")],
        job(),
        [],
        "ClusterQueue team-cq (of LocalQueue ml/team) has no namespaceSelector, which selects "
        "no namespace: Kueue admits nothing",
        id="a ClusterQueue without a namespaceSelector serves no namespace",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue("team-cq", "a100", selector={"matchLabels": {"team": "ml"}}),
            local_queue("team", "team-cq"),
        ],
        job(),
        [],
        "'s namespaceSelector does not select namespace ml (its Namespace is not given)",
        id="a selector on a label of a Namespace not given selects nothing, and says why",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue("team-cq", "a100", selector={"matchLabels": {"team": "ml"}}),
            local_queue("team", "team-cq"),
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "ml", "labels": {"team": "ml"}},
            },
        ],
        job(),
        ["a100"],
        "not a flavor of ClusterQueue team-cq",
        id="a selector matching the labels of a Namespace given selects it",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue(
                "team-cq",
                "a100",
                selector={
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml"]}
                    ]
                },
            ),
            local_queue("team", "team-cq"),
        ],
        job(),
        ["a100"],
        "not a flavor",
        id="a selector on the namespace's name label needs no Namespace object",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue("team-cq", "a100", selector={}, stopPolicy="Hold"),
            local_queue("team", "team-cq"),
        ],
        job(),
        [],
        "ClusterQueue team-cq is stopped (spec.stopPolicy Hold)",
        id="a stopped ClusterQueue admits nothing",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue("team-cq", "a100", selector={}),
            local_queue("team", "team-cq", stopPolicy="HoldAndDrain"),
        ],
        job(),
        [],
        "LocalQueue ml/team is stopped (spec.stopPolicy HoldAndDrain)",
        id="a stopped LocalQueue admits nothing",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue("team-cq", "a100", selector={}, stopPolicy="None"),
            local_queue("team", "team-cq", stopPolicy="None"),
        ],
        job(),
        ["a100"],
        "not a flavor",
        id="stopPolicy None is not stopped",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue("team-cq", "a100", "h100", selector={}),
            local_queue("team", "team-cq"),
        ],
        job(),
        [],
        "names ResourceFlavor h100, not among --node-templates: Kueue keeps the ClusterQueue "
        "inactive until it exists",
        id="a ClusterQueue naming a flavor that does not exist is inactive",
    ),
    pytest.param(
        [
            *TWO,
            cluster_queue("team-cq", "a100", "spot", selector={}, api="kueue.x-k8s.io/v1beta1"),
            local_queue("team", "team-cq", api="kueue.x-k8s.io/v1beta1"),
        ],
        job(),
        ["a100", "spot"],
        "",
        id="v1beta1 queues are read as v1beta2 ones, every flavor of every group offered",
    ),
]


@pytest.mark.parametrize(("templates", "workload", "hosts", "reason"), CASES)
def test_a_pod_is_offered_the_flavors_of_its_queue(
    tmp_path: Path,
    templates: list[dict[str, Any]],
    workload: dict[str, Any],
    hosts: list[str],
    reason: str,
) -> None:
    _, out = run(tmp_path, templates, workload)
    found, why = offered(out)
    assert found == hosts
    assert reason in why
    if not reason:
        assert why == ""


LABEL_CASES = [
    pytest.param(
        ("", "Pod"), {"metadata": {"labels": {QUEUE_LABEL: "q"}}}, "q", id="a Pod's own label"
    ),
    pytest.param(
        ("apps", "Deployment"),
        {"metadata": {"labels": {QUEUE_LABEL: "q"}}},
        "q",
        id="a Deployment's label",
    ),
    pytest.param(
        ("apps", "Deployment"),
        {"spec": {"template": {"metadata": {"labels": {QUEUE_LABEL: "q"}}}}},
        "q",
        id="a Deployment's pod template label: its pods carry it to Kueue's pod integration",
    ),
    pytest.param(
        ("batch", "CronJob"),
        {"spec": {"jobTemplate": {"metadata": {"labels": {QUEUE_LABEL: "q"}}}}},
        "q",
        id="a CronJob's jobTemplate label: its Jobs carry it",
    ),
    pytest.param(
        ("batch", "CronJob"),
        {"metadata": {"labels": {QUEUE_LABEL: "q"}}},
        None,
        id="a label on the CronJob itself reaches no Job",
    ),
    pytest.param(
        ("batch", "Job"),
        {
            "metadata": {"labels": {QUEUE_LABEL: "own"}},
            "spec": {"template": {"metadata": {"labels": {QUEUE_LABEL: "pods"}}}},
        },
        "own",
        id="the object's own label wins over its pod template's",
    ),
    pytest.param(
        ("", "PodTemplate"),
        {"template": {"metadata": {"labels": {QUEUE_LABEL: "q"}}}},
        "q",
        id="a PodTemplate's template label",
    ),
    pytest.param(
        ("apps", "ReplicaSet"),
        {"spec": {"template": {"metadata": {"labels": {QUEUE_LABEL: "q"}}}}},
        "q",
        id="a ReplicaSet's pods carry their template's label",
    ),
    pytest.param(
        ("apps", "DaemonSet"),
        {"metadata": {"labels": {QUEUE_LABEL: "q"}}},
        None,
        id="a DaemonSet never",
    ),
    pytest.param(
        ("batch", "Job"),
        {"metadata": {"annotations": {QUEUE_LABEL: "q"}}},
        None,
        id="an annotation is not a label",
    ),
    pytest.param(
        ("batch", "Job"), {"metadata": {"labels": {QUEUE_LABEL: ""}}}, None, id="an empty value"
    ),
    pytest.param(("batch", "Job"), {"metadata": None}, None, id="no metadata at all"),
]


@pytest.mark.parametrize(("kind", "obj", "expected"), LABEL_CASES)
def test_the_queue_label_is_read_where_kueue_reads_it(
    kind: tuple[str, str], obj: dict[str, Any], expected: str | None
) -> None:
    assert queue_label(kind, obj) == expected


def test_a_daemon_set_is_never_managed() -> None:
    found = Queues().assign(("apps", "DaemonSet"), "q", "ml")
    assert found.flavors is None
    assert found.reason == "not managed by Kueue: it has no DaemonSet integration"


@pytest.mark.parametrize(
    ("templates", "workload", "code", "suspended"),
    [
        pytest.param(
            TEAM,
            job(queue=None),
            1,
            f"Kueue suspends it until it has a {QUEUE_LABEL} label (manageJobsWithoutQueueName; "
            "no LocalQueue default in namespace ml)",
            id="with the option a Job without a queue is suspended and never runs, though a "
            "NodePool could host it",
        ),
        pytest.param(
            [*TEAM, local_queue("default", "team-cq")],
            job(queue=None),
            0,
            None,
            id="with the option and a default LocalQueue, the Job is defaulted, not suspended",
        ),
        pytest.param(TEAM, job(), 0, None, id="with the option a labelled Job is not suspended"),
        pytest.param(
            TEAM,
            job(queue=None, namespace="kueue-system"),
            0,
            None,
            id="with the option Kueue still leaves kueue-system alone",
        ),
    ],
)
def test_manage_jobs_without_queue_name(
    tmp_path: Path,
    templates: list[dict[str, Any]],
    workload: dict[str, Any],
    code: int,
    suspended: str | None,
) -> None:
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "general"}}
    flag = "--kueue-manage-jobs-without-queue-name"
    exit_code, out = run(tmp_path, [*templates, pool], workload, flag)
    assert exit_code == code
    assert out["pods"][0]["kueueSuspended"] == suspended
    assert out["pods"][0]["placeable"] is (suspended is None)


def test_without_the_option_a_job_without_a_queue_is_not_suspended(tmp_path: Path) -> None:
    _, out = run(tmp_path, TEAM, job(queue=None))
    assert out["pods"][0]["kueueSuspended"] is None


def test_flavors_without_queues_warn_once_in_text_and_json(tmp_path: Path) -> None:
    _, out = run(tmp_path, TWO, job())
    assert [w for w in out["warnings"] if "no LocalQueue or ClusterQueue" in w] == [
        "ResourceFlavors are among --node-templates but no LocalQueue or ClusterQueue: which "
        "flavors a pod's queue reaches cannot be known, so no pod is offered one (add "
        "`kubectl get clusterqueues,localqueues -A -o yaml`)"
    ]
    kinds = tmp_path / "templates.yaml"
    text = invoke_cli(["explain", "--node-templates", str(kinds), str(tmp_path / "workload.yaml")])
    assert text.stdout.count("WARNING: ResourceFlavors are among --node-templates") == 1


def test_the_text_names_the_queue_and_each_refusal(tmp_path: Path) -> None:
    run(tmp_path, TEAM, job())
    result = invoke_cli(
        [
            "explain",
            "--node-templates",
            str(tmp_path / "templates.yaml"),
            str(tmp_path / "workload.yaml"),
        ]
    )
    assert "  Kueue: LocalQueue ml/team -> ClusterQueue team-cq, flavors a100\n" in result.stdout
    assert "    ResourceFlavor spot: cannot host it\n      - not a flavor of" in result.stdout
    assert "  LocalQueue ml/team (" in result.stdout


def test_the_json_lists_the_queues_as_read(tmp_path: Path) -> None:
    _, out = run(tmp_path, TEAM, job())
    assert out["kueueQueues"]["clusterQueues"][0]["flavors"] == ["a100"]
    assert out["kueueQueues"]["clusterQueues"][0]["namespaces"] == "every namespace"
    assert out["kueueQueues"]["localQueues"][0]["clusterQueue"] == "team-cq"
    assert out["pods"][0]["scaleUp"]["kueue"] == {
        "localQueue": "LocalQueue ml/team",
        "clusterQueue": "ClusterQueue team-cq",
        "flavors": ["a100"],
        "reason": None,
    }


def test_a_local_queue_without_a_namespace_is_in_the_namespace_option(tmp_path: Path) -> None:
    queue = local_queue("team", "team-cq")
    del queue["metadata"]["namespace"]
    templates = [*TWO, cluster_queue("team-cq", "a100", selector={}), queue]
    workload = job()
    del workload["metadata"]["namespace"]
    _, out = run(tmp_path, templates, workload, "-n", "ml")
    assert offered(out)[0] == ["a100"]
