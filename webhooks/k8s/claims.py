"""Dynamic Resource Allocation (``resource.k8s.io``) as placement reads it: which device
classes a pod's claims ask for, and which extended resource a device class stands for.

Why pure helpers apart from the lookups: the admission plugin, ``check`` and ``explain``
must read a claim the same way whether its objects came from the server's cache, from
manifests or from ``--objects``, and none of that is this module's concern.

The API (``k8s.io/api/resource/v1``, stable; ``v1beta2`` has the same shape, ``v1beta1``
puts an exact request's fields on the request itself):

* a pod names claims in ``spec.resourceClaims[]``, each with ``resourceClaimName`` (a
  ResourceClaim in the pod's namespace) or ``resourceClaimTemplateName`` (a
  ResourceClaimTemplate the resourceclaim controller makes a claim from, after the pod
  exists); the devices are allocated for the pod whether or not a container lists the
  claim in ``resources.claims``;
* a claim's ``spec.devices.requests[]`` is either ``exactly`` one request or
  ``firstAvailable`` alternatives tried in order, each naming a ``deviceClassName``, with
  CEL ``selectors``, an ``allocationMode`` (``ExactCount``, default, with ``count``
  defaulting to 1, or ``All``) and device ``tolerations``; ``constraints[].matchAttribute``
  makes the devices of the listed requests agree on one attribute;
* KEP-5004 (stable in v1.37): a DeviceClass's ``spec.extendedResourceName`` lets a pod's
  request for that extended resource be served by the class's devices, and every class
  ``C`` also serves the implicit name ``deviceclass.resource.kubernetes.io/C``. When
  several classes declare one name, the scheduler picks the most recently created, and on
  equal creation times the lowest name (``extendedresourcecache``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

RESOURCE_GROUP: Final = "resource.k8s.io"
#: The resource.k8s.io versions read: v1 (stable) and the betas with the same objects.
API_VERSIONS: Final = (
    f"{RESOURCE_GROUP}/v1",
    f"{RESOURCE_GROUP}/v1beta2",
    f"{RESOURCE_GROUP}/v1beta1",
)
#: The implicit extended resource name of every DeviceClass is this prefix plus its name.
DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
EXACT_COUNT: Final = "ExactCount"
ALL: Final = "All"

DEVICE_CLASS: Final = "DeviceClass"
RESOURCE_CLAIM: Final = "ResourceClaim"
RESOURCE_CLAIM_TEMPLATE: Final = "ResourceClaimTemplate"
#: The DRA kinds admission consults (explain also reads ResourceSlices and rules).
CLAIM_KINDS: Final = (DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE)


#: What an unresolved object is, in every message about it.
NOT_FOUND: Final = "not found"
_UNRESOLVED = re.compile(
    rf"((?:{DEVICE_CLASS}|{RESOURCE_CLAIM}|{RESOURCE_CLAIM_TEMPLATE}) \S+"
    rf"(?: in namespace \S*)?) (?:{NOT_FOUND}|cannot be looked up \(.*?\))(?=: |$)"
)


def unresolved(subject: str, why: str = "") -> str:
    """``<subject> not found``, or ``<subject> <why>`` when the lookup failed: the one-line
    problem for a DRA object (``DeviceClass gpu.example.com``, ``ResourceClaimTemplate t
    in namespace ns``) that a pod's claims need and that could not be found.

    Why one spelling, with :func:`unresolved_subject` beside it: the object is an input of
    the whole run, not of one pod, so offline runs report it once with a count, and they
    recognise it by this spelling.
    """
    return f"{subject} {why or NOT_FOUND}"


def unresolved_subject(message: str) -> str | None:
    """The object a message made with :func:`unresolved` is about (its start), or ``None``."""
    found = _UNRESOLVED.match(message)
    return found.group(1) if found else None


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims``: a claim by name, or a template."""

    name: str
    claim: str = ""
    template: str = ""

    def __str__(self) -> str:
        if self.claim:
            return f"ResourceClaim {self.claim}"
        return f"ResourceClaimTemplate {self.template}"


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """What one request (or one ``firstAvailable`` alternative) asks of a device.

    ``name`` is the request's, or ``request/alternative`` for an alternative, as the
    allocation result names it.
    """

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    mode: str = EXACT_COUNT
    count: int = 1
    tolerations: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One request of a claim: its alternatives, tried in order (one for ``exactly``)."""

    name: str
    alternatives: tuple[DeviceRequest, ...]


@dataclass(frozen=True, slots=True)
class MatchAttribute:
    """A ``constraints[]`` entry: the devices of ``requests`` (all when empty) must have the
    same value of ``attribute``."""

    requests: tuple[str, ...]
    attribute: str


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` or ``""``; why: objects from files may lack it."""
    return _text(_map(obj.get("metadata")).get("name"))


def pod_claims(spec: Mapping[str, Any]) -> list[PodClaim]:
    """The pod's ``spec.resourceClaims`` that name a claim or a template, in order.

    Why entries naming neither are skipped: upstream's ``resourceclaim.Name`` treats them
    as an API it does not know, and so does validation; there is nothing to resolve.
    """
    out = []
    for item in _list(spec.get("resourceClaims")):
        entry = _map(item)
        claim = _text(entry.get("resourceClaimName"))
        template = _text(entry.get("resourceClaimTemplateName"))
        if claim or template:
            out.append(PodClaim(_text(entry.get("name")), claim, "" if claim else template))
    return out


def claim_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ResourceClaimSpec of a ResourceClaim (``spec``) or a template (``spec.spec``).

    Why one reader: a pod's claim comes from either, and both hold the same spec.
    """
    spec = _map(obj.get("spec"))
    return _map(spec.get("spec")) if obj.get("kind") == RESOURCE_CLAIM_TEMPLATE else spec


def _count(raw: Mapping[str, Any]) -> tuple[str, int]:
    mode = _text(raw.get("allocationMode")) or EXACT_COUNT
    count = raw.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        count = 1  # API defaulting: ExactCount with no count asks for one device
    return mode, count


def _selectors(raw: Mapping[str, Any]) -> tuple[str, ...]:
    found = []
    for selector in _list(raw.get("selectors")):
        expression = _map(_map(selector).get("cel")).get("expression")
        found.append(expression if isinstance(expression, str) else "")
    return tuple(found)


def _device_request(name: str, raw: Mapping[str, Any]) -> DeviceRequest:
    mode, count = _count(raw)
    return DeviceRequest(
        name=name,
        device_class=_text(raw.get("deviceClassName")),
        selectors=_selectors(raw),
        mode=mode,
        count=count,
        tolerations=tuple(t for t in _list(raw.get("tolerations")) if isinstance(t, Mapping)),
    )


def requests_of(spec: Mapping[str, Any]) -> tuple[ClaimRequest, ...]:
    """A ResourceClaimSpec's device requests, each with its alternatives in order.

    Reads ``exactly`` and ``firstAvailable`` (v1, v1beta2) and a request's own fields
    (v1beta1). Why tolerant of malformed entries: objects from files may be anything; an
    unreadable request has no alternatives, which the callers report.
    """
    out = []
    for item in _list(_map(spec.get("devices")).get("requests")):
        raw = _map(item)
        name = _text(raw.get("name"))
        first = _list(raw.get("firstAvailable"))
        if first:
            alternatives = tuple(
                _device_request(f"{name}/{_text(_map(sub).get('name'))}", _map(sub))
                for sub in first
            )
        elif isinstance(raw.get("exactly"), Mapping):
            alternatives = (_device_request(name, raw["exactly"]),)
        elif "deviceClassName" in raw:
            alternatives = (_device_request(name, raw),)
        else:
            alternatives = ()
        out.append(ClaimRequest(name, alternatives))
    return tuple(out)


def constraints_of(spec: Mapping[str, Any]) -> tuple[MatchAttribute, ...]:
    """The claim's ``matchAttribute`` constraints (other kinds are not read)."""
    out = []
    for item in _list(_map(spec.get("devices")).get("constraints")):
        raw = _map(item)
        attribute = _text(raw.get("matchAttribute"))
        if attribute:
            requests = tuple(r for r in _list(raw.get("requests")) if isinstance(r, str))
            out.append(MatchAttribute(requests, attribute))
    return tuple(out)


def class_names(spec: Mapping[str, Any]) -> list[str]:
    """Every device class a claim spec may use, alternatives included, without repeats.

    Why every alternative: which one the scheduler picks depends on the node, so a pod may
    end up on the nodes of any of them.
    """
    names = [
        alternative.device_class
        for request in requests_of(spec)
        for alternative in request.alternatives
        if alternative.device_class
    ]
    return list(dict.fromkeys(names))


def extended_resource_name(device_class: Mapping[str, Any]) -> str:
    """The DeviceClass's ``spec.extendedResourceName``, or ``""`` when it declares none."""
    return _text(_map(device_class.get("spec")).get("extendedResourceName"))


def implicit_class(resource: str) -> str:
    """The class an implicit ``deviceclass.resource.kubernetes.io/<class>`` name stands for,
    or ``""`` when ``resource`` is not such a name."""
    return (
        resource.removeprefix(DEVICE_CLASS_PREFIX)
        if resource.startswith(DEVICE_CLASS_PREFIX)
        else ""
    )


def created(obj: Mapping[str, Any]) -> dt.datetime:
    """``metadata.creationTimestamp`` as an aware time; the earliest possible when absent.

    Why the earliest: an object without one (a manifest not yet applied) is the oldest to
    the scheduler's comparison, whose zero time sorts before every real one.
    """
    raw = _map(obj.get("metadata")).get("creationTimestamp")
    if isinstance(raw, str):
        try:
            stamp = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            stamp = None
        if stamp is not None:
            return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)
    return dt.datetime.min.replace(tzinfo=dt.UTC)


def serving_class(classes: Iterable[Mapping[str, Any]], resource: str) -> Mapping[str, Any] | None:
    """The DeviceClass that serves extended resource ``resource``, or ``None``.

    The implicit name picks its class by name; an explicit ``extendedResourceName`` shared
    by several classes goes to the most recently created, then the lowest name, as the
    scheduler's cache decides. Why in one function: admission and ``explain`` must agree
    on which class's devices a pod gets.
    """
    implicit = implicit_class(resource)
    best: Mapping[str, Any] | None = None
    for device_class in classes:
        name = name_of(device_class)
        if implicit:
            if name == implicit:
                return device_class
            continue
        if not name or extended_resource_name(device_class) != resource:
            continue
        if best is None:
            best = device_class
            continue
        newer, older = created(device_class), created(best)
        if newer > older or (newer == older and name < name_of(best)):
            best = device_class
    return best
