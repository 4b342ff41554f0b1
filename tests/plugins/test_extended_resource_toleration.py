"""extended-resource-toleration mirrors ExtendedResourceToleration (spec §3)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reviews import container, pod, request, tol
from webhooks.core.plugin import Context
from webhooks.plugins.extended_resource_toleration import Settings, mutate

EK, DO = "example.com/device-ek", "example.com/device-do"


def T(name: str) -> dict[str, Any]:
    return tol(name, "Exists", effect="NoSchedule")


FOO = tol("foo", "Equal", "bar", "NoSchedule")

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    ("an empty pod is unchanged", pod(containers=[]), []),
    ("a cpu-only container is unchanged", pod(containers=[container(requests={"cpu": "1"})]), []),
    (
        "a memory-only init container is unchanged",
        pod(init_containers=[container(requests={"memory": "1Gi"})]),
        [],
    ),
    (
        "a container with ext1 gets its toleration",
        pod(containers=[container(requests={EK: "1"})]),
        [T(EK)],
    ),
    (
        "an init container with ext2 gets its toleration",
        pod(init_containers=[container(requests={DO: "1"})]),
        [T(DO)],
    ),
    (
        "an existing toleration is kept and ext1 appended",
        pod(tolerations=[FOO], containers=[container(requests={EK: "1"})]),
        [FOO, T(EK)],
    ),
    (
        "ext1 and ext2 come out sorted",
        pod(
            containers=[container(requests={EK: "1"})],
            init_containers=[container(requests={DO: "1"})],
        ),
        [T(DO), T(EK)],
    ),
    (
        "an exact existing toleration is left in place",
        pod(tolerations=[T(EK)], containers=[container(requests={EK: "1"})]),
        [T(EK)],
    ),
    (
        "the same key with Equal foo NoExecute is kept and Exists appended",
        pod(
            tolerations=[tol(EK, "Equal", "foo", "NoExecute")],
            containers=[container(requests={EK: "1"})],
        ),
        [tol(EK, "Equal", "foo", "NoExecute"), T(EK)],
    ),
    (
        "a wildcard does not prevent the append",
        pod(tolerations=[tol(operator="Exists")], containers=[container(requests={EK: "1"})]),
        [tol(operator="Exists"), T(EK)],
    ),
    (
        "upper case sorts before lower case byte-wise",
        pod(containers=[container(requests={"example.com/b": "1", "example.com/Zeta": "1"})]),
        [T("example.com/Zeta"), T("example.com/b")],
    ),
    (
        "a zero quantity still counts",
        pod(containers=[container(requests={"nvidia.com/gpu": "0"})]),
        [T("nvidia.com/gpu")],
    ),
    (
        "a name containing kubernetes.io/ anywhere is native",
        pod(containers=[container(requests={"example.kubernetes.io/widget": "1"})]),
        [],
    ),
    (
        "a sidecar init container counts",
        pod(init_containers=[container(requests={"nvidia.com/gpu": "1"}, restartPolicy="Always")]),
        [T("nvidia.com/gpu")],
    ),
    (
        "a resource only under limits counts, as API defaulting copies it",
        pod(containers=[container(resources={"limits": {"nvidia.com/gpu": "1"}})]),
        [T("nvidia.com/gpu")],
    ),
    (
        "a resource requested twice gets one toleration",
        pod(containers=[container("a", requests={EK: "1"}), container("b", requests={EK: "2"})]),
        [T(EK)],
    ),
    (
        "duplicate existing matches are both rewritten and kept",
        pod(tolerations=[T(EK), T(EK)], containers=[container(requests={EK: "1"})]),
        [T(EK), T(EK)],
    ),
    (
        "an omitted operator is not Exists",
        pod(tolerations=[tol(EK, effect="NoSchedule")], containers=[container(requests={EK: "1"})]),
        [tol(EK, effect="NoSchedule"), T(EK)],
    ),
]


@pytest.mark.parametrize(
    ("obj", "after"), [(o, a) for _, o, a in CASES], ids=[i for i, _, _ in CASES]
)
def test_admit(obj: dict[str, Any], after: list[dict[str, Any]]) -> None:
    result = mutate(request(obj), obj, Context(Settings()))
    final = result.obj if result.obj is not None else obj
    assert final["spec"].get("tolerations", []) == after


def test_ephemeral_containers_are_not_read() -> None:
    obj = pod(ephemeralContainers=[container(requests={EK: "1"})])
    assert mutate(request(obj), obj, Context(Settings())).obj is None
