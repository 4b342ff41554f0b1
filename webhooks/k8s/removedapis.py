"""API versions Kubernetes stopped serving, per kind: the release, and what replaces them.

Why a table of our own: a schema set made from one release's OpenAPI document simply has
no entry for an ``extensions/v1beta1`` Deployment, which says "unknown" where the truth is
"the API server of this release refuses it, and ``apps/v1`` is what to write". The facts
are those of the Kubernetes Deprecated API Migration Guide ("Removed APIs by release"),
1.16 to 1.32; a kind the guide does not list is not guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

Release = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Removal:
    """One ``apiVersion`` of one kind that stopped being served.

    ``release`` is the first release that does not serve it; ``replacements`` are
    ``(apiVersion, first release that serves it)``, most preferred first. A replacement
    that was itself removed later is looked up again when the message is written.
    """

    api_version: str
    kind: str
    release: Release
    replacements: tuple[tuple[str, Release], ...]


def _rows(
    release: Release,
    old: tuple[str, ...],
    kinds: tuple[str, ...],
    *replacements: tuple[str, Release],
) -> list[Removal]:
    return [Removal(api, kind, release, replacements) for api in old for kind in kinds]


_FLOWCONTROL = ("FlowSchema", "PriorityLevelConfiguration")
_FLOW = "flowcontrol.apiserver.k8s.io"

#: Every removal the migration guide lists, in release order.
REMOVALS: tuple[Removal, ...] = (
    # 1.16
    *_rows((1, 16), ("extensions/v1beta1",), ("NetworkPolicy",), ("networking.k8s.io/v1", (1, 8))),
    *_rows((1, 16), ("extensions/v1beta1",), ("PodSecurityPolicy",), ("policy/v1beta1", (1, 10))),
    *_rows((1, 16), ("extensions/v1beta1", "apps/v1beta2"), ("DaemonSet",), ("apps/v1", (1, 9))),
    *_rows(
        (1, 16),
        ("extensions/v1beta1", "apps/v1beta1", "apps/v1beta2"),
        ("Deployment", "ReplicaSet"),
        ("apps/v1", (1, 9)),
    ),
    *_rows((1, 16), ("apps/v1beta1", "apps/v1beta2"), ("StatefulSet",), ("apps/v1", (1, 9))),
    # 1.22
    *_rows(
        (1, 22),
        ("admissionregistration.k8s.io/v1beta1",),
        ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io/v1", (1, 16)),
    ),
    *_rows(
        (1, 22),
        ("apiextensions.k8s.io/v1beta1",),
        ("CustomResourceDefinition",),
        ("apiextensions.k8s.io/v1", (1, 16)),
    ),
    *_rows(
        (1, 22),
        ("apiregistration.k8s.io/v1beta1",),
        ("APIService",),
        ("apiregistration.k8s.io/v1", (1, 10)),
    ),
    *_rows(
        (1, 22),
        ("authentication.k8s.io/v1beta1",),
        ("TokenReview",),
        ("authentication.k8s.io/v1", (1, 6)),
    ),
    *_rows(
        (1, 22),
        ("authorization.k8s.io/v1beta1",),
        ("LocalSubjectAccessReview", "SelfSubjectAccessReview", "SubjectAccessReview"),
        ("authorization.k8s.io/v1", (1, 6)),
    ),
    *_rows(
        (1, 22),
        ("certificates.k8s.io/v1beta1",),
        ("CertificateSigningRequest",),
        ("certificates.k8s.io/v1", (1, 19)),
    ),
    *_rows(
        (1, 22), ("coordination.k8s.io/v1beta1",), ("Lease",), ("coordination.k8s.io/v1", (1, 14))
    ),
    *_rows(
        (1, 22),
        ("extensions/v1beta1", "networking.k8s.io/v1beta1"),
        ("Ingress",),
        ("networking.k8s.io/v1", (1, 19)),
    ),
    *_rows(
        (1, 22),
        ("networking.k8s.io/v1beta1",),
        ("IngressClass",),
        ("networking.k8s.io/v1", (1, 19)),
    ),
    *_rows(
        (1, 22),
        ("rbac.authorization.k8s.io/v1beta1",),
        ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", (1, 8)),
    ),
    *_rows(
        (1, 22),
        ("scheduling.k8s.io/v1beta1",),
        ("PriorityClass",),
        ("scheduling.k8s.io/v1", (1, 14)),
    ),
    *_rows((1, 22), ("storage.k8s.io/v1beta1",), ("CSIDriver",), ("storage.k8s.io/v1", (1, 19))),
    *_rows((1, 22), ("storage.k8s.io/v1beta1",), ("CSINode",), ("storage.k8s.io/v1", (1, 17))),
    *_rows((1, 22), ("storage.k8s.io/v1beta1",), ("StorageClass",), ("storage.k8s.io/v1", (1, 6))),
    *_rows(
        (1, 22), ("storage.k8s.io/v1beta1",), ("VolumeAttachment",), ("storage.k8s.io/v1", (1, 13))
    ),
    # 1.25
    *_rows((1, 25), ("batch/v1beta1",), ("CronJob",), ("batch/v1", (1, 21))),
    *_rows(
        (1, 25), ("discovery.k8s.io/v1beta1",), ("EndpointSlice",), ("discovery.k8s.io/v1", (1, 21))
    ),
    *_rows((1, 25), ("events.k8s.io/v1beta1",), ("Event",), ("events.k8s.io/v1", (1, 19))),
    *_rows(
        (1, 25), ("autoscaling/v2beta1",), ("HorizontalPodAutoscaler",), ("autoscaling/v2", (1, 23))
    ),
    *_rows((1, 25), ("policy/v1beta1",), ("PodDisruptionBudget",), ("policy/v1", (1, 21))),
    # PodSecurityPolicy has no successor API: Pod Security Admission took its place.
    *_rows((1, 25), ("policy/v1beta1",), ("PodSecurityPolicy",)),
    *_rows((1, 25), ("node.k8s.io/v1beta1",), ("RuntimeClass",), ("node.k8s.io/v1", (1, 20))),
    # 1.26
    *_rows(
        (1, 26),
        (f"{_FLOW}/v1beta1",),
        _FLOWCONTROL,
        (f"{_FLOW}/v1", (1, 29)),
        (f"{_FLOW}/v1beta3", (1, 26)),
    ),
    *_rows(
        (1, 26), ("autoscaling/v2beta2",), ("HorizontalPodAutoscaler",), ("autoscaling/v2", (1, 23))
    ),
    # 1.27
    *_rows(
        (1, 27),
        ("storage.k8s.io/v1beta1",),
        ("CSIStorageCapacity",),
        ("storage.k8s.io/v1", (1, 24)),
    ),
    # 1.29
    *_rows(
        (1, 29),
        (f"{_FLOW}/v1beta2",),
        _FLOWCONTROL,
        (f"{_FLOW}/v1", (1, 29)),
        (f"{_FLOW}/v1beta3", (1, 26)),
    ),
    # 1.32
    *_rows((1, 32), (f"{_FLOW}/v1beta3",), _FLOWCONTROL, (f"{_FLOW}/v1", (1, 29))),
)

_BY_KEY: Mapping[tuple[str, str], Removal] = {(r.api_version, r.kind): r for r in REMOVALS}


def removal(api_version: str, kind: str, release: Release) -> Removal | None:
    """The removal of ``apiVersion``/``kind`` if ``release`` no longer serves it, else ``None``."""
    found = _BY_KEY.get((api_version, kind))
    return found if found is not None and found.release <= release else None


def replacement(found: Removal, release: Release) -> str | None:
    """The ``apiVersion`` to write instead at ``release``; ``None`` when none is served there.

    Why "served there": ``extensions/v1beta1`` PodSecurityPolicy moved to ``policy/v1beta1``,
    which is itself gone from 1.25, and a FlowSchema's ``v1`` exists only from 1.29.
    """
    for api_version, since in found.replacements:
        if since <= release and removal(api_version, found.kind, release) is None:
            return api_version
    return None


def removed_message(found: Removal, release: Release) -> str:
    """``extensions/v1beta1 Deployment was removed in Kubernetes 1.16; use apps/v1``."""
    head = f"{found.api_version} {found.kind} was removed in Kubernetes {_show(found.release)}"
    instead = replacement(found, release)
    if instead is None:
        return f"{head}; no API version of {found.kind} is served in {_show(release)}"
    return f"{head}; use {instead}"


def _show(release: Release) -> str:
    return f"{release[0]}.{release[1]}"
