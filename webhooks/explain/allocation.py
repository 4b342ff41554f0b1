"""Allocating a pod's claims on one node, as the scheduler's DRA allocator does, within a
budget.

Why a search and not a count: requests compete for the same devices, ``firstAvailable``
alternatives are tried in order, and ``matchAttribute`` constraints make the devices of
several requests agree; the allocator (``structured/internal/stable``) tries every
candidate in order and backtracks, taking the first complete solution. This does the same,
over the node's devices in slice order, for the pod's claims in order and their requests
in order. A device is a candidate for a request (or alternative) when:

* its DeviceClass exists, and the class's CEL selectors and then the request's match it
  (:mod:`webhooks.k8s.cel`; an expression that cannot be evaluated stops the allocation
  on this node with its error, as upstream's does);
* it is not in use by another claim nor taken by an earlier request of the pod;
* each of its NoSchedule and NoExecute taints is tolerated by the request
  (:mod:`webhooks.k8s.devicetaints`).

``All`` mode takes every candidate, and needs at least one. The search counts every
candidate it tries against :data:`STEPS`; past it the node is reported as undecided, never
guessed. So one pod on one node costs at most a fixed amount beyond reading the devices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhooks.explain.devices import Device, ResolvedClaim
from webhooks.k8s.affinity import term_matches
from webhooks.k8s.cel import CelError
from webhooks.k8s.cel import Device as CelDevice
from webhooks.k8s.cel import selector as compile_selector
from webhooks.k8s.claims import ALL, DeviceRequest, MatchAttribute
from webhooks.k8s.devicetaints import NO_EXECUTE, DeviceTaint, blocking_taint, eviction

#: Candidates the search may try for one pod on one node.
STEPS = 20_000


@dataclass(frozen=True, slots=True)
class Chosen:
    """A device allocated to a request, with the request's tolerations (for evictions)."""

    claim: str
    request: str
    device: Device
    tolerations: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Allocation:
    """The outcome on one node: the devices chosen, or why none could be."""

    chosen: tuple[Chosen, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether every claim got its devices."""
        return not self.reasons


@dataclass(frozen=True, slots=True)
class Claim:
    """What one claim asks of a node: its requests and constraints, named for messages."""

    label: str
    requests: tuple[tuple[str, tuple[DeviceRequest, ...]], ...]
    constraints: tuple[MatchAttribute, ...] = ()


def from_resolved(claim: ResolvedClaim) -> Claim:
    """A :class:`Claim` from a resolved pod claim."""
    return Claim(
        claim.label,
        tuple((r.name, r.alternatives) for r in claim.requests),
        claim.constraints,
    )


class _Stop(Exception):
    """The search cannot go on: a CEL error, or the budget spent; the message says which."""


@dataclass(slots=True)
class _Search:
    devices: Sequence[Device]
    classes: Mapping[str, Mapping[str, Any]]
    honour_no_execute: bool
    steps: int = STEPS
    taken: set[tuple[str, str, str]] = field(default_factory=set)
    memo: dict[tuple[int, int], bool] = field(default_factory=dict)
    values: dict[tuple[str, str], Any] = field(default_factory=dict)

    def _selectors(self, request: DeviceRequest) -> list[tuple[str, str]]:
        device_class = self.classes.get(request.device_class) or {}
        spec = device_class.get("spec")
        raw = spec.get("selectors") if isinstance(spec, Mapping) else None
        found = []
        for i, item in enumerate(raw if isinstance(raw, list) else []):
            cel = item.get("cel") if isinstance(item, Mapping) else None
            expression = cel.get("expression") if isinstance(cel, Mapping) else None
            found.append((f"class {request.device_class}: selector #{i}", str(expression or "")))
        found.extend(
            (f"request {request.name}: selector #{i}", e) for i, e in enumerate(request.selectors)
        )
        return found

    def matches(self, request: DeviceRequest, device: Device) -> bool:
        """Class and request selectors, memoised per (request, device)."""
        key = (id(request), id(device))
        if key in self.memo:
            return self.memo[key]
        found = True
        view = CelDevice(device.driver, device.attributes, device.capacity)
        for where, expression in self._selectors(request):
            try:
                if not compile_selector(expression).matches(view):
                    found = False
                    break
            except CelError as exc:
                raise _Stop(f"{where} on device {device}: {exc}") from None
        self.memo[key] = found
        return found

    def blocked_by(self, request: DeviceRequest, device: Device) -> DeviceTaint | None:
        taints = device.taints
        if not self.honour_no_execute:
            taints = tuple(t for t in taints if t.effect != NO_EXECUTE)
        return blocking_taint(taints, request.tolerations)

    def usable(self, request: DeviceRequest, device: Device) -> bool:
        return (
            not device.in_use
            and device.id not in self.taken
            and self.matches(request, device)
            and self.blocked_by(request, device) is None
        )

    def spend(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise _Stop(f"not decided within {STEPS} allocation steps")


def _attribute(device: Device, name: str) -> Any:
    domain, _, ident = name.partition("/")
    raw = device.attributes.get(name)
    if raw is None and domain == device.driver:
        raw = device.attributes.get(ident)
    if not isinstance(raw, Mapping):
        return None
    for kind in ("int", "bool", "string", "version"):
        if kind in raw:
            return (kind, raw[kind])
    return None


def _constrained(
    claim: Claim, request: str, device: Device, held: Mapping[tuple[str, str], Any]
) -> list[tuple[str, Any]] | None:
    """The constraint values ``device`` sets for ``request``, or ``None`` when it breaks one
    (an attribute it lacks, or a value other than the one already chosen)."""
    base = request.split("/", 1)[0]
    out = []
    for constraint in claim.constraints:
        listed = constraint.requests
        if listed and base not in listed and request not in listed:
            continue
        value = _attribute(device, constraint.attribute)
        if value is None:
            return None
        earlier = held.get((claim.label, constraint.attribute))
        if earlier is not None and earlier != value:
            return None
        out.append((constraint.attribute, value))
    return out


Step = tuple[Claim, str, tuple[DeviceRequest, ...]]


def allocate(
    claims: Sequence[Claim],
    devices: Sequence[Device],
    classes: Mapping[str, Mapping[str, Any]],
    *,
    honour_no_execute: bool = True,
) -> Allocation:
    """Allocate ``claims`` from ``devices`` (see the module docstring); with
    ``honour_no_execute`` false, NoExecute taints do not keep a device from a request
    (what a pod allocated before the taint was added still holds)."""
    missing = [
        f"{claim.label}: request {name}: DeviceClass {alt.device_class} is not among the inputs"
        for claim in claims
        for name, alternatives in claim.requests
        for alt in alternatives
        if alt.device_class not in classes
    ]
    unreadable = [
        f"{claim.label}: request {name} names no device class"
        for claim in claims
        for name, alternatives in claim.requests
        if not alternatives
    ]
    if missing or unreadable:
        return Allocation(reasons=tuple(dict.fromkeys([*unreadable, *missing])))
    search = _Search(devices, classes, honour_no_execute)
    steps: list[Step] = [(c, name, alts) for c in claims for name, alts in c.requests]
    chosen: list[Chosen] = []
    try:
        done = _solve(search, steps, 0, chosen, {})
    except _Stop as exc:
        return Allocation(reasons=(str(exc),))
    if done:
        return Allocation(tuple(chosen))
    return Allocation(reasons=tuple(_why(search, steps)))


def _solve(
    search: _Search,
    steps: Sequence[Step],
    index: int,
    chosen: list[Chosen],
    held: dict[tuple[str, str], Any],
) -> bool:
    if index == len(steps):
        return True
    claim, _, alternatives = steps[index]
    for alternative in alternatives:
        if alternative.mode == ALL:
            picked = [d for d in search.devices if search.matches(alternative, d)]
            if not picked or not all(search.usable(alternative, d) for d in picked):
                continue
            if _take(search, steps, index, chosen, held, claim, alternative, picked):
                return True
            continue
        if _pick(search, steps, index, chosen, held, claim, alternative, alternative.count):
            return True
    return False


def _take(
    search: _Search,
    steps: Sequence[Step],
    index: int,
    chosen: list[Chosen],
    held: dict[tuple[str, str], Any],
    claim: Claim,
    request: DeviceRequest,
    devices: Sequence[Device],
) -> bool:
    """Take all of ``devices`` for ``request`` (``All`` mode) and go on."""
    saved = dict(held)
    for device in devices:
        search.spend()
        values = _constrained(claim, request.name, device, held)
        if values is None:
            held.clear()
            held.update(saved)
            return False
        held.update({(claim.label, a): v for a, v in values})
    start = len(chosen)
    for device in devices:
        search.taken.add(device.id)
        chosen.append(Chosen(claim.label, request.name, device, request.tolerations))
    if _solve(search, steps, index + 1, chosen, held):
        return True
    for device in devices:
        search.taken.discard(device.id)
    del chosen[start:]
    held.clear()
    held.update(saved)
    return False


def _pick(
    search: _Search,
    steps: Sequence[Step],
    index: int,
    chosen: list[Chosen],
    held: dict[tuple[str, str], Any],
    claim: Claim,
    request: DeviceRequest,
    left: int,
) -> bool:
    """Pick ``left`` more devices for ``request``, then go on with the next request."""
    if left == 0:
        return _solve(search, steps, index + 1, chosen, held)
    for device in search.devices:
        search.spend()
        if not search.usable(request, device):
            continue
        values = _constrained(claim, request.name, device, held)
        if values is None:
            continue
        added = [(claim.label, a) for a, _ in values if (claim.label, a) not in held]
        held.update({(claim.label, a): v for a, v in values})
        search.taken.add(device.id)
        chosen.append(Chosen(claim.label, request.name, device, request.tolerations))
        if _pick(search, steps, index, chosen, held, claim, request, left - 1):
            return True
        chosen.pop()
        search.taken.discard(device.id)
        for key in added:
            held.pop(key, None)
    return False


def _why(search: _Search, steps: Sequence[Step]) -> list[str]:
    """Why the requests cannot be met: per request, what the node's devices lack."""
    search.taken.clear()
    reasons = []
    for claim, name, alternatives in steps:
        parts = [_shortfall(search, alt) for alt in alternatives]
        if all(p is None for p in parts):
            continue
        shown = "; or ".join(p for p in parts if p is not None)
        reasons.append(f"{claim.label}: request {name}: {shown}")
    if not reasons:
        reasons.append(
            "the requests compete for the same devices, or a matchAttribute constraint cannot "
            "be met: no assignment gives every request its devices"
        )
    return reasons


def _shortfall(search: _Search, request: DeviceRequest) -> str | None:
    """What stops ``request`` on its own, or ``None`` when it could be met alone."""
    matching = [d for d in search.devices if search.matches(request, d)]
    amount = "all devices" if request.mode == ALL else _devices(request.count)
    what = f"needs {amount} of class {request.device_class}"
    if not matching:
        return f"{what}: no device on the node matches (no ResourceSlice reaching it has one)"
    free = [d for d in matching if search.usable(request, d)]
    need = 1 if request.mode == ALL else request.count
    if request.mode == ALL and len(free) == len(matching):
        return None
    if request.mode != ALL and len(free) >= need:
        return None
    lost = [_unusable(search, request, d) for d in matching if d not in free]
    return f"{what}: {len(matching)} match on the node, {len(free)} usable ({'; '.join(lost)})"


def _unusable(search: _Search, request: DeviceRequest, device: Device) -> str:
    if device.in_use:
        return f"{device.name} is in use by claim {device.in_use}"
    taint = search.blocked_by(request, device)
    if taint is not None:
        source = "" if taint.source == "ResourceSlice" else f", from {taint.source}"
        return f"{device.name} has taint {taint}{source}, not tolerated by the request"
    return f"{device.name} is taken"


def _devices(count: int) -> str:
    return "1 device" if count == 1 else f"{count} devices"


# --- a pod on a node ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceEvictionNote:
    """A NoExecute device taint on a device the pod uses (or would use) on a node, and
    what the device taint eviction controller does to the pod there."""

    device: str
    taint: DeviceTaint
    outcome: str
    seconds: int | None
    why: str

    def __str__(self) -> str:
        if self.outcome == "at-once":
            when = "is evicted at once"
        elif self.outcome == "after":
            when = f"is evicted {self.seconds}s after the taint is added"
        else:
            when = "keeps running"
        return f"device {self.device} has {self.taint}: a running pod {when} ({self.why})"


@dataclass(frozen=True, slots=True)
class DeviceFit:
    """What a node's devices make of a pod: the unmet requirements, the devices chosen,
    and the evictions NoExecute device taints cause."""

    unmet: tuple[str, ...] = ()
    chosen: tuple[Chosen, ...] = ()
    evictions: tuple[DeviceEvictionNote, ...] = ()


NO_DEVICES = DeviceFit()


def _evictions(chosen: Sequence[Chosen]) -> tuple[DeviceEvictionNote, ...]:
    notes = []
    for item in chosen:
        for taint in item.device.taints:
            if taint.effect != NO_EXECUTE:
                continue
            found = eviction(taint, item.tolerations)
            if found.outcome == "never":
                continue
            why = (
                f"the request tolerates it for {found.seconds}s"
                if found.outcome == "after"
                else "the request does not tolerate it with effect NoExecute"
            )
            notes.append(
                DeviceEvictionNote(str(item.device), taint, found.outcome, found.seconds, why)
            )
    return tuple(notes)


def _held(claim: ResolvedClaim, devices: Sequence[Device]) -> list[Chosen]:
    """The devices an allocated claim holds, each with its request's tolerations."""
    tolerations = {
        alternative.name: alternative.tolerations
        for request in claim.requests
        for alternative in request.alternatives
    }
    by_id = {d.id: d for d in devices}
    return [
        Chosen(claim.label, request, by_id[device_id], tolerations.get(request, ()))
        for device_id, request in claim.devices
        if device_id in by_id
    ]


def device_fit(
    claims: Sequence[ResolvedClaim],
    extended: Sequence[tuple[str, str, int]],
    devices: Sequence[Device],
    classes: Mapping[str, Mapping[str, Any]],
    node: str,
    labels: Mapping[str, str],
    problems: Sequence[str] = (),
) -> DeviceFit:
    """The devices of node ``node`` against a pod's ``claims`` and the DRA-backed
    ``extended`` resources (resource, class, count) it needs there.

    An allocated claim binds the pod to the nodes its allocation selects, and a NoExecute
    taint on a device it holds is an eviction; the others are allocated together (one
    search: they compete for the same devices). When that fails only because of NoExecute
    taints, a pod that got those devices before the taints came is evicted from them,
    which is reported too.
    """
    unmet: list[str] = []
    wanted: list[Claim] = []
    notes: list[DeviceEvictionNote] = []
    for claim in claims:
        if claim.problem:
            unmet.append(f"{claim.label}: {claim.problem}")
        elif claim.allocated is not None:
            if claim.allocated and not _allocated_here(claim.allocated, node, labels):
                unmet.append(f"{claim.label}: it is allocated to devices this node cannot use")
            else:
                notes.extend(_evictions(_held(claim, devices)))
        else:
            wanted.append(from_resolved(claim))
    if extended:
        requests = tuple(
            (resource, (DeviceRequest(resource, device_class, count=count),))
            for resource, device_class, count in extended
        )
        wanted.append(Claim("extended resources backed by DRA", requests))
    if not wanted:
        return DeviceFit(tuple(unmet), (), tuple(notes))
    found = allocate(wanted, devices, classes)
    if found.ok:
        return DeviceFit(tuple(unmet), found.chosen, (*notes, *_evictions(found.chosen)))
    unmet.extend(found.reasons)
    unmet.extend(problems)
    running = allocate(wanted, devices, classes, honour_no_execute=False)
    if running.ok:
        notes.extend(_evictions(running.chosen))
    return DeviceFit(tuple(unmet), (), tuple(notes))


def _allocated_here(selector: Mapping[str, Any], node: str, labels: Mapping[str, str]) -> bool:
    terms = selector.get("nodeSelectorTerms")
    return isinstance(terms, list) and any(term_matches(t, labels, node) for t in terms)
