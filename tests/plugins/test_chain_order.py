"""What the chain order decides: one test per interaction, full chain, real reviews.

Upstream runs PodNodeSelector, DefaultTolerationSeconds, PodTolerationRestriction,
ExtendedResourceToleration and RuntimeClass in that order, once each; the DaemonSet
defaults come before them all (the controller writes them before admission), dedicated-nodes
after them all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import reviews
from tests.reviews import apply, container, namespace, owned_by, pod, tol
from webhooks.core.result import Outcome
from webhooks.plugins import ORDER

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
NR300 = tol(NOT_READY, "Exists", effect="NoExecute", seconds=300)
UR300 = tol(UNREACHABLE, "Exists", effect="NoExecute", seconds=300)
MEMORY = tol("node.kubernetes.io/memory-pressure", "Exists", effect="NoSchedule")
GPU = tol("nvidia.com/gpu", "Exists", effect="NoSchedule")
ANY = tol(operator="Exists")
BURSTABLE_GPU = [container(requests={"cpu": "1", "nvidia.com/gpu": "1"})]
DAEMON_DEFAULTS = [
    tol(NOT_READY, "Exists", effect="NoExecute"),
    tol(UNREACHABLE, "Exists", effect="NoExecute"),
    tol("node.kubernetes.io/disk-pressure", "Exists", effect="NoSchedule"),
    MEMORY,
    tol("node.kubernetes.io/pid-pressure", "Exists", effect="NoSchedule"),
    tol("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),
]

#: Every plugin the interactions involve, on.
ON = {
    "pod-node-selector": {"enabled": True},
    "pod-toleration-restriction": {"enabled": True},
    "extended-resource-toleration": {"enabled": True},
    "dedicated-nodes": {"enabled": True, "exemptNamespaces": ["team"]},
}


def runtime_class(name: str, **scheduling: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": name,
        "scheduling": scheduling,
    }


def admit(obj: dict[str, Any], *objects: dict[str, Any], **kw: Any) -> Outcome:
    return reviews.decide(obj, config={"plugins": ON}, cluster=objects or [namespace("team")], **kw)


def stored(obj: dict[str, Any], *objects: dict[str, Any], **kw: Any) -> Any:
    outcome = admit(obj, *objects, **kw)
    assert outcome.allowed, outcome.message
    return apply(obj, outcome.patch)["spec"].get("tolerations")


def test_the_order_is_upstreams_with_ours_around_it() -> None:
    assert [p.name for p in ORDER] == [
        "pod-node-selector",
        "default-toleration-seconds",
        "pod-toleration-restriction",
        "extended-resource-toleration",
        "runtime-class",
        "daemonset-tolerations",
        "dedicated-nodes",
        "taint-toleration-rules",
        "anti-affinity-topology",
    ]


INTERACTIONS: list[tuple[str, dict[str, Any], list[dict[str, Any]], Any]] = [
    (
        "a shorter namespace default for not-ready is absorbed: the 300 s entry is added first",
        pod(namespace="team"),
        [
            namespace(
                "team",
                annotations={
                    DEFAULTS: json.dumps([tol(NOT_READY, "Exists", effect="NoExecute", seconds=60)])
                },
            )
        ],
        [NR300, UR300],
    ),
    (
        "a longer namespace default wins the superset merge",
        pod(namespace="team"),
        [
            namespace(
                "team",
                annotations={
                    DEFAULTS: json.dumps(
                        [tol(NOT_READY, "Exists", effect="NoExecute", seconds=600)]
                    )
                },
            )
        ],
        [UR300, tol(NOT_READY, "Exists", effect="NoExecute", seconds=600)],
    ),
    (
        "memory-pressure comes after the default tolerations, the GPU toleration after both",
        pod(namespace="team", containers=BURSTABLE_GPU),
        [namespace("team")],
        [NR300, UR300, MEMORY, GPU],
    ),
    (
        "a wildcard namespace default collapses the list, then the GPU toleration is appended",
        pod(namespace="team", containers=BURSTABLE_GPU),
        [namespace("team", annotations={DEFAULTS: json.dumps([ANY])})],
        [ANY, GPU],
    ),
    (
        "a RuntimeClass wildcard absorbs every earlier entry",
        pod(namespace="team", containers=BURSTABLE_GPU, runtimeClassName="any"),
        [namespace("team"), runtime_class("any", tolerations=[ANY])],
        [ANY],
    ),
    (
        "a RuntimeClass entry broader than the GPU toleration replaces it, at the end",
        pod(namespace="team", containers=BURSTABLE_GPU, runtimeClassName="gpu"),
        [namespace("team"), runtime_class("gpu", tolerations=[tol("nvidia.com/gpu", "Exists")])],
        [NR300, UR300, MEMORY, tol("nvidia.com/gpu", "Exists")],
    ),
    (
        "a DaemonSet pod has its defaults before DefaultTolerationSeconds, which finds both "
        "covered",
        owned_by(pod(namespace="team")),
        [namespace("team")],
        DAEMON_DEFAULTS,
    ),
    (
        "the DaemonSet defaults are there before a RuntimeClass merge, which absorbs them",
        owned_by(pod(namespace="team", runtimeClassName="any")),
        [namespace("team"), runtime_class("any", tolerations=[ANY])],
        [ANY],
    ),
    (
        "a DaemonSet pod that arrives with the controller's defaults keeps them as they are",
        owned_by(pod(namespace="team", tolerations=DAEMON_DEFAULTS)),
        [namespace("team")],
        DAEMON_DEFAULTS,
    ),
    (
        "the dedicated toleration comes last, after the RuntimeClass merge",
        pod(namespace="ml", runtimeClassName="gpu"),
        [namespace("ml", "gpu-team"), runtime_class("gpu", tolerations=[GPU])],
        [NR300, UR300, GPU, tol("dedicated", "Equal", "gpu-team", "NoSchedule")],
    ),
]


@pytest.mark.parametrize(
    ("obj", "objects", "want"),
    [c[1:] for c in INTERACTIONS],
    ids=[c[0] for c in INTERACTIONS],
)
def test_the_stored_tolerations(
    obj: dict[str, Any], objects: list[dict[str, Any]], want: Any
) -> None:
    assert stored(obj, *objects) == want


WHITELISTED = json.dumps([tol("node.kubernetes.io", "Exists")])

DENIALS: list[tuple[str, dict[str, Any], list[dict[str, Any]], str]] = [
    (
        "the whitelist must admit what DefaultTolerationSeconds added before it",
        pod(namespace="team"),
        [namespace("team", annotations={WHITELIST: json.dumps([tol("team", "Exists")])})],
        "conflict with its namespace whitelist",
    ),
    (
        "the whitelist must admit the GPU toleration added after it (the validating phase)",
        pod(namespace="team", containers=[container(requests={"nvidia.com/gpu": "1"})]),
        [
            namespace(
                "team",
                annotations={
                    WHITELIST: json.dumps([tol(NOT_READY, "Exists"), tol(UNREACHABLE, "Exists")])
                },
            )
        ],
        "conflict with its namespace whitelist",
    ),
    (
        "the whitelist must admit the dedicated toleration, like any a webhook adds",
        pod(namespace="ml"),
        [
            namespace(
                "ml",
                "gpu-team",
                {WHITELIST: json.dumps([tol(NOT_READY, "Exists"), tol(UNREACHABLE, "Exists")])},
            )
        ],
        "conflict with its namespace whitelist",
    ),
    (
        "PodNodeSelector's denial comes before RuntimeClass looks its class up",
        pod(namespace="team", nodeSelector={"pool": "b"}, runtimeClassName="missing"),
        [namespace("team", annotations={SELECTOR: "pool=a"})],
        "pod node label selector conflicts with its namespace node label selector",
    ),
    (
        "PodTolerationRestriction's denial comes before RuntimeClass looks its class up",
        pod(namespace="team", tolerations=[tol("spot", "Exists")], runtimeClassName="missing"),
        [namespace("team", annotations={WHITELIST: WHITELISTED})],
        "conflict with its namespace whitelist",
    ),
    (
        "a RuntimeClass nodeSelector that the namespace forbids is refused on the final object",
        pod(namespace="team", runtimeClassName="gvisor"),
        [
            namespace("team", annotations={SELECTOR: "pool=a"}),
            runtime_class("gvisor", nodeSelector={"pool": "b"}),
        ],
        "conflict: runtimeClass.scheduling.nodeSelector[pool] = b; pod.spec.nodeSelector[pool] = a",
    ),
]


@pytest.mark.parametrize(
    ("obj", "objects", "fragment"), [c[1:] for c in DENIALS], ids=[c[0] for c in DENIALS]
)
def test_which_denial_a_pod_sees(
    obj: dict[str, Any], objects: list[dict[str, Any]], fragment: str
) -> None:
    outcome = admit(obj, *objects)
    assert not outcome.allowed
    assert fragment in outcome.message


def test_on_update_only_the_plugins_that_handle_it_run() -> None:
    # DefaultTolerationSeconds and PodTolerationRestriction's memory-pressure merge run on
    # UPDATE; PodNodeSelector, the namespace defaults and RuntimeClass do not.
    old = pod(namespace="team", containers=BURSTABLE_GPU, runtimeClassName="any")
    objects = [
        namespace(
            "team", annotations={SELECTOR: "pool=a", DEFAULTS: json.dumps([tol("x", "Exists")])}
        ),
        runtime_class("any", tolerations=[ANY]),
    ]
    after = stored(old, *objects, operation="UPDATE", old=old)
    assert after == [NR300, UR300, MEMORY, GPU]


def test_the_chain_on_its_own_output_changes_nothing() -> None:
    objects = [namespace("team", annotations={DEFAULTS: json.dumps([ANY])})]
    obj = pod(namespace="team", containers=BURSTABLE_GPU)
    first = admit(obj, *objects)
    again = admit(apply(obj, first.patch), *objects)
    assert again.allowed and again.patch == []


def test_a_daemonset_pod_is_merged_as_the_daemonset_controller_s_pods_are() -> None:
    # The controller writes the defaults before admission, so in tree every merge sees them:
    # a memory-pressure merge drops the unschedulable default a broader user entry subsumes
    # (tests/controlplane/differential/test_daemonset_controller.py shows the real pods).
    unschedulable = tol("node.kubernetes.io/unschedulable", "Exists")
    obj = owned_by(pod(namespace="team", containers=BURSTABLE_GPU, tolerations=[unschedulable]))
    expected = [
        unschedulable,
        *DAEMON_DEFAULTS[:5],
        tol("nvidia.com/gpu", "Exists", effect="NoSchedule"),
    ]
    assert stored(obj, namespace("team")) == expected
