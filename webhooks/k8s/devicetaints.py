"""Device taints (KEP-5055, stable in v1.37): on a device in its ResourceSlice, or added to
the devices a DeviceTaintRule selects; tolerated by a claim's requests, never by a pod.

Why apart from node taints (:mod:`webhooks.k8s.tolerations`): the rules differ in ways that
decide where a pod runs. Effects are ``NoSchedule``, ``NoExecute`` and ``None`` (purely
informational; an unknown effect counts as ``None``); there is no PreferNoSchedule and no
``Gt``/``Lt``. Following upstream (``resourceclaim.ToleratesTaint``, the allocator's
``taintPreventsAllocation``, the device taint eviction controller):

* a device with a NoSchedule or NoExecute taint that no toleration of the request matches
  is never allocated to it (an empty toleration effect matches every effect, an empty key
  every key, ``Exists`` every value, ``Equal`` or empty the same value);
* a NoExecute taint on an allocated device evicts the pods using the claim at the taint's
  ``timeAdded``, unless a toleration **whose effect is NoExecute** matches it: without
  ``tolerationSeconds`` the taint is ignored, otherwise the smallest seconds (negative
  counts as 0) delay the eviction. A toleration with an empty effect lets the device be
  allocated but does not delay its eviction, as the controller reads it;
* a DeviceTaintRule's ``spec.deviceSelector`` selects devices by ``driver``, ``pool`` and
  ``device`` (each optional, all given must match); an empty selector selects every
  device and a rule without one selects none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

NO_SCHEDULE: Final = "NoSchedule"
NO_EXECUTE: Final = "NoExecute"
NONE: Final = "None"
#: Effects that keep a device from being allocated unless tolerated.
BLOCKING: Final = (NO_SCHEDULE, NO_EXECUTE)


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """A device taint, and where it came from (``ResourceSlice`` or ``DeviceTaintRule x``)."""

    key: str
    value: str
    effect: str
    source: str = "ResourceSlice"

    def as_dict(self) -> dict[str, str]:
        """The taint as the API writes it."""
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_taint(raw: Any, source: str = "ResourceSlice") -> DeviceTaint | None:
    """A :class:`DeviceTaint` from its API form, or ``None`` when it has no key.

    Why lenient on the effect: consumers must treat an unknown effect like ``None``, so it
    is kept and simply never blocks or evicts.
    """
    if not isinstance(raw, Mapping) or not _text(raw.get("key")):
        return None
    return DeviceTaint(_text(raw["key"]), _text(raw.get("value")), _text(raw.get("effect")), source)


def tolerates(toleration: Mapping[str, Any], taint: DeviceTaint) -> bool:
    """Whether a claim request's ``toleration`` matches ``taint`` (``ToleratesTaint``)."""
    effect = _text(toleration.get("effect"))
    if effect and effect != taint.effect:
        return False
    key = _text(toleration.get("key"))
    if key and key != taint.key:
        return False
    operator = _text(toleration.get("operator"))
    if operator in ("", "Equal"):
        return _text(toleration.get("value")) == taint.value
    return operator == "Exists"


def blocking_taint(
    taints: Iterable[DeviceTaint], tolerations: Sequence[Mapping[str, Any]]
) -> DeviceTaint | None:
    """The first NoSchedule or NoExecute taint none of ``tolerations`` matches, if any.

    Why the first: it is the one to name when the device cannot be allocated.
    """
    for taint in taints:
        if taint.effect in BLOCKING and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


EvictionOutcome = Literal["at-once", "after", "never"]


@dataclass(frozen=True, slots=True)
class DeviceEviction:
    """What a NoExecute device taint does to the pods using an allocated device.

    ``seconds`` after the taint is added (``None`` with ``never``).
    """

    taint: DeviceTaint
    outcome: EvictionOutcome
    seconds: int | None
    toleration: Mapping[str, Any] | None = None


def eviction(taint: DeviceTaint, tolerations: Sequence[Mapping[str, Any]]) -> DeviceEviction:
    """When the device taint eviction controller evicts the users of a device with
    NoExecute ``taint``, given the tolerations of the request the device was allocated for.

    Why only NoExecute tolerations count: the controller looks at those alone (see the
    module docstring).
    """
    least: int | None = None
    used: Mapping[str, Any] | None = None
    for toleration in tolerations:
        if _text(toleration.get("effect")) != NO_EXECUTE or not tolerates(toleration, taint):
            continue
        seconds = toleration.get("tolerationSeconds")
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            return DeviceEviction(taint, "never", None, toleration)
        if least is None or max(seconds, 0) < least:
            least, used = max(seconds, 0), toleration
    if least is None or least == 0:
        return DeviceEviction(taint, "at-once", 0, used)
    return DeviceEviction(taint, "after", least, used)


def selects(rule: Mapping[str, Any], driver: str, pool: str, device: str) -> bool:
    """Whether DeviceTaintRule ``rule`` selects the device ``driver``/``pool``/``device``."""
    spec = rule.get("spec")
    selector = spec.get("deviceSelector") if isinstance(spec, Mapping) else None
    if not isinstance(selector, Mapping):
        return False
    for name, value in (("driver", driver), ("pool", pool), ("device", device)):
        wanted = selector.get(name)
        if isinstance(wanted, str) and wanted != value:
            return False
    return True


def rule_taint(rule: Mapping[str, Any]) -> DeviceTaint | None:
    """The taint a DeviceTaintRule adds, named after the rule; ``None`` when it has none."""
    spec = rule.get("spec")
    meta = rule.get("metadata")
    name = _text(meta.get("name")) if isinstance(meta, Mapping) else ""
    raw = spec.get("taint") if isinstance(spec, Mapping) else None
    return parse_taint(raw, f"DeviceTaintRule {name}")
