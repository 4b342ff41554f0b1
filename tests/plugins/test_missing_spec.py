"""A pod spec that is missing or null is the empty spec the API server decodes, for every
mutating plugin, alone and in the full chain.

Why: the API server decodes a Pod into a typed struct before admission, so upstream's
plugins always meet a spec, if an empty one. A plugin that skipped a missing spec while
another created one made its change only on a second pass: ``check`` reported a
convergence failure and ``mutate`` run twice differed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reviews import apply, request
from webhooks.cluster.files import read_objects
from webhooks.configfile import read_config
from webhooks.core.admission import Admission
from webhooks.core.review import AdmissionRequest
from webhooks.plugins import REGISTRY

BENCH = Path(__file__).resolve().parents[2] / "bench" / "configs"
#: Every plugin on with settings, over namespace "shop", which carries every annotation
#: the plugins read (a node selector, default tolerations, failover seconds, a group).
ADMISSION = Admission(
    REGISTRY, read_config(BENCH / "full.yaml"), read_objects([BENCH / "cluster.yaml"])
)
MUTATORS = [p.name for p in ADMISSION.plugins("mutate")]
DAEMON_OWNER = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "u"}
MISSING = object()


def _pod(spec: Any, *, daemon: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "shop"}
    if daemon:
        meta["ownerReferences"] = [{**DAEMON_OWNER, "controller": True}]
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
    if spec is not MISSING:
        pod["spec"] = spec
    return pod


def _request(pod: dict[str, Any]) -> AdmissionRequest:
    return request(pod, kind="Pod", namespace="shop")


def _stored(pod: dict[str, Any], only: str | None) -> dict[str, Any]:
    """The pod as stored, a spec left missing or null read as the empty one it stands for."""
    outcome = ADMISSION.decide(_request(pod), ("mutate",), only)
    stored = apply(pod, outcome.patch)
    return {**stored, "spec": stored.get("spec") or {}}


SPECS = [pytest.param(MISSING, id="no spec"), pytest.param(None, id="a null spec")]


def test_the_full_config_has_mutators_that_write_into_the_spec() -> None:
    assert {"pod-node-selector", "pod-toleration-restriction", "dedicated-nodes"} <= set(MUTATORS)


@pytest.mark.parametrize("daemon", [False, True], ids=["a Pod", "a DaemonSet's Pod"])
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("plugin", [*MUTATORS, None], ids=[*MUTATORS, "the whole chain"])
def test_a_missing_spec_gets_what_an_empty_one_gets(
    plugin: str | None, spec: Any, daemon: bool
) -> None:
    empty = _stored(_pod({}, daemon=daemon), plugin)
    assert _stored(_pod(spec, daemon=daemon), plugin) == empty


@pytest.mark.parametrize("daemon", [False, True], ids=["a Pod", "a DaemonSet's Pod"])
@pytest.mark.parametrize("spec", [*SPECS, pytest.param({}, id="an empty spec")])
def test_the_chain_settles_in_one_pass(spec: Any, daemon: bool) -> None:
    once = _stored(_pod(spec, daemon=daemon), None)
    assert once["spec"]["nodeSelector"] == {
        "env": "prod",
        "topology.kubernetes.io/region": "eu-west-1",
    }
    assert ADMISSION.decide(_request(once), ("mutate",)).patch == []
