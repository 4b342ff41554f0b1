"""What admission reads from a Namespace: its labels and annotations, as plain string maps.

Why one reader: PodNodeSelector, PodTolerationRestriction and the dedicated-node policy all
consult the pod's Namespace, which may be missing (offline, or not created yet) or carry
malformed metadata; each must see the same thing, and never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhooks.k8s.mapping import MAPPING

NODE_SELECTOR_ANNOTATION = "scheduler.alpha.kubernetes.io/node-selector"
DEFAULT_TOLERATIONS_ANNOTATION = "scheduler.alpha.kubernetes.io/defaultTolerations"
TOLERATIONS_WHITELIST_ANNOTATION = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"


def _metadata_map(namespace: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    metadata = namespace.get("metadata") if isinstance(namespace, MAPPING) else None
    value = metadata.get(name) if isinstance(metadata, MAPPING) else None
    return value if isinstance(value, MAPPING) else {}


def labels_of(namespace: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The Namespace's labels; empty when it is missing or they are malformed.

    Why forgiving: a missing Namespace means "no group, no annotations" to every plugin.
    """
    return _metadata_map(namespace, "labels")


def annotations_of(namespace: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The Namespace's annotations; empty when it is missing or they are malformed.

    Why forgiving: see :func:`labels_of`; a value that is not a string is the caller's to judge.
    """
    return _metadata_map(namespace, "annotations")
