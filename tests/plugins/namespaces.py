"""Cluster views for plugin tests: Namespaces with a group label or annotations, a cluster
that cannot be reached, and one plugin decided against namespace ``web``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.reviews import request
from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.plugin import LookupFailure, Phase
from webhooks.core.result import Outcome
from webhooks.plugins import REGISTRY

#: The label that names a Namespace's dedicated group by default.
GROUP_LABEL = "placement-webhooks.io/dedicated"


def namespace(
    name: str, group: str | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A v1 Namespace, dedicated to ``group`` when given, with ``annotations`` when given."""
    metadata: dict[str, Any] = {"name": name}
    if group is not None:
        metadata["labels"] = {GROUP_LABEL: group}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


class Unreachable:
    """A cluster whose every lookup fails, as an API server that does not answer in time."""

    def runtime_class(self, name: str) -> None:
        """Always fails."""
        raise LookupFailure("timed out")

    def namespace(self, name: str) -> None:
        """Always fails."""
        raise LookupFailure("timed out")


def decide_alone(
    plugin: str,
    obj: dict[str, Any],
    *,
    annotations: dict[str, str] | None = None,
    settings: dict[str, Any] | None = None,
    phases: Sequence[Phase] = ("mutate", "validate"),
    cluster: Any = None,
    **kw: Any,
) -> Outcome:
    """``plugin`` alone, enabled with ``settings``, on ``obj``; namespace ``web`` carries
    ``annotations`` unless another ``cluster`` is given."""
    config = load_config({"plugins": {plugin: {"enabled": True, **(settings or {})}}}, REGISTRY)
    if cluster is None:
        cluster = StaticCluster([namespace("web", annotations=annotations)])
    return Admission(REGISTRY, config, cluster).decide(request(obj, **kw), phases, plugin)
