"""extended-resource-toleration mirrors ExtendedResourceToleration (spec §3)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import reviews
from tests.counting import Comparisons, CountedDict
from tests.reviews import container, pod, request, tol
from webhooks.core.config import load_config
from webhooks.core.plugin import Context
from webhooks.plugins import REGISTRY
from webhooks.plugins.extended_resource_toleration import Settings, mutate, validate

EK, DO = "example.com/device-ek", "example.com/device-do"

NAME = "extended-resource-toleration"


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


# --- many extended resources: linear work (issue: 8,000 took seconds) ------------------------


def _many(n: int, counter: Comparisons) -> dict[str, Any]:
    """A pod requesting ``n`` extended resources, half of which it already tolerates (with
    entries that count the comparisons made with them), the other half with seconds."""
    names = [f"example.com/r{i:05}" for i in range(n)]
    written: list[dict[str, Any]] = [CountedDict(counter, T(name)) for name in names[::2]]
    written += [CountedDict(counter, {**T(k), "tolerationSeconds": 1}) for k in names[1::2]]
    limits = container(resources={"limits": dict.fromkeys(names, "1")})
    return pod(containers=[limits], tolerations=written)


def test_many_extended_resources_are_tolerated_with_linear_comparisons() -> None:
    # Telling which tolerations the pod lacked compared each wanted one with every entry.
    counter, n = Comparisons(), 400
    obj = _many(n, counter)
    result = mutate(request(obj), obj, Context(Settings()))
    made = counter.count
    assert result.obj is not None
    names = sorted(f"example.com/r{i:05}" for i in range(n))
    written = [t["key"] for t in obj["spec"]["tolerations"]]
    assert [t["key"] for t in result.obj["spec"]["tolerations"]] == written
    assert all(t == T(t["key"]) for t in result.obj["spec"]["tolerations"])
    assert result.audit[NAME] == "added " + ", ".join(
        f"{name}:NoSchedule (Exists)" for name in names[1::2]
    )
    assert made <= 4 * n


# --- enforce: the validating half (beyond upstream, off by default) ----------------------------

GPU = "nvidia.com/gpu"
ENFORCED = Settings(enforce=True)

ENFORCE: list[tuple[str, dict[str, Any], bool]] = [
    ("a GPU toleration without a GPU request", pod(tolerations=[T(GPU)]), False),
    (
        "a GPU toleration with a GPU request",
        pod(tolerations=[T(GPU)], containers=[container(requests={GPU: "1"})]),
        True,
    ),
    (
        "a request in an init container counts",
        pod(tolerations=[T(GPU)], init_containers=[container(requests={GPU: "1"})]),
        True,
    ),
    (
        "a resource only under limits counts, as API defaulting copies it",
        pod(tolerations=[T(GPU)], containers=[container(resources={"limits": {GPU: "1"}})]),
        True,
    ),
    (
        "an Equal toleration on the resource key with another effect is still denied",
        pod(tolerations=[tol(GPU, "Equal", "present", "NoExecute")]),
        False,
    ),
    (
        "a request for another device does not cover the GPU",
        pod(tolerations=[T(GPU)], containers=[container(requests={EK: "1"})]),
        False,
    ),
    ("a toleration on a native resource key is not judged", pod(tolerations=[T("cpu")]), True),
    (
        "a toleration whose key is not a resource name passes",
        pod(tolerations=[T("dedicated")]),
        True,
    ),
    (
        "a key under kubernetes.io/ is native and passes",
        pod(tolerations=[T("example.kubernetes.io/widget")]),
        True,
    ),
    ("a wildcard is left to dedicated-nodes", pod(tolerations=[tol(operator="Exists")]), True),
    ("a pod without tolerations passes", pod(), True),
]


@pytest.mark.parametrize(
    ("obj", "allowed"), [(o, a) for _, o, a in ENFORCE], ids=[i for i, _, _ in ENFORCE]
)
def test_enforce_denies_unrequested_extended_resource_tolerations(
    obj: dict[str, Any], allowed: bool
) -> None:
    violations = validate(request(obj), obj, Context(ENFORCED))
    assert (not violations) is allowed


def test_enforce_message_names_the_toleration_and_the_missing_request() -> None:
    obj = pod(tolerations=[tol("spot", "Exists"), T(GPU)])
    (violation,) = validate(request(obj), obj, Context(ENFORCED))
    assert violation.message == (
        "toleration nvidia.com/gpu:NoSchedule (Exists) lets this pod onto nodes reserved for "
        "nvidia.com/gpu, but no container requests nvidia.com/gpu and no claim of the pod is "
        "for a device class of nvidia.com/gpu: request it in resources.requests or limits, "
        "claim such a device, or remove the toleration"
    )
    assert violation.field == "spec.tolerations[1].key"


EXEMPTIONS: list[tuple[str, dict[str, Any], str, bool]] = [
    ("enforcement is off by default", {}, "default", True),
    ("with enforcement off, kube-system needs no exemption", {}, "kube-system", True),
    ("kube-system is exempt by default", {"enforce": True}, "kube-system", True),
    (
        "exemptNamespaces can name others",
        {"enforce": True, "exemptNamespaces": ["gpu-ops"]},
        "gpu-ops",
        True,
    ),
    (
        "an empty exemption list exempts nobody",
        {"enforce": True, "exemptNamespaces": []},
        "kube-system",
        False,
    ),
]


@pytest.mark.parametrize(
    ("section", "ns", "allowed"), [c[1:] for c in EXEMPTIONS], ids=[c[0] for c in EXEMPTIONS]
)
def test_enforce_settings_and_exemptions(section: dict[str, Any], ns: str, allowed: bool) -> None:
    config = load_config({"plugins": {"extended-resource-toleration": section}}, REGISTRY)
    obj = pod(namespace=ns, tolerations=[T(GPU)])
    outcome = reviews.decide(obj, config=config, phases=("validate",))
    assert outcome.allowed is allowed
    if allowed and section.get("enforce"):
        assert outcome.excepted == (("extended-resource-toleration.exemptNamespaces", NAME),)
        assert outcome.audit_annotations["exception"] == (
            "extended-resource-toleration.exemptNamespaces"
        )
    if not section.get("enforce"):  # nothing to exempt: no exception is said to apply
        assert outcome.excepted == ()
        assert "exception" not in outcome.audit_annotations


def test_exempt_namespaces_leave_the_mutation_alone() -> None:
    obj = pod(namespace="kube-system", containers=[container(requests={GPU: "1"})])
    outcome = reviews.decide(obj, phases=("mutate",))
    assert "extended-resource-toleration" in outcome.changed_by


def test_enforce_on_update_judges_only_new_tolerations() -> None:
    old = pod(tolerations=[T(GPU)])
    new = pod(tolerations=[T(GPU), T(EK)])
    violations = validate(request(new, operation="UPDATE", old=old), new, Context(ENFORCED))
    assert [v.field for v in violations] == ["spec.tolerations[1].key"]


def test_enforce_is_read_from_config_and_runs_in_the_validating_chain() -> None:
    config = load_config({"plugins": {"extended-resource-toleration": {"enforce": True}}}, REGISTRY)
    assert config.settings("extended-resource-toleration") == Settings(enforce=True)
    obj = pod(tolerations=[T(GPU)])
    outcome = reviews.decide(obj, config=config)
    assert not outcome.allowed and outcome.denied_by == ("extended-resource-toleration",)
    off = reviews.decide(obj, phases=("validate",))
    assert off.allowed


def test_the_mutating_half_is_unchanged_by_enforce() -> None:
    obj = pod(tolerations=[T(EK)], containers=[container(requests={GPU: "1"})])
    plain = mutate(request(obj), obj, Context(Settings()))
    enforced = mutate(request(obj), obj, Context(ENFORCED))
    assert (plain.obj, plain.patch, plain.audit) == (enforced.obj, enforced.patch, enforced.audit)


def test_enforce_skips_mirror_pods() -> None:
    obj = pod(tolerations=[T(GPU)])
    obj["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc123"}
    assert validate(request(obj), obj, Context(ENFORCED)) == []
