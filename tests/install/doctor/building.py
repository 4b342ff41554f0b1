"""Installations built by hand for the doctor's checks: from the chart's own render.

Why the chart: the ``configurations`` check must agree with what the chart installs for any
values an operator may choose, so its fixtures are the chart's output, not hand-written
webhooks that could drift from it.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from tests.charts.render import render
from webhooks.configfile import parse_config
from webhooks.install.doctor.installation import Installation
from webhooks.install.webhookconfig import KINDS
from webhooks.k8s.releases import judge

NAME = "placement-webhooks"
NAMESPACE = "placement"
RELEASE = judge("v1.37.2")


def charted(values: dict[str, Any] | None = None, *, upgrade: bool = True) -> Installation:
    """The installation ``helm install`` (``upgrade``: ``helm upgrade``) makes of ``values``,
    as doctor would read it: both configurations, the ConfigMap's config, the Deployment."""
    objects = render(values, name=NAME, namespace=NAMESPACE, upgrade=upgrade)
    kinds = set(KINDS.values())
    found = tuple(
        o for o in objects if o["kind"] in kinds and "helm.sh/hook" not in _annotations(o)
    )
    [configmap] = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == NAME]
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    config = parse_config(configmap["data"]["config.yaml"].encode(), "config.yaml")
    return Installation(
        api=None,
        name=NAME,
        namespace=NAMESPACE,
        release=RELEASE,
        configurations=found,
        config=config,
        deployment=deployment,
        namespace_labels={"kubernetes.io/metadata.name": NAMESPACE},
    )


def edited(installation: Installation, kind: str, edit: Any) -> Installation:
    """``installation`` with ``edit(configuration)`` applied to a copy of its ``kind`` one."""
    changed = []
    for configuration in installation.configurations:
        copied = copy.deepcopy(configuration)
        if copied["kind"] == kind:
            edit(copied)
        changed.append(copied)
    return replace(installation, configurations=tuple(changed))


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})
