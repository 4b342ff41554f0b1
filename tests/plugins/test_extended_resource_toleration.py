"""extended-resource-toleration mirrors ExtendedResourceToleration (spec §3)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import reviews
from tests.counting import TARGET, Comparisons, CountedDict, growth
from tests.reviews import container, pod, request, tol
from webhooks.core.config import ConfigError, load_config
from webhooks.core.plugin import Context
from webhooks.plugins import REGISTRY
from webhooks.plugins.extended_resource_toleration import (
    EARNERS_SHOWN,
    Settings,
    mutate,
    validate,
)

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
MIG = "nvidia.com/mig-1g.12gb"
FPGA_NODES = "example.com/fpga-nodes"
MESH = "mesh.example.io/not-ready"

#: The GPU taint earned by any nvidia.com/ resource or a GPU claim, the device EK guarded by
#: its own name only, and a node taint earned by one exact resource name.
GUARDS = {
    "guarded": [
        {
            "taintKey": GPU,
            "earnedBy": {"resourcePrefixes": ["nvidia.com/"], "deviceClasses": ["gpu.nvidia.com"]},
        },
        {"taintKey": EK},
        {"taintKey": FPGA_NODES, "earnedBy": {"resources": ["example.com/fpga"]}},
    ]
}


def settings_of(section: dict[str, Any]) -> Settings:
    config = load_config({"plugins": {NAME: section}}, REGISTRY)
    settings: Settings = config.settings(NAME)
    return settings


ENFORCED = settings_of({"enforce": GUARDS})

ENFORCE: list[tuple[str, dict[str, Any], bool]] = [
    ("a non-GPU pod tolerating the GPU taint is refused", pod(tolerations=[T(GPU)]), False),
    (
        "a GPU toleration with a GPU request is admitted",
        pod(tolerations=[T(GPU)], containers=[container(requests={GPU: "1"})]),
        True,
    ),
    (
        "a MIG pod tolerating the GPU taint is admitted: nvidia.com/ earns it",
        pod(tolerations=[T(GPU)], containers=[container(resources={"limits": {MIG: "1"}})]),
        True,
    ),
    (
        "a mesh pod tolerating its vendor's not-ready taint is admitted: nobody guards it",
        pod(tolerations=[T(MESH)], containers=[container(requests={"cpu": "100m"})]),
        True,
    ),
    (
        "an unguarded extended-resource key is admitted without its request",
        pod(tolerations=[T(DO)]),
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
        "an Equal toleration on a guarded key with another effect is still refused",
        pod(tolerations=[tol(GPU, "Equal", "present", "NoExecute")]),
        False,
    ),
    (
        "another vendor's device does not earn the GPU taint",
        pod(tolerations=[T(GPU)], containers=[container(requests={EK: "1"})]),
        False,
    ),
    (
        "a prefix matches only at the start of the name",
        pod(tolerations=[T(GPU)], containers=[container(requests={"example.nvidia.com/gpu": "1"})]),
        False,
    ),
    (
        "a key guarded without earnedBy is earned by its own name",
        pod(tolerations=[T(EK)], containers=[container(requests={EK: "1"})]),
        True,
    ),
    (
        "a key guarded without earnedBy is not earned by a name it prefixes",
        pod(tolerations=[T(EK)], containers=[container(requests={EK + "-2": "1"})]),
        False,
    ),
    (
        "an exact name in earnedBy.resources earns its key",
        pod(tolerations=[T(FPGA_NODES)], containers=[container(requests={"example.com/fpga": 1})]),
        True,
    ),
    (
        "a longer name does not earn a key earned by an exact name",
        pod(
            tolerations=[T(FPGA_NODES)],
            containers=[container(requests={"example.com/fpga-big": 1})],
        ),
        False,
    ),
    (
        "a device class earns only through a claim, not as a resource name",
        pod(tolerations=[T(GPU)], containers=[container(requests={"gpu.nvidia.com/x": "1"})]),
        False,
    ),
    ("a toleration on a native resource key is not judged", pod(tolerations=[T("cpu")]), True),
    ("a wildcard is left to dedicated-nodes", pod(tolerations=[tol(operator="Exists")]), True),
    ("a pod without tolerations passes", pod(), True),
]


@pytest.mark.parametrize(
    ("obj", "allowed"), [(o, a) for _, o, a in ENFORCE], ids=[i for i, _, _ in ENFORCE]
)
def test_enforce_refuses_only_unearned_tolerations_of_guarded_keys(
    obj: dict[str, Any], allowed: bool
) -> None:
    violations = validate(request(obj), obj, Context(ENFORCED))
    assert (not violations) is allowed


def test_enforce_message_names_the_toleration_and_what_earns_it() -> None:
    obj = pod(tolerations=[tol("spot", "Exists"), T(MESH), T(GPU)])
    (violation,) = validate(request(obj), obj, Context(ENFORCED))
    assert violation.message == (
        "toleration nvidia.com/gpu:NoSchedule (Exists) lets this pod onto nodes reserved for "
        "nvidia.com/gpu, but nothing the pod requests or claims earns it (nvidia.com/gpu, "
        "any nvidia.com/* resource, a claim of device class gpu.nvidia.com): request or claim "
        "one of those, or remove the toleration"
    )
    assert violation.field == "spec.tolerations[2].key"


def test_a_long_list_of_earners_is_quoted_bounded() -> None:
    names = [f"example.com/r{i:04}" for i in range(500)]
    settings = settings_of(
        {"enforce": {"guarded": [{"taintKey": GPU, "earnedBy": {"resources": names}}]}}
    )
    obj = pod(tolerations=[T(GPU)])
    (violation,) = validate(request(obj), obj, Context(settings))
    earners = violation.message.partition("earns it (")[2].partition("):")[0]
    assert earners.startswith("nvidia.com/gpu, example.com/r0000, example.com/r0001")
    shown = earners.count(", ") + 1
    assert earners.endswith(f" and {501 - shown} more")
    assert len(earners) <= EARNERS_SHOWN + len(" and 500 more")


CONFIG_ERRORS: list[tuple[str, Any, str]] = [
    (
        "enforce: true is refused with the way to name keys",
        True,
        "plugins.extended-resource-toleration.enforce: true names no taint key to guard: name "
        "each one and what earns it, e.g. enforce: {guarded: [{taintKey: nvidia.com/gpu",
    ),
    ("an empty enforce names no key", {}, f"plugins.{NAME}.enforce.guarded: is required"),
    ("an empty guarded list names no key", {"guarded": []}, "enforce.guarded: is required"),
    (
        "a guard without a taint key",
        {"guarded": [{"earnedBy": {"resources": [GPU]}}]},
        "enforce.guarded[0].taintKey: is required",
    ),
    (
        "a taint key that is not a qualified name",
        {"guarded": [{"taintKey": "bad key"}]},
        'enforce.guarded[0].taintKey: "bad key": name part must consist of',
    ),
    (
        "a taint key guarded twice",
        {"guarded": [{"taintKey": GPU}, {"taintKey": EK}, {"taintKey": GPU}]},
        'enforce.guarded[2].taintKey: "nvidia.com/gpu" is already guarded by guarded[0]',
    ),
    (
        "a native resource among the earning names",
        {"guarded": [{"taintKey": GPU, "earnedBy": {"resources": [GPU, "memory"]}}]},
        'enforce.guarded[0].earnedBy.resources[1]: "memory" is not an extended resource name',
    ),
    (
        "a prefix without its whole domain",
        {"guarded": [{"taintKey": GPU, "earnedBy": {"resourcePrefixes": ["nvidia"]}}]},
        'enforce.guarded[0].earnedBy.resourcePrefixes[0]: "nvidia" must start with a whole '
        "domain and a slash",
    ),
    (
        "a device class that is not a class name",
        {"guarded": [{"taintKey": GPU, "earnedBy": {"deviceClasses": ["GPU"]}}]},
        'enforce.guarded[0].earnedBy.deviceClasses[0]: "GPU" is not a device class name',
    ),
    (
        "an unknown key under earnedBy",
        {"guarded": [{"taintKey": GPU, "earnedBy": {"prefixes": ["nvidia.com/"]}}]},
        "enforce.guarded[0].earnedBy.prefixes: unknown key (known keys: deviceClasses, "
        "resourcePrefixes, resources)",
    ),
    (
        "the compiled index is no key an operator can set",
        {"guarded": [{"taintKey": GPU}], "earners": {}},
        "enforce.earners: unknown key (known keys: guarded)",
    ),
]


@pytest.mark.parametrize(
    ("value", "message"), [c[1:] for c in CONFIG_ERRORS], ids=[c[0] for c in CONFIG_ERRORS]
)
def test_unusable_enforce_settings_are_startup_errors_naming_the_key(
    value: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"plugins": {NAME: {"enforce": value}}}, REGISTRY)
    assert message in str(caught.value)


def test_enforce_false_checks_nothing() -> None:
    obj = pod(tolerations=[T(GPU)])
    assert validate(request(obj), obj, Context(settings_of({"enforce": False}))) == []


def _guarded_pod(n: int) -> tuple[Settings, dict[str, Any]]:
    """``n`` guarded keys, each earned by a prefix and an exact name, and a pod tolerating
    every key and requesting ``n`` names: half earn their key by prefix, half earn none."""
    guards = [
        {
            "taintKey": f"example.com/k{i}",
            "earnedBy": {
                "resources": [f"example.com/exact{i}"],
                "resourcePrefixes": [f"vendor{i}.example.com/"],
            },
        }
        for i in range(n)
    ]
    settings = settings_of({"enforce": {"guarded": guards}})
    names = {f"vendor{i}.example.com/mig-{i}": "1" for i in range(0, n, 2)}
    names |= {f"other{i}.example.com/x": "1" for i in range(1, n, 2)}
    obj = pod(
        tolerations=[T(f"example.com/k{i}") for i in range(n)],
        containers=[container(requests=names)],
    )
    return settings, obj


def test_enforce_refuses_exactly_the_unearned_keys_of_many() -> None:
    settings, obj = _guarded_pod(40)
    violations = validate(request(obj), obj, Context(settings))
    assert [v.field for v in violations] == [f"spec.tolerations[{i}].key" for i in range(1, 40, 2)]


def _shared_prefix_pod(n: int) -> tuple[Settings, dict[str, Any]]:
    """``n`` guarded keys all earned by one prefix, and a pod tolerating every key and
    requesting ``n`` names under that prefix: every name earns every key."""
    guards = [
        {"taintKey": f"example.com/k{i}", "earnedBy": {"resourcePrefixes": ["shared.example.com/"]}}
        for i in range(n)
    ]
    settings = settings_of({"enforce": {"guarded": guards}})
    obj = pod(
        tolerations=[T(f"example.com/k{i}") for i in range(n)],
        containers=[container(requests={f"shared.example.com/r{i}": "1" for i in range(n)})],
    )
    return settings, obj


def test_a_prefix_that_many_names_reach_adds_its_keys_once() -> None:
    """Adding a prefix's keys once per name reaching it is names × keys set insertions,
    which no count of calls shows (one ``set.update`` call each): the keys are counted as
    they are read instead."""
    read = Comparisons()

    class Keys(tuple[str, ...]):
        def __iter__(self) -> Iterator[str]:
            read.count += len(self)
            return super().__iter__()

    settings, obj = _shared_prefix_pod(50)
    guards = settings.guards
    assert guards is not None
    object.__setattr__(guards, "ends", tuple(Keys(keys) for keys in guards.ends))
    assert validate(request(obj), obj, Context(settings)) == []
    assert read.count == 50


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(_guarded_pod, id="keys each earned by a prefix of their own"),
        pytest.param(_shared_prefix_pod, id="one prefix that every name reaches earns every key"),
    ],
)
def test_enforce_work_grows_linearly_with_keys_tolerations_and_names(build: Any) -> None:
    def work(n: int) -> Any:
        settings, obj = build(n)
        return lambda: validate(request(obj), obj, Context(settings))

    assert growth(work, 200) <= TARGET


EXEMPTIONS: list[tuple[str, dict[str, Any], str, bool]] = [
    ("enforcement is off by default", {}, "default", True),
    ("with enforcement off, kube-system needs no exemption", {}, "kube-system", True),
    ("kube-system is exempt by default", {"enforce": GUARDS}, "kube-system", True),
    (
        "exemptNamespaces can name others",
        {"enforce": GUARDS, "exemptNamespaces": ["gpu-ops"]},
        "gpu-ops",
        True,
    ),
    (
        "an empty exemption list exempts nobody",
        {"enforce": GUARDS, "exemptNamespaces": []},
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
    config = load_config(
        {"plugins": {"extended-resource-toleration": {"enforce": GUARDS}}}, REGISTRY
    )
    assert config.settings("extended-resource-toleration") == ENFORCED
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
