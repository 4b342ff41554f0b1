"""anti-affinity-topology: the LimitPodHardAntiAffinityTopology admission plugin (spec §7).

Why it exists: a *required* pod anti-affinity term over a wide topology (a zone, a region)
lets one pod keep every other matching pod out of a whole failure domain, which the
scheduler must also evaluate against every node in it. Upstream therefore lets such hard
terms use only ``kubernetes.io/hostname``; preferred terms and pod affinity stay free.

The check is an exact, case-sensitive comparison without trimming; an empty key offends
too. It re-runs on UPDATE even when affinity did not change, and applies to Pods only: a
workload's template is not checked, its pods are refused when the controller creates them.

``allowedTopologyKeys`` widens the rule for clusters that accept, say, zone-level hard
anti-affinity. With one allowed key the denial keeps upstream's sentence exactly (so the
default gives upstream's text byte for byte); with several it reads
``... has TopologyKey <key> but only keys <k1>, <k2> are allowed``, keys in configured order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhooks.core.plugin import PODS, Context, Plugin, Validator
from webhooks.core.result import Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.fielderr import pod_forbidden
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.names import shown_name
from webhooks.k8s.podspec import dotted
from webhooks.k8s.validation import shown

HOSTNAME = "kubernetes.io/hostname"

TERMS_PATH = (
    "spec",
    "affinity",
    "podAntiAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
)


@dataclass(frozen=True, slots=True)
class Settings:
    """The topology keys required anti-affinity terms may use (upstream: hostname only)."""

    allowed_topology_keys: tuple[str, ...] = (HOSTNAME,)

    def __post_init__(self) -> None:
        if not self.allowed_topology_keys:
            raise ValueError(
                "allowedTopologyKeys: must list at least one key "
                f"(omit it for the default {HOSTNAME}); to allow every key, disable the plugin"
            )
        if "" in self.allowed_topology_keys:
            raise ValueError("allowedTopologyKeys: an empty key cannot be allowed")


def reason(key: str, allowed: Sequence[str]) -> str:
    """The denial reason for an offending ``key``: upstream's sentence, naming what is allowed.

    Why one sentence shape: users and scripts already recognise upstream's text, and with
    the default setting it must match kube-apiserver's exactly.
    """
    # A key longer than any valid one is cut short: the pod may send megabytes of it.
    written = shown_name(key)
    head = f"affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey {written}"
    if len(allowed) == 1:
        return f"{head} but only key {allowed[0]} is allowed"
    return f"{head} but only keys {', '.join(allowed)} are allowed"


def offending_term(pod: Mapping[str, Any], allowed: Sequence[str]) -> tuple[int, str] | None:
    """Index and topology key of the first required anti-affinity term with a disallowed key.

    Why only the first: upstream stops there, and the message names one key.
    """
    # ``type(x) is dict`` before isinstance(x, MAPPING): decoded JSON is plain dicts, and the
    # abstract-class check was half of this half's cost.
    node: Any = pod
    for part in TERMS_PATH:
        node = node.get(part) if type(node) is dict or isinstance(node, MAPPING) else None
    if not isinstance(node, list):
        return None
    for index, term in enumerate(node):
        if type(term) is not dict and not isinstance(term, MAPPING):
            continue
        value = term.get("topologyKey")
        # A value that is not a string is shown by its JSON type (an array may be nested
        # deeper than str() recurses, an integer longer than it prints).
        key = "" if value is None else value if isinstance(value, str) else str(shown(value))
        if not isinstance(value, str) or key not in allowed:
            return index, key
    return None


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """Refuse a pod whose required anti-affinity uses a topology key that is not allowed.

    Why validating only: there is nothing sensible to rewrite a zone-wide term into.
    """
    settings: Settings = ctx.settings
    found = offending_term(pod, settings.allowed_topology_keys)
    if found is None:
        return []
    index, key = found
    return [
        Violation(
            pod_forbidden(pod, reason(key, settings.allowed_topology_keys)),
            field=dotted(TERMS_PATH, index, "topologyKey"),
        )
    ]


PLUGIN = Plugin(
    name="anti-affinity-topology",
    summary="Limits required pod anti-affinity to allowed topology keys (hostname by default).",
    settings=Settings,
    validate=Validator(validate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    wrong_kind="Resource was marked with kind Pod but was unable to be converted",
    enabled_by_default=False,
    upstream="LimitPodHardAntiAffinityTopology",
)
