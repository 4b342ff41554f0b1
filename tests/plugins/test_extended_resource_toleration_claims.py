"""extended-resource-toleration with DRA claims: ``deviceClaims``, ``deviceClassTaints`` and
what ``enforce`` makes of a pod whose devices come through ``spec.resourceClaims``."""

from __future__ import annotations

from typing import Any

import pytest

from tests import dra
from tests.reviews import Unreachable, container, decide_alone, pod, tol
from webhooks.cluster.files import StaticCluster
from webhooks.core.config import ConfigError, load_config
from webhooks.core.plugin import LookupFailure
from webhooks.plugins import REGISTRY
from webhooks.plugins.extended_resource_toleration import UNRESOLVED

NAME = "extended-resource-toleration"
GPU = dra.GPU
IMPLICIT = "deviceclass.resource.kubernetes.io/" + dra.GPU_CLASS


def T(name: str) -> dict[str, Any]:
    return tol(name, "Exists", effect="NoSchedule")


def gpu_pod(*claims: tuple[str, str, str], **kw: Any) -> dict[str, Any]:
    return pod(resourceClaims=dra.pod_claims(*claims), **kw)


CLUSTER = [
    dra.device_class(extended=GPU),
    dra.device_class("plain.example.com"),
    dra.device_class("fpga.example.com", extended="example.com/fpga"),
    dra.claim_template("gpu-claim"),
    dra.claim_template("plain-claim", dra.exactly("dev", "plain.example.com")),
    dra.claim_template(
        "either",
        dra.first_available("accel", ("big", dra.GPU_CLASS), ("small", "fpga.example.com")),
    ),
    dra.claim_template("ghost-class", dra.exactly("dev", "missing.example.com")),
    dra.resource_claim("shared-gpu", namespace="default"),
    dra.resource_claim("other-ns", namespace="team-b"),
]


def decide(obj: dict[str, Any], settings: dict[str, Any], cluster: Any = None) -> Any:
    view = cluster if cluster is not None else StaticCluster(CLUSTER)
    return decide_alone(NAME, obj, settings=settings, cluster=view)


def tolerations_after(outcome: Any, obj: dict[str, Any]) -> list[dict[str, Any]]:
    stored = outcome.obj if outcome.obj is not None else obj
    return list(stored["spec"].get("tolerations", []))


ON = {"deviceClaims": True}

PLAIN_NODES = "dedicated.example.com/plain"
ACCEL = "example.com/accelerator"
#: ``enforce`` guarding the GPU's own key, the key deviceClassTaints names, and a key earned
#: only through earnedBy: a class's claim, or any example.com/ resource.
GUARDED = {
    "guarded": [
        {"taintKey": GPU},
        {"taintKey": PLAIN_NODES},
        {
            "taintKey": "example.com/plain-pool",
            "earnedBy": {"deviceClasses": ["plain.example.com"]},
        },
        {"taintKey": ACCEL, "earnedBy": {"resourcePrefixes": ["example.com/fp"]}},
    ]
}

ADDED: list[tuple[str, dict[str, Any], dict[str, Any], list[dict[str, Any]]]] = [
    (
        "a claim template of a class with an extended resource name tolerates that name",
        gpu_pod(("gpu", "template", "gpu-claim")),
        ON,
        [T(GPU)],
    ),
    (
        "a ResourceClaim by name resolves the same way",
        gpu_pod(("gpu", "claim", "shared-gpu")),
        ON,
        [T(GPU)],
    ),
    (
        "with the setting off the pod is unchanged, as upstream",
        gpu_pod(("gpu", "template", "gpu-claim")),
        {},
        [],
    ),
    (
        "every firstAvailable alternative counts, sorted byte-wise",
        gpu_pod(("accel", "template", "either")),
        ON,
        [T("example.com/fpga"), T(GPU)],
    ),
    (
        "a class without a name gets nothing without deviceClassTaints",
        gpu_pod(("dev", "template", "plain-claim")),
        ON,
        [],
    ),
    (
        "deviceClassTaints names the taint of a class that declares no name",
        gpu_pod(("dev", "template", "plain-claim")),
        {**ON, "deviceClassTaints": {"plain.example.com": "dedicated.example.com/plain"}},
        [T("dedicated.example.com/plain")],
    ),
    (
        "a declared name wins over deviceClassTaints",
        gpu_pod(("gpu", "template", "gpu-claim")),
        {**ON, "deviceClassTaints": {dra.GPU_CLASS: "other.example.com/x"}},
        [T(GPU)],
    ),
    (
        "an implicit deviceclass.resource.kubernetes.io request resolves through its class",
        pod(containers=[container(requests={IMPLICIT: "1"})]),
        ON,
        [T(GPU)],
    ),
    (
        "an implicit request is ignored with the setting off, as upstream",
        pod(containers=[container(requests={IMPLICIT: "1"})]),
        {},
        [],
    ),
    (
        "a claimed name and a requested one give one toleration each, in byte order",
        gpu_pod(
            ("gpu", "template", "gpu-claim"),
            containers=[container(requests={"example.com/a": "1"})],
        ),
        ON,
        [T("example.com/a"), T(GPU)],
    ),
    (
        "the same name claimed and requested gives one toleration",
        gpu_pod(("gpu", "template", "gpu-claim"), containers=[container(requests={GPU: "1"})]),
        ON,
        [T(GPU)],
    ),
    (
        "an existing exact toleration is kept in place",
        gpu_pod(("gpu", "template", "gpu-claim"), tolerations=[T(GPU)]),
        ON,
        [T(GPU)],
    ),
]


@pytest.mark.parametrize(
    ("obj", "settings", "after"), [c[1:] for c in ADDED], ids=[c[0] for c in ADDED]
)
def test_device_claims_add_the_toleration_of_what_they_claim(
    obj: dict[str, Any], settings: dict[str, Any], after: list[dict[str, Any]]
) -> None:
    outcome = decide(obj, settings)
    assert outcome.allowed
    assert tolerations_after(outcome, obj) == after
    assert not outcome.warnings


UNRESOLVED_CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "a template that does not exist",
        gpu_pod(("gpu", "template", "nope")),
        "ResourceClaimTemplate nope in namespace default not found",
    ),
    (
        "a claim in another namespace",
        gpu_pod(("gpu", "claim", "other-ns")),
        "ResourceClaim other-ns in namespace default not found",
    ),
    (
        "a class that does not exist",
        gpu_pod(("dev", "template", "ghost-class")),
        "DeviceClass missing.example.com not found",
    ),
]


@pytest.mark.parametrize(
    ("obj", "problem"), [c[1:] for c in UNRESOLVED_CASES], ids=[c[0] for c in UNRESOLVED_CASES]
)
def test_what_cannot_be_resolved_warns_and_adds_nothing(obj: dict[str, Any], problem: str) -> None:
    outcome = decide(obj, ON)
    assert outcome.allowed
    assert tolerations_after(outcome, obj) == []
    assert len(outcome.warnings) == 1
    assert problem in outcome.warnings[0]
    assert (NAME, UNRESOLVED) in outcome.decisions


def test_a_lookup_that_fails_warns_and_never_refuses() -> None:
    class Broken(Unreachable):
        def resource_claim_template(self, namespace: str, name: str) -> None:
            raise LookupFailure("get resourceclaimtemplates/default/gpu-claim: no answer")

    outcome = decide(
        gpu_pod(("gpu", "template", "gpu-claim")), {**ON, "enforce": GUARDED}, Broken()
    )
    assert outcome.allowed
    assert "cannot be looked up (get resourceclaimtemplates" in outcome.warnings[0]


TOLERATING = [T(GPU)]

ENFORCED: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    (
        "a DRA GPU pod tolerating its resource is admitted with deviceClaims off",
        gpu_pod(("gpu", "template", "gpu-claim"), tolerations=TOLERATING),
        {"enforce": GUARDED},
        True,
    ),
    (
        "a DRA GPU pod tolerating its resource is admitted with deviceClaims on",
        gpu_pod(("gpu", "template", "gpu-claim"), tolerations=TOLERATING),
        {"enforce": GUARDED, **ON},
        True,
    ),
    (
        "a pod with the toleration, no claim and no request is still refused",
        pod(tolerations=TOLERATING),
        {"enforce": GUARDED},
        False,
    ),
    (
        "a claim for another resource does not justify the toleration",
        gpu_pod(("dev", "template", "plain-claim"), tolerations=TOLERATING),
        {"enforce": GUARDED},
        False,
    ),
    (
        "deviceClassTaints justifies the toleration of its key",
        gpu_pod(
            ("dev", "template", "plain-claim"),
            tolerations=[T("dedicated.example.com/plain")],
        ),
        {
            "enforce": GUARDED,
            "deviceClassTaints": {"plain.example.com": "dedicated.example.com/plain"},
        },
        True,
    ),
    (
        "an unresolved claim refuses nothing",
        gpu_pod(("gpu", "template", "nope"), tolerations=TOLERATING),
        {"enforce": GUARDED},
        True,
    ),
    (
        "a claim of a class listed in earnedBy.deviceClasses earns its key",
        gpu_pod(("dev", "template", "plain-claim"), tolerations=[T("example.com/plain-pool")]),
        {"enforce": GUARDED},
        True,
    ),
    (
        "a claim of another class does not earn a key earned by a class",
        gpu_pod(("gpu", "template", "gpu-claim"), tolerations=[T("example.com/plain-pool")]),
        {"enforce": GUARDED},
        False,
    ),
    (
        "the name a claim's class declares is matched against earnedBy.resourcePrefixes",
        gpu_pod(("accel", "template", "either"), tolerations=[T(ACCEL)]),
        {"enforce": GUARDED},
        True,
    ),
    (
        "a claim's toleration of a key nobody guards is never judged",
        gpu_pod(("dev", "template", "plain-claim"), tolerations=[T("example.com/unguarded")]),
        {"enforce": GUARDED},
        True,
    ),
    (
        "an implicit class request justifies its class's resource",
        pod(containers=[container(requests={IMPLICIT: "1"})], tolerations=TOLERATING),
        {"enforce": GUARDED},
        True,
    ),
]


@pytest.mark.parametrize(
    ("obj", "settings", "allowed"), [c[1:] for c in ENFORCED], ids=[c[0] for c in ENFORCED]
)
def test_enforce_counts_what_the_claims_stand_for(
    obj: dict[str, Any], settings: dict[str, Any], allowed: bool
) -> None:
    assert decide(obj, settings).allowed is allowed


def test_the_default_settings_consult_no_device_objects() -> None:
    class Nothing(Unreachable):
        pass  # every DRA lookup would fail, and a failed one warns

    outcome = decide(gpu_pod(("gpu", "template", "gpu-claim")), {}, Nothing())
    assert outcome.allowed and not outcome.warnings and outcome.patch == []


@pytest.mark.parametrize(
    ("settings", "needed"),
    [
        ({}, set()),
        ({"deviceClaims": True}, {"deviceclasses", "resourceclaims", "resourceclaimtemplates"}),
        ({"enforce": GUARDED}, {"deviceclasses", "resourceclaims", "resourceclaimtemplates"}),
        ({"enabled": False, "deviceClaims": True}, set()),
    ],
    ids=[
        "the defaults cache nothing more",
        "deviceClaims caches classes, claims and templates",
        "enforce caches them too, to judge claimed pods",
        "a disabled plugin caches nothing",
    ],
)
def test_the_settings_say_which_objects_the_server_caches(
    settings: dict[str, Any], needed: set[str]
) -> None:
    config = load_config({"plugins": {NAME: settings}}, REGISTRY)
    assert config.lookups(REGISTRY) == needed


@pytest.mark.parametrize(
    ("taints", "message"),
    [
        ({"GPU": "example.com/gpu"}, 'deviceClassTaints: "GPU" is not a device class name'),
        ({"gpu.example.com": "a/b/c"}, 'deviceClassTaints.gpu.example.com: taint key "a/b/c"'),
        ({"gpu.example.com": 3}, "deviceClassTaints.gpu.example.com: must be a string"),
    ],
    ids=["an upper-case class name", "a taint key with two slashes", "a key that is no string"],
)
def test_bad_device_class_taints_are_refused_naming_the_key(
    taints: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("'", "'")):
        load_config({"plugins": {NAME: {"deviceClassTaints": taints}}}, REGISTRY)


def test_a_second_pass_changes_nothing() -> None:
    obj = gpu_pod(("accel", "template", "either"))
    first = decide(obj, ON)
    assert first.obj is not None
    again = decide(first.obj, ON)
    assert again.patch == []


def runtime_class(name: str, *tolerations: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": name,
        "scheduling": {"tolerations": list(tolerations)},
    }


GHOST = ("dev", "template", "ghost-class")  # a template whose DeviceClass does not exist
ENFORCE = {"enforce": GUARDED}

#: (id, pod, settings, operation/old, warned): whether the unresolved class is warned about.
DEPENDS: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], bool]] = [
    (
        "enforce alone: a pod with no toleration gets no warning about its unknown class",
        gpu_pod(GHOST),
        ENFORCE,
        {},
        False,
    ),
    (
        "enforce alone: tolerations of keys nobody guards depend on no class",
        gpu_pod(GHOST, tolerations=[T("dedicated"), T("node.kubernetes.io/not-ready")]),
        ENFORCE,
        {},
        False,
    ),
    (
        "enforce alone: a toleration the containers' requests justify depends on no class",
        gpu_pod(
            GHOST,
            containers=[container(requests={GPU: "1"})],
            tolerations=TOLERATING,
        ),
        ENFORCE,
        {},
        False,
    ),
    (
        "enforce alone: a toleration only a claim could justify depends on the class",
        gpu_pod(GHOST, tolerations=TOLERATING),
        ENFORCE,
        {},
        True,
    ),
    (
        "enforce alone: a toleration the pod's RuntimeClass adds depends on the class too",
        gpu_pod(GHOST, runtimeClassName="gpu-runtime"),
        ENFORCE,
        {},
        True,
    ),
    (
        "enforce alone: a toleration the old pod had already is not judged, so no warning",
        gpu_pod(GHOST, tolerations=TOLERATING),
        ENFORCE,
        {"operation": "UPDATE", "old": gpu_pod(GHOST, tolerations=TOLERATING)},
        False,
    ),
    (
        "deviceClaims: the class decides what is added, so a pod with no toleration is warned",
        gpu_pod(GHOST),
        ON,
        {},
        True,
    ),
    (
        "the defaults resolve nothing and warn about nothing",
        gpu_pod(GHOST, tolerations=TOLERATING),
        {},
        {},
        False,
    ),
]


@pytest.mark.parametrize(
    ("obj", "settings", "request_kw", "warned"),
    [c[1:] for c in DEPENDS],
    ids=[c[0] for c in DEPENDS],
)
def test_an_unresolved_class_is_warned_about_only_where_the_answer_depends_on_it(
    obj: dict[str, Any], settings: dict[str, Any], request_kw: dict[str, Any], warned: bool
) -> None:
    cluster = StaticCluster([*CLUSTER, runtime_class("gpu-runtime", T(GPU))])
    outcome = decide_alone(NAME, obj, settings=settings, cluster=cluster, **request_kw)
    assert outcome.allowed
    found = [w for w in outcome.warnings if "DeviceClass missing.example.com not found" in w]
    assert len(found) == (1 if warned else 0), outcome.warnings
    assert ((NAME, UNRESOLVED) in outcome.decisions) is warned


def test_enforce_makes_no_lookup_for_a_pod_no_claim_could_change() -> None:
    """Linear in what matters: a claimed pod with nothing to judge costs no lookup."""
    cluster = Unreachable()
    outcome = decide(gpu_pod(("gpu", "template", "gpu-claim")), ENFORCE, cluster)
    assert outcome.allowed and not outcome.warnings
    assert cluster.lookups == 0


def test_a_runtime_class_that_cannot_be_looked_up_counts_as_depending() -> None:
    """The class's tolerations are unknown, so the claims may matter: resolve and warn."""
    outcome = decide(
        gpu_pod(("gpu", "template", "gpu-claim"), runtimeClassName="x"), ENFORCE, Unreachable()
    )
    assert outcome.allowed
    assert any("cannot be looked up" in w for w in outcome.warnings)
