"""Strategies for realistic objects and AdmissionReviews, as the API server sends them.

Every value is drawn from a small vocabulary chosen to hit the cases the plugins branch on:
empty keys, operators and effects; Exists, Equal, Lt/Gt and misspelled operators; NoExecute
with and without (negative, zero, int64-edge) tolerationSeconds; the not-ready and
unreachable keys; extended resource names; duplicates; nodeSelector keys with ``/`` and
``~``; hard and soft (anti-)affinity; host networking; DaemonSet owners; RuntimeClasses
with overhead and scheduling. The objects are *valid-shaped*: every field has the type the
Kubernetes OpenAPI schema gives it, and no unknown field appears, so a plugin answering one
of them with an internal error is a bug.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests import dra
from tests.reviews import review
from webhooks.cluster.files import StaticCluster
from webhooks.core.config import Config, load_config
from webhooks.plugins import REGISTRY

# --- vocabularies ---------------------------------------------------------------------------

TOLERATION_KEYS = (
    "",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
    "nvidia.com/gpu",
    "example.com/dongle",
    "dedicated",
    "sandbox.example.com/runtime",
    "Bad Key!",
    "-leading.dash/x",
    "k" * 64,
)
OPERATORS = ("", "Exists", "Equal", "Lt", "Gt", "exists", "In")
VALUES = ("", "true", "gpu", "42", "-7", "0700", "bad value!", "v" * 64)
EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute", "noexecute")
SECONDS = (0, 1, 300, -1, -3600, 2**63 - 1, -(2**63))

#: Exactly what the mutators add, so inputs often already carry (or nearly carry) them.
CANNED_TOLERATIONS: tuple[dict[str, Any], ...] = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},
    {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
)

RESOURCE_NAMES = (
    "cpu",
    "memory",
    "ephemeral-storage",
    "hugepages-2Mi",
    "nvidia.com/gpu",
    "example.com/dongle",
    "example.com/a~b",
    "kubernetes.io/native-looking",
    "requests.example.com/foo",
    "Example.COM/UPPER",
)
QUANTITIES: tuple[str | int | float, ...] = ("1", "100m", "0", "2Gi", "0.5", "1e3", "250m", 1, 0.5)

SELECTOR_KEYS = (
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "sandbox.example.com/runtime",
    "a~b/c~d",
    "~/~",
    "dedicated",
    "",
)
SELECTOR_VALUES = ("amd64", "linux", "gvisor", "true", "", "gpu")
TOPOLOGY_KEYS = (
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "",
    "Kubernetes.io/hostname",
    " kubernetes.io/hostname",
)
RUNTIME_CLASS_NAMES = ("sandbox", "kata", "gvisor")
NAMESPACES = ("default", "team-a", "kube-system")
NAMES = ("web", "agent-x7k2p", "db-0", "ünïcode-名前", "")

#: Every kind a plugin handles.
KINDS = (
    "Pod",
    "Node",
    "PodTemplate",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
)
API_VERSIONS = {
    "Pod": "v1",
    "Node": "v1",
    "PodTemplate": "v1",
    "ReplicationController": "v1",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}

# --- pieces -----------------------------------------------------------------------------------

short_text = st.text(max_size=12)
label_maps = st.dictionaries(
    st.sampled_from(["app", "tier", "example.com/team", "a~b/c"]),
    st.sampled_from(["web", "db", "", "x"]) | short_text,
    max_size=3,
)

tolerations_one = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(TOLERATION_KEYS),
        "operator": st.sampled_from(OPERATORS),
        "value": st.sampled_from(VALUES),
        "effect": st.sampled_from(EFFECTS),
        "tolerationSeconds": st.sampled_from(SECONDS),
    },
) | st.sampled_from(CANNED_TOLERATIONS)


@st.composite
def toleration_lists(draw: st.DrawFn, max_size: int = 6) -> list[dict[str, Any]]:
    """A toleration list, sometimes with some entries repeated (duplicates are valid)."""
    items = draw(st.lists(tolerations_one, max_size=max_size))
    if items and draw(st.booleans()):
        items = items + items[: draw(st.integers(1, len(items)))]
    return items


resource_lists = st.dictionaries(
    st.sampled_from(RESOURCE_NAMES), st.sampled_from(QUANTITIES), max_size=3
)
resources = st.fixed_dictionaries(
    {}, optional={"requests": resource_lists, "limits": resource_lists}
)


def containers(prefix: str) -> st.SearchStrategy[dict[str, Any]]:
    """One container named from ``prefix``; sidecars are init containers that always restart."""
    return st.fixed_dictionaries(
        {"name": st.sampled_from([prefix, f"{prefix}-2"]), "image": st.just("busybox:1.36")},
        optional={"resources": resources, "restartPolicy": st.just("Always")}
        if prefix == "init"
        else {"resources": resources},
    )


selector_maps = st.dictionaries(
    st.sampled_from(SELECTOR_KEYS), st.sampled_from(SELECTOR_VALUES), max_size=3
)

node_selector_terms = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(SELECTOR_KEYS),
                    "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
                },
                optional={"values": st.lists(st.sampled_from(SELECTOR_VALUES), max_size=2)},
            ),
            max_size=2,
        )
    },
)

pod_affinity_terms = st.fixed_dictionaries(
    {"topologyKey": st.sampled_from(TOPOLOGY_KEYS)},
    optional={
        "labelSelector": st.fixed_dictionaries({"matchLabels": label_maps}),
        "namespaces": st.lists(st.sampled_from(NAMESPACES), max_size=2),
    },
)
weighted_pod_terms = st.fixed_dictionaries(
    {"weight": st.integers(1, 100), "podAffinityTerm": pod_affinity_terms}
)
pod_affinity = st.fixed_dictionaries(
    {},
    optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(pod_affinity_terms, max_size=3),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(weighted_pod_terms, max_size=2),
    },
)
affinities = st.fixed_dictionaries(
    {},
    optional={
        "nodeAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries(
                    {"nodeSelectorTerms": st.lists(node_selector_terms, max_size=2)}
                ),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries(
                        {"weight": st.integers(1, 100), "preference": node_selector_terms}
                    ),
                    max_size=2,
                ),
            },
        ),
        "podAffinity": pod_affinity,
        "podAntiAffinity": pod_affinity,
    },
)

overheads = st.dictionaries(
    st.sampled_from(["cpu", "memory"]),
    st.sampled_from(["250m", "0.25", "120Mi", "1", "0"]),
    max_size=2,
)

pod_specs = st.fixed_dictionaries(
    {"containers": st.lists(containers("app"), min_size=1, max_size=3)},
    optional={
        "initContainers": st.lists(containers("init"), max_size=2),
        "tolerations": toleration_lists(),
        "nodeSelector": selector_maps,
        "affinity": affinities,
        "hostNetwork": st.booleans(),
        "runtimeClassName": st.sampled_from([*RUNTIME_CLASS_NAMES, "missing", ""]),
        "overhead": overheads,
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never"]),
        "priority": st.integers(0, 1000),
    },
)

owner_references = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["apps/v1", "extensions/v1beta1", "v1", "apps/v2"]),
        "kind": st.sampled_from(["DaemonSet", "ReplicaSet", "Job", "Node"]),
        "name": st.sampled_from(["agent", "web-7d9f"]),
        "uid": st.just("6f1c2a5e-0000-4000-8000-000000000001"),
    },
    optional={"controller": st.booleans(), "blockOwnerDeletion": st.booleans()},
)

metadata = st.fixed_dictionaries(
    {"namespace": st.sampled_from(NAMESPACES)},
    optional={
        "name": st.sampled_from(NAMES),
        "generateName": st.sampled_from(["web-", "agent-"]),
        "labels": label_maps,
        "annotations": st.dictionaries(
            st.sampled_from(["example.com/a", "a~b/c~d", "note"]), short_text, max_size=2
        ),
        "ownerReferences": st.lists(owner_references, max_size=2),
    },
)


DAEMONSET_OWNER = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "name": "agent",
    "uid": "6f1c2a5e-0000-4000-8000-000000000002",
    "controller": True,
}


@st.composite
def crowded_pods(draw: st.DrawFn) -> dict[str, Any]:
    """A Pod where most plugins act at once: tolerations, a RuntimeClass, often a DaemonSet.

    Why: the mutators' interplay (a merge absorbing what an earlier plugin added, defaults
    making a user's entry redundant) only shows when several of them act on one pod.
    """
    spec = draw(pod_specs)
    spec["runtimeClassName"] = draw(st.sampled_from(RUNTIME_CLASS_NAMES))
    spec["tolerations"] = draw(toleration_lists(max_size=8))
    meta = draw(metadata)
    if draw(st.booleans()):
        meta["ownerReferences"] = [dict(DAEMONSET_OWNER)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pods() -> st.SearchStrategy[dict[str, Any]]:
    """A Pod, as the API server hands it to admission."""
    return (
        st.fixed_dictionaries(
            {
                "apiVersion": st.just("v1"),
                "kind": st.just("Pod"),
                "metadata": metadata,
                "spec": pod_specs,
            }
        )
        | crowded_pods()
    )


templates = st.fixed_dictionaries(
    {"spec": pod_specs}, optional={"metadata": st.fixed_dictionaries({"labels": label_maps})}
)
selectors = st.fixed_dictionaries({"matchLabels": label_maps})


def _workload_spec(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    if kind == "ReplicationController":
        return st.fixed_dictionaries(
            {"template": templates}, optional={"replicas": st.integers(0, 3)}
        )
    if kind == "Job":
        return st.fixed_dictionaries(
            {"template": templates}, optional={"backoffLimit": st.integers(0, 6)}
        )
    if kind == "CronJob":
        return st.fixed_dictionaries(
            {
                "schedule": st.just("*/5 * * * *"),
                "jobTemplate": st.fixed_dictionaries(
                    {"spec": st.fixed_dictionaries({"template": templates})}
                ),
            }
        )
    extra = {"serviceName": st.just("db")} if kind == "StatefulSet" else {}
    return st.fixed_dictionaries(
        {"selector": selectors, "template": templates, **extra},
        optional={"replicas": st.integers(0, 3)} if kind != "DaemonSet" else {},
    )


def workloads(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """A workload of ``kind`` whose pod template is drawn like a Pod's spec."""
    head = {
        "apiVersion": st.just(API_VERSIONS[kind]),
        "kind": st.just(kind),
        "metadata": metadata,
    }
    if kind == "PodTemplate":
        return st.fixed_dictionaries({**head, "template": templates})
    return st.fixed_dictionaries({**head, "spec": _workload_spec(kind)})


taints = st.fixed_dictionaries(
    {
        "key": st.sampled_from(TOLERATION_KEYS),
        "effect": st.sampled_from(EFFECTS),
    },
    optional={
        "value": st.sampled_from(VALUES),
        "timeAdded": st.just("2024-05-01T10:00:00Z"),
    },
)


def nodes() -> st.SearchStrategy[dict[str, Any]]:
    """A Node with taints drawn from the toleration vocabulary (duplicates included)."""
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("v1"),
            "kind": st.just("Node"),
            "metadata": st.fixed_dictionaries(
                {"name": st.sampled_from(["node-1", "gpu-node"])}, optional={"labels": label_maps}
            ),
            "spec": st.fixed_dictionaries(
                {},
                optional={"taints": st.lists(taints, max_size=5), "unschedulable": st.booleans()},
            ),
        }
    )


def objects(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """An object of ``kind``."""
    if kind == "Pod":
        return pods()
    if kind == "Node":
        return nodes()
    return workloads(kind)


any_object = st.sampled_from(KINDS).flatmap(objects)

# --- cluster objects ------------------------------------------------------------------------

runtime_class_bodies = st.fixed_dictionaries(
    {"handler": st.just("runsc")},
    optional={
        "overhead": st.fixed_dictionaries({}, optional={"podFixed": overheads}),
        "scheduling": st.fixed_dictionaries(
            {},
            optional={
                "nodeSelector": selector_maps,
                "tolerations": st.lists(tolerations_one, max_size=4),
            },
        ),
    },
)


@st.composite
def runtime_classes(draw: st.DrawFn) -> list[dict[str, Any]]:
    """RuntimeClasses for some of RUNTIME_CLASS_NAMES (a pod may name a missing one)."""
    names = draw(st.lists(st.sampled_from(RUNTIME_CLASS_NAMES), unique=True))
    return [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            **draw(runtime_class_bodies),
        }
        for name in names
    ]


NAMESPACE_ANNOTATIONS = {
    "scheduler.alpha.kubernetes.io/node-selector": st.sampled_from(
        ["dedicated=team-a", "kubernetes.io/arch=amd64,dedicated=gpu", "", "not a selector"]
    ),
    "scheduler.alpha.kubernetes.io/defaultTolerations": st.sampled_from(
        [
            '[{"key":"dedicated","operator":"Equal","value":"team-a","effect":"NoSchedule"}]',
            '[{"operator":"Exists"}]',
            "[]",
            "not json",
        ]
    ),
    "scheduler.alpha.kubernetes.io/tolerationsWhitelist": st.sampled_from(
        ['[{"key":"dedicated","operator":"Exists"}]', "[]", "{}"]
    ),
}


@st.composite
def namespaces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Namespaces with the placement annotations the dedicated-node policy reads."""
    out = []
    for name in draw(st.lists(st.sampled_from(NAMESPACES), unique=True)):
        annotations = draw(st.fixed_dictionaries({}, optional=NAMESPACE_ANNOTATIONS))
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "annotations": annotations},
            }
        )
    return out


@st.composite
def cluster_objects(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The RuntimeClasses and Namespaces of one cluster."""
    return [*draw(runtime_classes()), *draw(namespaces())]


class ShownCluster(StaticCluster):
    """A StaticCluster that prints its objects, so a failing example shows them."""

    def __repr__(self) -> str:
        return f"StaticCluster({[*self.runtime_classes.values(), *self.namespaces.values()]!r})"


def clusters() -> st.SearchStrategy[StaticCluster]:
    """A :class:`StaticCluster` over drawn RuntimeClasses and Namespaces."""
    return cluster_objects().map(ShownCluster)


#: A fixed cluster for tests that build one app: each RuntimeClass name means something.
SAMPLE_CLUSTER = ShownCluster(
    [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "sandbox"},
            "handler": "runsc",
            "scheduling": {
                "nodeSelector": {"sandbox.example.com/runtime": "gvisor"},
                "tolerations": [{"key": "sandbox.example.com/runtime", "operator": "Exists"}],
            },
        },
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "kata"},
            "handler": "kata",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
        },
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "gvisor"},
            "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "100m"}},
            "scheduling": {"tolerations": [{"operator": "Exists"}]},
        },
    ]
)


# --- reviews --------------------------------------------------------------------------------

SUB_RESOURCES = ("status", "binding", "eviction", "ephemeralcontainers")


@st.composite
def reviews(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """An AdmissionReview request for a drawn object, operation and (for UPDATE) old object.

    Pods come up more often than other kinds because most plugins only handle Pods.
    """
    pod_often = st.just("Pod") if "Pod" in kinds else st.nothing()
    kind = draw(st.sampled_from(kinds) | pod_often)
    obj = draw(objects(kind))
    operation = draw(st.sampled_from(["CREATE"] * 5 + ["UPDATE"] * 3 + ["DELETE", "CONNECT"]))
    old = None
    if operation == "UPDATE":
        old = draw(st.just(obj) | objects(kind))
    elif operation == "DELETE":
        obj, old = None, obj
    elif operation == "CONNECT":
        obj = None
    sub = draw(st.sampled_from(SUB_RESOURCES)) if draw(st.integers(0, 19)) == 0 else ""
    namespace = "" if kind == "Node" else None
    body = review(
        obj,
        operation=operation,
        kind=kind,
        old=old,
        sub_resource=sub,
        namespace=namespace,
        uid=draw(st.uuids()).hex if draw(st.booleans()) else draw(st.text(min_size=1, max_size=8)),
    )
    if draw(st.booleans()):
        body["request"]["dryRun"] = True
    return body


# --- configurations -------------------------------------------------------------------------

#: Settings worth varying, per plugin; plugins not listed run with their defaults.
PLUGIN_SETTINGS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "default-toleration-seconds": st.fixed_dictionaries(
        {},
        optional={
            "notReadySeconds": st.sampled_from(SECONDS),
            "unreachableSeconds": st.sampled_from(SECONDS),
        },
    ),
    "taint-toleration-rules": st.fixed_dictionaries(
        {}, optional={"comparisonOperators": st.booleans()}
    ),
    "anti-affinity-topology": st.fixed_dictionaries(
        {},
        optional={
            "allowedTopologyKeys": st.lists(
                st.sampled_from([k for k in TOPOLOGY_KEYS if k]), min_size=1, unique=True
            )
        },
    ),
}


#: What a plugin's answers may do, per its halves (docs/configuration.md).
ACTIONS = st.sampled_from(["enforce", "enforce", "warn", "audit"])
MUTATIONS = st.sampled_from(["apply", "apply", "monitor"])
OVERRIDES = st.lists(
    st.fixed_dictionaries(
        {
            "namespaceSelector": st.sampled_from(
                [
                    {},
                    {"matchLabels": {"env": "prod"}},
                    {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]},
                ]
            ),
            "action": ACTIONS,
        }
    ),
    max_size=2,
)
EXCEPTIONS = st.lists(
    st.fixed_dictionaries(
        {"plugins": st.lists(st.sampled_from(["*", *REGISTRY.names]), min_size=1, max_size=2)},
        optional={
            "namespaces": st.lists(st.sampled_from(NAMESPACES), max_size=2),
            "objectSelector": st.sampled_from([{}, {"matchLabels": {"app": "web"}}]),
            "expires": st.sampled_from(["2020-01-01T00:00:00Z", "2999-01-01T00:00:00Z"]),
        },
    ),
    max_size=2,
)


@st.composite
def policy(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A plugin's action, overrides and mutation mode, drawn where the plugin takes them."""
    plugin = REGISTRY.get(name)
    out: dict[str, Any] = {}
    if plugin.validate is not None and draw(st.booleans()):
        out["action"] = draw(ACTIONS)
        out["actionOverrides"] = draw(OVERRIDES)
    if plugin.mutate is not None and draw(st.booleans()):
        out["mutation"] = draw(MUTATIONS)
    return out


@st.composite
def configs(draw: st.DrawFn) -> Config:
    """A configuration with every registered plugin enabled, some settings and policy varied."""
    plugins = {
        name: {
            "enabled": True,
            **(draw(PLUGIN_SETTINGS[name]) if name in PLUGIN_SETTINGS else {}),
            **draw(policy(name)),
        }
        for name in REGISTRY.names
    }
    exceptions = [{"name": f"exception-{i}", **fields} for i, fields in enumerate(draw(EXCEPTIONS))]
    return load_config({"plugins": plugins, "exceptions": exceptions}, REGISTRY)


# --- big pods: many containers, resources, tolerations and claims ------------------------------

#: Extended resources a big pod may request (some served by the DRA cluster's classes).
BIG_RESOURCE_NAMES = (
    *RESOURCE_NAMES,
    "example.com/gpu",
    "example.com/fpga",
    "deviceclass.resource.kubernetes.io/gpu.example.com",
    "deviceclass.resource.kubernetes.io/missing.example.com",
)
#: Claims and templates a big pod may name: those of :func:`dra_cluster`, and missing ones.
CLAIM_REFERENCES = (
    ("resourceClaimTemplateName", "gpu-claim"),
    ("resourceClaimTemplateName", "either"),
    ("resourceClaimTemplateName", "ghost-class"),
    ("resourceClaimName", "shared-gpu"),
    ("resourceClaimName", "missing-claim"),
    ("resourceClaimTemplateName", "missing-template"),
)


@st.composite
def big_resource_lists(draw: st.DrawFn) -> dict[str, Any]:
    """Up to 12 resources: names from the vocabulary and made-up extended ones."""
    made_up = st.integers(0, 40).map(lambda i: f"example.com/r{i}")
    names = draw(st.lists(st.sampled_from(BIG_RESOURCE_NAMES) | made_up, max_size=12))
    return {name: draw(st.sampled_from(QUANTITIES)) for name in names}


def big_containers(prefix: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Up to 12 containers, each with up to 12 requests and limits."""
    container = st.builds(
        lambda i, requests, limits: {
            "name": f"{prefix}-{i}",
            "image": "busybox:1.36",
            "resources": {"requests": requests, "limits": limits},
        },
        st.integers(0, 1000),
        big_resource_lists(),
        big_resource_lists(),
    )
    return st.lists(container, max_size=12, unique_by=lambda c: c["name"])


@st.composite
def big_pods(draw: st.DrawFn) -> dict[str, Any]:
    """A Pod with many containers, init containers, resources, tolerations and claims.

    Why: the plugins' loops over those lists (merges, whitelists, tolerations added per
    extended resource, claims resolved) must keep every invariant at sizes the realistic
    strategies never reach, duplicates and repeats included.
    """
    spec = draw(pod_specs)
    spec["containers"] = draw(big_containers("app")) or [{"name": "app", "image": "busybox"}]
    spec["initContainers"] = draw(big_containers("init"))
    spec["tolerations"] = draw(toleration_lists(max_size=40))
    claims = draw(st.lists(st.sampled_from(CLAIM_REFERENCES), max_size=8))
    spec["resourceClaims"] = [
        {"name": f"c{i}", field: name} for i, (field, name) in enumerate(claims)
    ]
    meta = draw(metadata)
    if draw(st.booleans()):
        meta["ownerReferences"] = [dict(DAEMONSET_OWNER)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@st.composite
def big_reviews(draw: st.DrawFn) -> dict[str, Any]:
    """A CREATE or UPDATE review of a :func:`big_pods` pod."""
    obj = draw(big_pods())
    operation = draw(st.sampled_from(["CREATE", "UPDATE"]))
    old = draw(big_pods()) if operation == "UPDATE" else None
    return review(obj, operation=operation, kind="Pod", old=old, uid=draw(st.uuids()).hex)


def dra_cluster() -> list[dict[str, Any]]:
    """DeviceClasses, claims and templates for :data:`CLAIM_REFERENCES` (``ghost-class`` asks
    for a class that does not exist)."""
    return [
        dra.device_class(extended=dra.GPU),
        dra.device_class("fpga.example.com", extended="example.com/fpga"),
        dra.device_class("plain.example.com"),
        dra.claim_template("gpu-claim"),
        dra.claim_template(
            "either",
            dra.first_available("accel", ("big", dra.GPU_CLASS), ("small", "fpga.example.com")),
        ),
        dra.claim_template("ghost-class", dra.exactly("dev", "missing.example.com")),
        dra.resource_claim("shared-gpu", namespace=None),
    ]


def big_clusters() -> st.SearchStrategy[StaticCluster]:
    """:func:`clusters` with the DRA objects of :func:`dra_cluster` added."""
    return cluster_objects().map(lambda objects: ShownCluster([*objects, *dra_cluster()]))


#: ``enforce`` settings for the claim configs: the GPU of the DRA cluster guarded by its own
#: name, and also by a prefix and a device class (earned by either alternative of ``either``).
GUARDED_SETTINGS = (
    {"guarded": [{"taintKey": dra.GPU}]},
    {
        "guarded": [
            {"taintKey": dra.GPU, "earnedBy": {"resourcePrefixes": ["example.com/fp"]}},
            {"taintKey": "example.com/plain", "earnedBy": {"deviceClasses": ["plain.example.com"]}},
        ]
    },
)


@st.composite
def claim_configs(draw: st.DrawFn) -> Config:
    """Every plugin enabled, policy varied, and extended-resource-toleration resolving
    claims (``deviceClaims``, ``enforce``, or both)."""
    plugins = {name: {"enabled": True, **draw(policy(name))} for name in REGISTRY.names}
    plugins["extended-resource-toleration"].update(
        deviceClaims=draw(st.booleans()),
        enforce=draw(st.sampled_from([False, *GUARDED_SETTINGS])),
        deviceClassTaints=draw(st.sampled_from([{}, {"plain.example.com": "example.com/plain"}])),
    )
    return load_config({"plugins": plugins}, REGISTRY)
