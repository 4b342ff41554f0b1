"""The differential corpus: generated admission cases and how two answers to one are compared.

Independent of who answers: a :class:`Case` is the Namespace it runs in, the cluster objects
it needs (RuntimeClasses) and the request (a Pod CREATE, or a CREATE followed by an UPDATE of
what was stored), so the same corpus can be sent to in-tree plugins, to the webhooks, or to
native admission policies exported from the config. :func:`cases` yields them from a seed
(the same seed, the same corpus, on every machine); :func:`observe` reduces an API server's
answer to what is compared, and :func:`compare` names every field two observations differ
in.

The pools below are where upstream's quirks live (spec §12): DefaultTolerationSeconds'
loose coverage (empty key or effect, operator and value ignored, alpha keys not
recognised); AddOrUpdateTolerationInPodSpec's identity (operator matters, a wildcard does
not suppress, duplicates survive); MergeTolerations' superset elimination (seconds, empty
operator asymmetry, wildcards collapsing everything); extended resource names (limits only,
zero quantities, init containers and sidecars, ``kubernetes.io/`` anywhere, upper case in
the name part, byte-wise order); RuntimeClass overhead (equal in another spelling, empty
map, set without a RuntimeClass, a missing RuntimeClass) and scheduling (nodeSelector
conflicts, a nil pod selector adopting the class's); namespace annotations present but
empty, absent, or unreadable; the anti-affinity key compared exactly; and generateName.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from controlplane.harness.nodes import NOT_READY, UNREACHABLE

NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
IMAGE = "registry.k8s.io/pause:3.10"

#: The plugins a case can exercise, in chain order: the rows of the summary.
PLUGINS = (
    "daemonset-tolerations",
    "pod-node-selector",
    "default-toleration-seconds",
    "pod-toleration-restriction",
    "extended-resource-toleration",
    "runtime-class",
    "anti-affinity-topology",
)


def _t(key: str = "", op: str = "", value: str = "", effect: str = "", seconds: Any = None) -> Any:
    toleration: dict[str, Any] = {}
    for name, item in (("key", key), ("operator", op), ("value", value), ("effect", effect)):
        if item:
            toleration[name] = item
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


TOLERATIONS: tuple[dict[str, Any], ...] = (
    _t(NOT_READY, "Exists", effect="NoExecute", seconds=60),
    _t(NOT_READY, "Equal", "true", "NoExecute"),  # covers not-ready for §1a: value ignored
    _t(UNREACHABLE, "Exists"),  # empty effect covers NoExecute
    _t(UNREACHABLE, "Exists", effect="NoExecute", seconds=600),
    _t(UNREACHABLE, "Exists", effect="NoExecute", seconds=-5),  # negative: valid
    _t(op="Exists"),  # the wildcard
    _t(op="Exists", effect="NoSchedule"),  # a wildcard that does not cover NoExecute
    _t(op="Exists", effect="NoExecute", seconds=30),
    _t("node.alpha.kubernetes.io/notReady", "Exists", effect="NoExecute"),  # not recognised
    _t("foo", "Equal", "bar", "NoSchedule"),
    _t("foo", "Exists", effect="NoSchedule"),
    _t("foo", value="bar", effect="NoSchedule"),  # empty operator: Equal, asymmetric in §1c
    _t("foo", "Equal", "", "NoSchedule"),
    _t("foo", "Exists"),
    _t("team", "Equal", "a", "NoSchedule"),
    _t("team", "Exists", effect="PreferNoSchedule"),
    _t("example.com/gpu", "Exists", effect="NoSchedule"),  # what ERT adds
    _t("example.com/gpu", "Equal", "foo", "NoExecute"),
    _t("example.com/gpu", "Exists"),
    _t("node.kubernetes.io/memory-pressure", "Exists", effect="NoSchedule"),
    _t("sandbox", "Exists", effect="NoSchedule"),
)

#: Whitelists: each entry must be a §1c superset of every pod toleration.
WHITELISTS: tuple[list[dict[str, Any]], ...] = (
    [],
    [_t(op="Exists")],
    [_t("foo", "Exists"), _t("team", "Exists")],
    [
        _t("team", "Exists"),
        _t(NOT_READY, "Exists"),
        _t(UNREACHABLE, "Exists"),
        _t("node.kubernetes.io/memory-pressure", "Exists"),
        _t("example.com/gpu", "Exists"),
    ],
    [_t(NOT_READY, "Exists", effect="NoExecute", seconds=300), _t(UNREACHABLE, "Exists")],
)

DEFAULT_LISTS: tuple[list[dict[str, Any]], ...] = (
    [],
    [_t("team", "Equal", "a", "NoSchedule")],
    [_t(NOT_READY, "Exists", effect="NoExecute", seconds=30)],  # absorbed by the 300 s one
    [_t(NOT_READY, "Exists", effect="NoExecute")],  # no seconds: absorbs the 300 s one
    [_t(op="Exists")],
    [_t("foo", "Exists"), _t("foo", "Equal", "bar", "NoSchedule")],
    [_t("node.kubernetes.io/memory-pressure", "Exists", effect="NoSchedule")],
)

SELECTORS: tuple[str, ...] = ("", "env=prod", "env=prod,tier=web", "env=dev", "tier=web")
BAD_SELECTORS: tuple[str, ...] = ("env in (prod)", "env=prod,env=dev", "=prod")

#: Extended (and not extended) resource names, with what upstream makes of them (§3).
RESOURCES: tuple[str, ...] = (
    "example.com/gpu",
    "example.com/Zeta",  # upper case in the name part: extended
    "nvidia.com/gpu",
    "example.com/device-ek",
    "example.com/device-do",
    "foo.kubernetes.io/widget",  # "kubernetes.io/" anywhere: native, no toleration
    "hugepages-2Mi",
)

QUANTITIES = ("1", "0", "2")

OVERHEADS: tuple[dict[str, str] | None, ...] = (
    None,
    {"cpu": "250m", "memory": "64Mi"},
    {"cpu": "0.25", "memory": "64Mi"},  # equal in another spelling
    {"cpu": "1"},  # differs
    {},  # empty: counts as unset
)


def _runtime_class(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "runc",
        **fields,
    }


#: The RuntimeClasses every case may name (cluster objects: one set for the corpus).
RUNTIME_CLASSES: tuple[dict[str, Any], ...] = (
    _runtime_class("plain"),
    _runtime_class("overhead", overhead={"podFixed": {"cpu": "250m", "memory": "64Mi"}}),
    _runtime_class("selector", scheduling={"nodeSelector": {"sandbox": "kata", "env": "prod"}}),
    _runtime_class(
        "tolerating", scheduling={"tolerations": [_t("sandbox", "Exists", effect="NoSchedule")]}
    ),
    _runtime_class("wildcard", scheduling={"tolerations": [_t(op="Exists")]}),
    _runtime_class("forever", scheduling={"tolerations": [_t(NOT_READY, "Exists")]}),
    _runtime_class("empty-scheduling", scheduling={}),
    _runtime_class(
        "both",
        overhead={"podFixed": {"cpu": "250m", "memory": "64Mi"}},
        scheduling={
            "nodeSelector": {"sandbox": "gvisor"},
            "tolerations": [_t("foo", "Equal", "bar", "NoSchedule")],
        },
    ),
)
RUNTIME_CLASS_NAMES = (*(rc["metadata"]["name"] for rc in RUNTIME_CLASSES), "missing")

#: Topology keys: the one allowed, two wide ones, and one that differs only in case (the
#: comparison is exact; a capital in the name part is still a valid label key).
ANTI_AFFINITY_KEYS = (
    "kubernetes.io/hostname",
    "zone",
    "topology.kubernetes.io/zone",
    "kubernetes.io/Hostname",
)


@dataclass(frozen=True, slots=True)
class Request:
    """A Pod CREATE, or (``update`` set) a CREATE then an UPDATE of what was stored.

    ``update`` edits the stored pod: ``addTolerations`` (appended), ``labels`` (merged),
    ``image`` (of the first container); an UPDATE is built from the stored object because
    what was stored is itself an admission result.
    """

    operation: Literal["CREATE", "UPDATE"]
    pod: dict[str, Any]
    update: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Case:
    """One admission case: where it runs, what it needs, what is sent."""

    id: str
    namespace: dict[str, Any]
    cluster: tuple[dict[str, Any], ...]
    request: Request
    #: The plugins whose inputs the case exercises (the summary's rows).
    plugins: frozenset[str] = field(default_factory=frozenset)


def namespace_object(name: str, annotations: Mapping[str, str]) -> dict[str, Any]:
    """A Namespace as created (its annotations are the input of three plugins)."""
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def _namespaces(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Namespace profiles: each annotation absent most often, else present (maybe empty)."""
    out = []
    for index in range(count):
        annotations: dict[str, str] = {}
        roll = rng.random()
        if roll < 0.45:
            annotations[NODE_SELECTOR] = rng.choice(SELECTORS)
        elif roll < 0.5:
            annotations[NODE_SELECTOR] = rng.choice(BAD_SELECTORS)
        roll = rng.random()
        if roll < 0.4:
            annotations[DEFAULTS] = json.dumps(rng.choice(DEFAULT_LISTS))
        elif roll < 0.45:
            annotations[DEFAULTS] = ""
        roll = rng.random()
        if roll < 0.22:
            annotations[WHITELIST] = json.dumps(rng.choice(WHITELISTS))
        elif roll < 0.25:
            annotations[WHITELIST] = ""
        out.append(namespace_object(f"ns{index}", annotations))
    # Always one of each unreadable annotation, so upstream's parse errors are compared.
    out.append(namespace_object(f"ns{count}", {DEFAULTS: "[{not json"}))
    out.append(namespace_object(f"ns{count + 1}", {WHITELIST: '{"key": "x"}'}))
    return out


def _container(rng: random.Random, name: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": IMAGE}
    resources: dict[str, dict[str, str]] = {}
    roll = rng.random()
    if roll < 0.3:
        resources["requests"] = {"cpu": "100m"}  # Burstable
    elif roll < 0.4:
        resources["requests"] = {"cpu": "100m", "memory": "64Mi"}
        resources["limits"] = {"cpu": "100m", "memory": "64Mi"}  # Guaranteed
    if rng.random() < 0.35:
        extended = rng.choice(RESOURCES)
        quantity = rng.choice(QUANTITIES)
        if extended.startswith("hugepages"):
            quantity = "2Mi"
            resources.setdefault("requests", {}).setdefault("memory", "64Mi")
            resources.setdefault("limits", {}).update({"memory": "64Mi"})
            resources["limits"]["cpu"] = resources.get("requests", {}).get("cpu", "100m")
            resources["requests"]["cpu"] = resources["limits"]["cpu"]
            resources["requests"][extended] = quantity
            resources["limits"][extended] = quantity
        elif rng.random() < 0.5:
            # Only a limit: defaulting copies it into requests (Pods only, spec §0).
            resources.setdefault("limits", {})[extended] = quantity
        else:
            resources.setdefault("requests", {})[extended] = quantity
            resources.setdefault("limits", {})[extended] = quantity
    if resources:
        container["resources"] = resources
    return container


def _affinity(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.75:
        return None
    term = {"labelSelector": {"matchLabels": {"app": "x"}}}
    if roll < 0.85:
        keys = [rng.choice(ANTI_AFFINITY_KEYS) for _ in range(rng.randint(1, 3))]
        terms = [{**term, "topologyKey": key} for key in keys]
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    if roll < 0.92:
        preferred = [{"weight": 1, "podAffinityTerm": {**term, "topologyKey": "zone"}}]
        return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{**term, "topologyKey": "zone"}]
        }
    }


def _pod(rng: random.Random, index: int) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": {"app": "x"}}
    if rng.random() < 0.1:
        metadata["generateName"] = f"g{index}-"
    else:
        metadata["name"] = f"p{index}"
    spec: dict[str, Any] = {"containers": [_container(rng, "main")]}
    if rng.random() < 0.2:
        spec["containers"].append(_container(rng, "second"))
    if rng.random() < 0.15:
        init = _container(rng, "init")
        if rng.random() < 0.5:
            init["restartPolicy"] = "Always"  # a sidecar
        spec["initContainers"] = [init]
    if rng.random() < 0.6:
        spec["tolerations"] = [
            copy.deepcopy(rng.choice(TOLERATIONS)) for _ in range(rng.randint(1, 3))
        ]
    roll = rng.random()
    if roll < 0.15:
        spec["nodeSelector"] = {"env": rng.choice(("prod", "dev"))}
    elif roll < 0.2:
        spec["nodeSelector"] = {"sandbox": rng.choice(("kata", "gvisor"))}
    elif roll < 0.23:
        spec["nodeSelector"] = {}
    affinity = _affinity(rng)
    if affinity is not None:
        spec["affinity"] = affinity
    if rng.random() < 0.35:
        spec["runtimeClassName"] = rng.choice(RUNTIME_CLASS_NAMES)
    if rng.random() < 0.12:
        overhead = rng.choice(OVERHEADS)
        if overhead is not None:
            spec["overhead"] = dict(overhead)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _update(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.6:
        count = rng.randint(1, 2)
        return {"addTolerations": [copy.deepcopy(rng.choice(TOLERATIONS)) for _ in range(count)]}
    if roll < 0.8:
        return {"labels": {"tier": "changed"}}
    return {"image": "registry.k8s.io/pause:3.9"}


def exercised(namespace: Mapping[str, Any], request: Request) -> frozenset[str]:
    """The plugins whose inputs a case holds: where a difference in it may come from."""
    spec = request.pod["spec"]
    annotations = namespace["metadata"].get("annotations", {})
    found = {"default-toleration-seconds"}
    if NODE_SELECTOR in annotations or "nodeSelector" in spec:
        found.add("pod-node-selector")
    found.add("pod-toleration-restriction")  # memory-pressure for every non-BestEffort pod
    text = json.dumps(spec)
    if any(name in text for name in RESOURCES if "/" in name):
        found.add("extended-resource-toleration")
    if "runtimeClassName" in spec or "overhead" in spec:
        found.add("runtime-class")
    if "podAntiAffinity" in text:
        found.add("anti-affinity-topology")
    return frozenset(found)


def cases(seed: int, count: int, *, prefix: str = "") -> Iterator[Case]:
    """``count`` cases from ``seed``: reproducible, every quirk pool drawn from.

    About a quarter are UPDATEs (added tolerations, new labels, a new image). Namespaces are
    shared between cases (a profile is a Namespace, drawn per case), RuntimeClasses are one
    set for all. ``prefix`` keeps two corpora's object names apart on one server.
    """
    rng = random.Random(seed)
    namespaces = _namespaces(rng, max(8, count // 6))
    for index in range(count):
        namespace = copy.deepcopy(rng.choice(namespaces))
        namespace["metadata"]["name"] = prefix + namespace["metadata"]["name"]
        pod = _pod(rng, index)
        if rng.random() < 0.25:
            request = Request("UPDATE", pod, _update(rng))
        else:
            request = Request("CREATE", pod)
        yield Case(
            id=f"{prefix}{index}",
            namespace=namespace,
            cluster=RUNTIME_CLASSES,
            request=request,
            plugins=exercised(namespace, request),
        )


def updated(stored: Mapping[str, Any], edit: Mapping[str, Any]) -> dict[str, Any]:
    """The UPDATE of ``stored`` that ``edit`` describes (see :class:`Request`)."""
    pod = copy.deepcopy(dict(stored))
    spec = pod["spec"]
    if "addTolerations" in edit:
        spec["tolerations"] = [*spec.get("tolerations", []), *edit["addTolerations"]]
    if "labels" in edit:
        pod["metadata"].setdefault("labels", {}).update(edit["labels"])
    if "image" in edit:
        spec["containers"][0]["image"] = edit["image"]
    return pod


# --- what is compared ------------------------------------------------------------------

#: The fields of a stored pod that admission decides.
FIELDS = ("tolerations", "nodeSelector", "affinity", "overhead")
_WEBHOOK_PREFIX = re.compile(r'^admission webhook "[^"]+" denied the request: ')


@dataclass(frozen=True, slots=True)
class Observed:
    """What one API server answered for a case: allowed, or the refusal; the stored fields.

    ``stage`` says which request the answer is for (``create`` or ``update``); an UPDATE
    case whose CREATE was refused is observed at its create.
    """

    stage: str
    allowed: bool
    code: int
    message: str
    stored: Mapping[str, Any]


def denial_text(message: str, generate_name: str = "") -> str:
    """A refusal's message as compared: without the webhook's ``admission webhook "<name>"
    denied the request:`` frame (spec §0), a generated name as ``<generated>``."""
    text = _WEBHOOK_PREFIX.sub("", message)
    if generate_name:
        text = re.sub(re.escape(generate_name) + r"[a-z0-9]{5}", "<generated>", text)
    return text


def observe(stage: str, status: int, body: Any, generate_name: str = "") -> Observed:
    """An API server's answer (status and decoded body) reduced to what is compared."""
    if status in (200, 201) and isinstance(body, Mapping) and body.get("kind") == "Pod":
        spec = body.get("spec", {})
        return Observed(stage, True, status, "", {f: spec.get(f) for f in FIELDS})
    message = body.get("message", "") if isinstance(body, Mapping) else str(body)
    return Observed(stage, False, status, denial_text(message, generate_name), {})


def compare(reference: Observed, other: Observed) -> list[str]:
    """The names of what differs between two observations of one case (empty: the same).

    ``allowed``, the HTTP ``code`` and the denial ``message`` (exact, after
    :func:`denial_text`), then each stored field of :data:`FIELDS`, tolerations in order.
    """
    if reference.stage != other.stage:
        return ["stage"]
    differences = [
        name
        for name in ("allowed", "code", "message")
        if getattr(reference, name) != getattr(other, name)
    ]
    if reference.allowed and other.allowed:
        differences += [f for f in FIELDS if reference.stored.get(f) != other.stored.get(f)]
    return differences
