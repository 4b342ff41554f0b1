"""DRA devices as ``explain`` sees them: what the ResourceSlices publish for each node, the
taints on them, and the claims a pod brings.

Why a module of its own: devices are a second inventory beside the nodes, read from the
same kinds of input (``--nodes`` files, PATH, ``--objects``, a cluster), and the fit
(:mod:`.allocation`) must see a node's devices as the scheduler's allocator does:

* **Slices** (``resource.k8s.io/v1`` ResourceSlice): a slice reaches a node by
  ``spec.nodeName``, ``spec.allNodes``, ``spec.nodeSelector`` (a v1 NodeSelector, terms
  ORed, ``matchFields`` on ``metadata.name``), or, with ``perDeviceNodeSelection``, device
  by device through the same three fields on each device. A slice with none of them is
  ignored, as upstream ignores a selection it does not know.
* **Pools**: the slices of one driver and pool name form a pool; only its newest
  ``pool.generation`` counts, and a pool is used only when all of its
  ``resourceSliceCount`` slices are there (an incomplete pool is being updated) and its
  device names are unique (otherwise it is invalid).
* **Taints**: a device's own ``taints`` plus those of every DeviceTaintRule that selects it
  (:mod:`webhooks.k8s.devicetaints`).
* **In use**: a device named in the allocation result of a ResourceClaim given as input
  is taken, except for the claims of the pod being placed.
* **Claims of a pod**: each ``spec.resourceClaims`` entry is resolved to its
  ResourceClaim (which may already be allocated, and then binds the pod to the nodes its
  ``allocation.nodeSelector`` selects) or to the ResourceClaimTemplate a claim will be made
  from; its requests name DeviceClasses, whose selectors join the request's own.
* **Extended resources backed by DRA** (KEP-5004): a request for an extended resource a
  DeviceClass serves (:func:`webhooks.k8s.claims.serving_class`) is met with devices of
  that class on a node whose allocatable does not list the resource; the number of devices
  is what the scheduler asks for: each long-lived container's request, plus the largest
  amount an ordinary init container needs beyond what the containers after it already
  get.

Not modelled (the command's help says the same): shared counters of partitionable devices,
consumable capacity and multiple allocations of one device, binding conditions, and
``distinctAttribute`` constraints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from webhooks.k8s.affinity import term_matches
from webhooks.k8s.claims import (
    API_VERSIONS,
    DEVICE_CLASS,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    ClaimRequest,
    MatchAttribute,
    claim_spec,
    constraints_of,
    implicit_class,
    name_of,
    pod_claims,
    requests_of,
    serving_class,
)
from webhooks.k8s.devicetaints import DeviceTaint, parse_taint, rule_taint, selects
from webhooks.k8s.names import is_extended_resource_name
from webhooks.k8s.quantity import QuantityError, quantity

RESOURCE_SLICE = "ResourceSlice"
DEVICE_TAINT_RULE = "DeviceTaintRule"
#: Every DRA kind ``explain`` reads.
DEVICE_KINDS = (
    RESOURCE_SLICE,
    DEVICE_TAINT_RULE,
    DEVICE_CLASS,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
)


#: DeviceTaintRule is also read at ``v1alpha3``, the only version 1.34 and 1.35 serve it
#: at; its selector's ``driver``/``pool``/``device`` mean what they mean in ``v1``.
RULE_ALPHA: Final = "resource.k8s.io/v1alpha3"


def is_device_object(obj: Any) -> bool:
    """Whether ``obj`` is a ``resource.k8s.io`` object ``explain`` reads."""
    if not isinstance(obj, Mapping) or obj.get("kind") not in DEVICE_KINDS:
        return False
    version = obj.get("apiVersion")
    return version in API_VERSIONS or (
        version == RULE_ALPHA and obj.get("kind") == DEVICE_TAINT_RULE
    )


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class Device:
    """One device a node can use: where it is published, what it is, and its taints."""

    driver: str
    pool: str
    name: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Any]
    taints: tuple[DeviceTaint, ...] = ()
    in_use: str = ""

    @property
    def id(self) -> tuple[str, str, str]:
        """(driver, pool, device): how allocation results name a device."""
        return (self.driver, self.pool, self.name)

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"


def _selector_matches(selector: Any, name: str, labels: Mapping[str, str]) -> bool:
    terms = _map(selector).get("nodeSelectorTerms")
    return isinstance(terms, list) and any(term_matches(t, labels, name) for t in terms)


def reaches(holder: Mapping[str, Any], name: str, labels: Mapping[str, str]) -> bool | None:
    """Whether a slice's (or a device's) node selection reaches node ``name``; ``None``
    when it sets none of ``nodeName``, ``allNodes`` and ``nodeSelector``."""
    node_name = _text(holder.get("nodeName"))
    if node_name:
        return node_name == name
    if holder.get("allNodes") is True:
        return True
    if holder.get("nodeSelector") is not None:
        return _selector_matches(holder.get("nodeSelector"), name, labels)
    return None


@dataclass(frozen=True, slots=True)
class ResolvedClaim:
    """One claim of a pod: what it asks for, or why it cannot be known.

    ``allocated`` is the allocation's node selector when the claim is already allocated
    (the pod must go where its devices are); ``devices`` the ids it holds, each with the
    request it was allocated for.
    """

    label: str
    requests: tuple[ClaimRequest, ...] = ()
    constraints: tuple[MatchAttribute, ...] = ()
    problem: str = ""
    allocated: Mapping[str, Any] | None = None
    devices: tuple[tuple[tuple[str, str, str], str], ...] = ()


@dataclass(frozen=True, slots=True)
class ExtendedDevices:
    """An extended resource the pod requests that a DeviceClass can serve, and how many
    devices it takes."""

    resource: str
    device_class: str
    count: int


@dataclass(slots=True)
class DeviceInventory:
    """The DRA objects given to ``explain``, indexed for placing pods."""

    classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    slices: list[dict[str, Any]] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    claims: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    templates: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add(self, obj: Mapping[str, Any]) -> bool:
        """Index ``obj`` if it is a DRA object; returns whether it was kept."""
        if not is_device_object(obj):
            return False
        kind = obj["kind"]
        item = dict(obj)
        if kind == RESOURCE_SLICE:
            self.slices.append(item)
        elif kind == DEVICE_TAINT_RULE:
            self.rules.append(item)
        elif kind == DEVICE_CLASS:
            self.classes[name_of(obj)] = item
        else:
            meta = _map(obj.get("metadata"))
            key = (_text(meta.get("namespace")), name_of(obj))
            (self.claims if kind == RESOURCE_CLAIM else self.templates)[key] = item
        return True

    def __bool__(self) -> bool:
        return bool(self.classes or self.slices or self.claims or self.templates)

    def selectors(self) -> list[str]:
        """Every CEL expression of the classes and claim requests; why: ``explain`` checks
        up front that it can evaluate them."""
        found = [
            _text(_map(s.get("cel") if isinstance(s, Mapping) else None).get("expression"))
            for c in self.classes.values()
            for s in (_map(c.get("spec")).get("selectors") or [])
        ]
        for obj in (*self.claims.values(), *self.templates.values()):
            for request in requests_of(claim_spec(obj)):
                for alternative in request.alternatives:
                    found.extend(alternative.selectors)
        return [e for e in found if e]

    def _lookup(
        self, table: Mapping[tuple[str, str], dict[str, Any]], namespace: str, name: str
    ) -> dict[str, Any] | None:
        found = table.get((namespace, name))
        return found if found is not None else table.get(("", name))

    # -- the pod's side -----------------------------------------------------------------------

    def resolve(self, spec: Mapping[str, Any], namespace: str) -> tuple[ResolvedClaim, ...]:
        """The pod's claims, resolved (see the module docstring)."""
        out = []
        for reference in pod_claims(spec):
            label = f"claim {reference.name} ({reference})"
            if reference.claim:
                obj = self._lookup(self.claims, namespace, reference.claim)
            else:
                obj = self._lookup(self.templates, namespace, reference.template)
            if obj is None:
                out.append(ResolvedClaim(label, problem=f"{reference} is not among the inputs"))
                continue
            allocation = _map(_map(obj.get("status")).get("allocation"))
            held = tuple(
                (
                    (_text(r.get("driver")), _text(r.get("pool")), _text(r.get("device"))),
                    _text(r.get("request")),
                )
                for r in _map(allocation.get("devices")).get("results") or []
                if isinstance(r, Mapping)
            )
            spec_of = claim_spec(obj)
            out.append(
                ResolvedClaim(
                    label,
                    requests_of(spec_of),
                    constraints_of(spec_of),
                    allocated=_map(allocation.get("nodeSelector")) if allocation else None,
                    devices=held,
                )
            )
        return tuple(out)

    def extended(self, spec: Mapping[str, Any], bridge: bool = True) -> tuple[ExtendedDevices, ...]:
        """The extended resources the pod requests that some DeviceClass serves.

        ``bridge`` is the cluster's DRAExtendedResource gate. Without it no class serves an
        extended resource: the API server drops ``extendedResourceName``, and the scheduler
        counts an implicit ``deviceclass.resource.kubernetes.io/<class>`` name as a plain
        extended resource that no node lists, so the pod fits nowhere.
        """
        if not bridge:
            return ()
        names = set()
        for container in _containers(spec):
            for name in _requests(container):
                if is_extended_resource_name(name) or implicit_class(name):
                    names.add(name)
        out = []
        for name in sorted(names):
            device_class = serving_class(self.classes.values(), name)
            if device_class is None:
                continue
            count = device_count(spec, name)
            if count > 0:
                out.append(ExtendedDevices(name, name_of(device_class), count))
        return tuple(out)

    # -- the node's side -----------------------------------------------------------------------

    def devices_for(self, name: str, labels: Mapping[str, str]) -> tuple[list[Device], list[str]]:
        """The devices node ``name`` can use, in slice order, each marked with the claim
        that holds it, and why some pools cannot be used (incomplete, invalid)."""
        pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for item in self.slices:
            spec = _map(item.get("spec"))
            pool_spec = _map(spec.get("pool"))
            key = (_text(spec.get("driver")), _text(pool_spec.get("name")))
            pools.setdefault(key, []).append(item)
        used = self.in_use()
        devices: list[Device] = []
        problems: list[str] = []
        for (driver, pool), members in pools.items():
            newest = max(_generation(s) for s in members)
            current = [s for s in members if _generation(s) == newest]
            reached = [s for s in current if _slice_reaches(s, name, labels)]
            if not reached:
                continue
            expected = _map(_map(current[0].get("spec")).get("pool")).get("resourceSliceCount")
            if isinstance(expected, int) and len(current) < expected:
                problems.append(
                    f"pool {driver}/{pool} is incomplete ({len(current)} of {expected} "
                    "ResourceSlices): its devices are not allocated until it is whole"
                )
                continue
            found = [d for s in reached for d in self._devices(s, name, labels, used)]
            names = [d.name for d in found]
            if len(set(names)) != len(names):
                problems.append(f"pool {driver}/{pool} is invalid: a device name repeats")
                continue
            devices.extend(found)
        return devices, problems

    def _devices(
        self,
        item: Mapping[str, Any],
        name: str,
        labels: Mapping[str, str],
        used: Mapping[tuple[str, str, str], str],
    ) -> Iterable[Device]:
        spec = _map(item.get("spec"))
        driver = _text(spec.get("driver"))
        pool = _text(_map(spec.get("pool")).get("name"))
        per_device = spec.get("perDeviceNodeSelection") is True
        for item_device in spec.get("devices") or []:
            raw = _map(item_device)
            if per_device and not reaches(raw, name, labels):
                continue
            device_name = _text(raw.get("name"))
            taints = [t for r in raw.get("taints") or [] if (t := parse_taint(r)) is not None]
            for rule in self.rules:
                taint = rule_taint(rule)
                if taint is not None and selects(rule, driver, pool, device_name):
                    taints.append(taint)
            key = (driver, pool, device_name)
            yield Device(
                driver,
                pool,
                device_name,
                _map(raw.get("attributes")),
                _map(raw.get("capacity")),
                tuple(taints),
                used.get(key, ""),
            )

    def in_use(self) -> dict[tuple[str, str, str], str]:
        """Devices the given ResourceClaims hold, by id, with the holding claim's name."""
        used: dict[tuple[str, str, str], str] = {}
        for (namespace, name), claim in self.claims.items():
            allocation = _map(_map(claim.get("status")).get("allocation"))
            for item in _map(allocation.get("devices")).get("results") or []:
                result = _map(item)
                key = (
                    _text(result.get("driver")),
                    _text(result.get("pool")),
                    _text(result.get("device")),
                )
                used[key] = f"{namespace}/{name}" if namespace else name
        return used


def _generation(item: Mapping[str, Any]) -> int:
    value = _map(_map(item.get("spec")).get("pool")).get("generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _slice_reaches(item: Mapping[str, Any], name: str, labels: Mapping[str, str]) -> bool:
    spec = _map(item.get("spec"))
    found = reaches(spec, name, labels)
    if found is not None:
        return found
    if spec.get("perDeviceNodeSelection") is True:
        return any(reaches(_map(d), name, labels) for d in spec.get("devices") or [])
    return False


def _containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if isinstance(container, Mapping):
                yield container


def _requests(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_map(container.get("resources")).get("requests"))


def _whole(value: Any) -> int:
    """A container's request as the scheduler's ``AsInt64``: 0 when not a whole number."""
    try:
        amount = quantity(value)
    except (QuantityError, ValueError):
        return 0
    return int(amount) if amount == amount.to_integral_value() and amount > 0 else 0


def device_count(spec: Mapping[str, Any], resource: str) -> int:
    """How many devices the scheduler asks for a pod's request of ``resource``.

    Each long-lived container (app containers, sidecar init containers) asks for its own;
    an ordinary init container first reuses what the long-lived containers after it ask
    for, and the largest remainder over those init containers is asked for once.
    """
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]
    apps = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    ordered = [(c, c.get("restartPolicy") == "Always") for c in inits] + [(c, True) for c in apps]
    wanted = [_whole(_requests(c).get(resource)) for c, _ in ordered]
    long_lived = [i for i, (_, lasting) in enumerate(ordered) if lasting]
    total = sum(wanted[i] for i in long_lived)
    extra = 0
    for i, (_, lasting) in enumerate(ordered):
        if lasting or not wanted[i]:
            continue
        reusable = sum(wanted[j] for j in long_lived if j > i)
        extra = max(extra, wanted[i] - reusable)
    return total + extra


def inventory_from(objects: Sequence[Mapping[str, Any]]) -> DeviceInventory:
    """A :class:`DeviceInventory` of the DRA objects among ``objects``."""
    found = DeviceInventory()
    for obj in objects:
        found.add(obj)
    return found
