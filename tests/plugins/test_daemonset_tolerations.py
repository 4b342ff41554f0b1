"""daemonset-tolerations mirrors AddOrUpdateDaemonPodTolerations (spec §4) on DaemonSet
templates and on DaemonSet-controlled pods."""

from __future__ import annotations

from typing import Any

import pytest

from tests import reviews
from tests.reviews import apply, daemonset, owned_by, pod, request, tol
from webhooks.core.plugin import Context
from webhooks.plugins.daemonset_tolerations import Settings, mutate

NR, UR = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
DP, MP = "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure"
PP, US = "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"
NU = "node.kubernetes.io/network-unavailable"


def D(key: str, effect: str = "NoSchedule") -> dict[str, Any]:
    """A default as upstream writes it: Exists, no value, no tolerationSeconds."""
    return tol(key, "Exists", effect=effect)


NR_D, UR_D = D(NR, "NoExecute"), D(UR, "NoExecute")
SIX = [NR_D, UR_D, D(DP), D(MP), D(PP), D(US)]
FOO = tol("foo", "Equal", "bar", "NoSchedule")
BAR = tol("bar", "Exists", effect="NoExecute", seconds=30)

# (id, tolerations before, hostNetwork, tolerations after)
CASES: list[tuple[str, list[dict[str, Any]] | None, bool | None, list[dict[str, Any]]]] = [
    ("no tolerations get the six defaults in order", None, None, SIX),
    ("an empty list gets the six defaults in order", [], None, SIX),
    ("user tolerations stay first and the defaults are appended", [FOO], None, [FOO, *SIX]),
    (
        "a default already present keeps its position",
        [D(MP), FOO],
        None,
        [D(MP), FOO, NR_D, UR_D, D(DP), D(PP), D(US)],
    ),
    ("all defaults present in another order are left as they are", SIX[::-1], None, SIX[::-1]),
    (
        "a not-ready Exists NoExecute with seconds is rewritten in place without them",
        [FOO, tol(NR, "Exists", effect="NoExecute", seconds=300), BAR],
        None,
        [FOO, NR_D, BAR, UR_D, D(DP), D(MP), D(PP), D(US)],
    ),
    (
        "an unreachable Exists NoExecute with seconds is rewritten in place without them",
        [tol(UR, "Exists", effect="NoExecute", seconds=0)],
        None,
        [UR_D, NR_D, D(DP), D(MP), D(PP), D(US)],
    ),
    (
        "a not-ready toleration with operator Equal is kept and the default added",
        [tol(NR, "Equal", effect="NoExecute", seconds=60)],
        None,
        [tol(NR, "Equal", effect="NoExecute", seconds=60), *SIX],
    ),
    (
        "an omitted operator is not Exists, so the default is added as well",
        [tol(NR, effect="NoExecute")],
        None,
        [tol(NR, effect="NoExecute"), *SIX],
    ),
    (
        "a not-ready toleration with effect NoSchedule is kept and the default added",
        [tol(NR, "Exists", effect="NoSchedule")],
        None,
        [tol(NR, "Exists", effect="NoSchedule"), *SIX],
    ),
    (
        "a memory-pressure toleration with an empty effect is kept and the default added",
        [tol(MP, "Exists")],
        None,
        [tol(MP, "Exists"), *SIX],
    ),
    (
        "a wildcard Exists suppresses no default",
        [tol(operator="Exists")],
        None,
        [tol(operator="Exists"), *SIX],
    ),
    ("hostNetwork adds network-unavailable after the six", None, True, [*SIX, D(NU)]),
    ("hostNetwork false adds no network-unavailable", None, False, SIX),
    (
        "a network-unavailable toleration is never removed without hostNetwork",
        [D(NU)],
        None,
        [D(NU), *SIX],
    ),
    (
        "a network-unavailable toleration keeps its position with hostNetwork",
        [D(NU), FOO],
        True,
        [D(NU), FOO, *SIX],
    ),
    (
        "duplicate defaults are not collapsed",
        [NR_D, NR_D],
        None,
        [NR_D, NR_D, UR_D, D(DP), D(MP), D(PP), D(US)],
    ),
    (
        "duplicate not-ready entries with seconds are both rewritten and both kept",
        [
            tol(NR, "Exists", effect="NoExecute", seconds=300),
            FOO,
            tol(NR, "Exists", effect="NoExecute", seconds=600),
        ],
        None,
        [NR_D, FOO, NR_D, UR_D, D(DP), D(MP), D(PP), D(US)],
    ),
]
CASE_IDS = [c[0] for c in CASES]


def _spec_fields(host_network: bool | None) -> dict[str, Any]:
    return {} if host_network is None else {"hostNetwork": host_network}


def _mutated(obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = mutate(request(obj, **kw), obj, Context(Settings()))
    return result.obj if result.obj is not None else obj


#: Cases whose list already tolerates a missing default more broadly (§1c): a pod gets the
#: defaults as upstream adds them, a template is left as written (see the next table).
BROADER = {
    "a memory-pressure toleration with an empty effect is kept and the default added",
    "a wildcard Exists suppresses no default",
}


@pytest.mark.parametrize(
    ("before", "host_network", "after"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES if c[0] not in BROADER],
)
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_daemonset_template(
    before: list[dict[str, Any]] | None,
    host_network: bool | None,
    after: list[dict[str, Any]],
    operation: str,
) -> None:
    obj = daemonset(tolerations=before, **_spec_fields(host_network))
    final = _mutated(obj, operation=operation, old=obj if operation == "UPDATE" else None)
    assert final["spec"]["template"]["spec"]["tolerations"] == after


LEFT_AS_WRITTEN = [
    pytest.param([tol(operator="Exists")], None, id="a template with a wildcard Exists"),
    pytest.param(
        [tol(MP, "Exists")], None, id="a template whose memory-pressure toleration has no effect"
    ),
    pytest.param(
        [FOO, tol(UR, "Exists")],
        True,
        id="a template whose unreachable toleration has no effect keeps the other defaults out",
    ),
    pytest.param(
        [
            tol(operator="Exists", effect="NoSchedule"),
            tol(NR, "Exists", effect="NoExecute", seconds=300),
        ],
        None,
        id="a NoSchedule wildcard keeps even a not-ready entry with seconds as written",
    ),
]


@pytest.mark.parametrize(("before", "host_network"), LEFT_AS_WRITTEN)
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_template_that_tolerates_a_missing_default_more_broadly_is_left_as_written(
    before: list[dict[str, Any]], host_network: bool | None, operation: str
) -> None:
    """Its pods' merges would drop that default again, so a template carrying it would never
    match its pods; the pods themselves still get every default (the pod table above)."""
    obj = daemonset(tolerations=before, **_spec_fields(host_network))
    old = obj if operation == "UPDATE" else None
    result = mutate(request(obj, operation=operation, old=old), obj, Context(Settings()))
    assert result.obj is None
    controlled = owned_by(pod(tolerations=before, **_spec_fields(host_network)))
    assert len(_mutated(controlled)["spec"]["tolerations"]) > len(before)


@pytest.mark.parametrize(("before", "host_network", "after"), [c[1:] for c in CASES], ids=CASE_IDS)
def test_daemonset_controlled_pod(
    before: list[dict[str, Any]] | None, host_network: bool | None, after: list[dict[str, Any]]
) -> None:
    obj = owned_by(pod(tolerations=before, **_spec_fields(host_network)))
    assert _mutated(obj)["spec"]["tolerations"] == after


OWNERS: list[tuple[str, dict[str, Any], bool]] = [
    ("a pod controlled by an apps/v1 DaemonSet is mutated", owned_by(pod()), True),
    (
        "a pod controlled by an apps/v1beta2 DaemonSet is mutated",
        owned_by(pod(), api_version="apps/v1beta2"),
        True,
    ),
    ("a pod without owner references is untouched", pod(), False),
    ("a pod controlled by a ReplicaSet is untouched", owned_by(pod(), "ReplicaSet"), False),
    (
        "a pod whose DaemonSet reference has controller false is untouched",
        owned_by(pod(), controller=False),
        False,
    ),
    (
        "a pod whose DaemonSet reference omits controller is untouched",
        owned_by(pod(), controller=None),
        False,
    ),
    (
        "a pod controlled by a DaemonSet kind of another API group is untouched",
        owned_by(pod(), api_version="apps.kruise.io/v1alpha1"),
        False,
    ),
    (
        "a pod controlled by a legacy extensions DaemonSet is untouched",
        owned_by(pod(), api_version="extensions/v1beta1"),
        False,
    ),
]


def _with_refs(*refs: dict[str, Any]) -> dict[str, Any]:
    obj = pod()
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": list(refs)}}


_DS_REF = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u1"}
_RS_REF = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u2"}
OWNERS += [
    (
        "a DaemonSet controller listed after another owner still counts",
        _with_refs(_RS_REF, {**_DS_REF, "controller": True}),
        True,
    ),
    (
        "a non-controller DaemonSet next to a controlling ReplicaSet does not count",
        _with_refs({**_DS_REF, "controller": False}, {**_RS_REF, "controller": True}),
        False,
    ),
]


@pytest.mark.parametrize(("obj", "changed"), [o[1:] for o in OWNERS], ids=[o[0] for o in OWNERS])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_only_daemonset_controlled_pods_are_mutated(
    obj: dict[str, Any], changed: bool, operation: str
) -> None:
    old = obj if operation == "UPDATE" else None
    result = mutate(request(obj, operation=operation, old=old), obj, Context(Settings()))
    assert (result.obj is not None) is changed
    if changed:
        assert result.obj is not None
        assert result.obj["spec"]["tolerations"] == SIX


def test_a_pod_built_by_the_controller_is_unchanged() -> None:
    obj = owned_by(pod(tolerations=[FOO, *SIX, D(NU)], hostNetwork=True))
    assert mutate(request(obj), obj, Context(Settings())).obj is None


def only_added_tolerations(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> bool:
    """The API server's pod-update rule (spec §9), as stated: every old toleration must still
    be present with all fields equal except tolerationSeconds; additions are allowed."""

    def without_seconds(t: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in t.items() if k != "tolerationSeconds" and v not in ("", None)}

    return all(any(without_seconds(o) == without_seconds(n) for n in new) for o in old)


def test_the_rule_refuses_a_modified_toleration() -> None:
    # Guards the property test below: the rule as written must be able to say no.
    old = [tol(NR, "Equal", effect="NoExecute", seconds=60)]
    assert not only_added_tolerations(old, [tol(NR, "Exists", effect="NoExecute")])
    assert not only_added_tolerations(old, [])
    assert only_added_tolerations(old, [tol(NR, "Equal", effect="NoExecute"), FOO])


@pytest.mark.parametrize(("before", "host_network"), [(c[1], c[2]) for c in CASES], ids=CASE_IDS)
@pytest.mark.parametrize("user_added", [False, True], ids=["unchanged", "user adds one"])
def test_a_pod_update_stays_within_the_pod_update_rule(
    before: list[dict[str, Any]] | None, host_network: bool | None, user_added: bool
) -> None:
    old = owned_by(pod(tolerations=before, **_spec_fields(host_network)))
    new_list = [*(before or []), *([FOO] if user_added else [])]
    new = owned_by(pod(tolerations=new_list, **_spec_fields(host_network)))
    result = mutate(request(new, operation="UPDATE", old=old), new, Context(Settings()))
    final = result.obj if result.obj is not None else new
    assert only_added_tolerations(before or [], final["spec"]["tolerations"])
    assert only_added_tolerations(new_list, final["spec"]["tolerations"])


def test_the_patch_edits_the_template_list_element_wise() -> None:
    obj = daemonset(tolerations=[FOO, tol(NR, "Exists", effect="NoExecute", seconds=300)])
    result = mutate(request(obj), obj, Context(Settings()))
    base = "/spec/template/spec/tolerations"
    assert result.patch[0] == {"op": "replace", "path": f"{base}/1", "value": NR_D}
    assert [op["op"] for op in result.patch[1:]] == ["add"] * 5
    assert all(op["path"] == f"{base}/-" for op in result.patch[1:])
    assert apply(obj, result.patch) == result.obj


def test_a_missing_list_is_added_whole() -> None:
    obj = daemonset()
    result = mutate(request(obj), obj, Context(Settings()))
    assert result.patch == [{"op": "add", "path": "/spec/template/spec/tolerations", "value": SIX}]


AUDITS: list[tuple[str, dict[str, Any], str]] = [
    (
        "additions and rewrites are both named",
        daemonset(
            tolerations=[tol(NR, "Exists", effect="NoExecute", seconds=300), UR_D],
            hostNetwork=True,
        ),
        "added node.kubernetes.io/disk-pressure:NoSchedule (Exists), "
        "node.kubernetes.io/memory-pressure:NoSchedule (Exists), "
        "node.kubernetes.io/pid-pressure:NoSchedule (Exists), "
        "node.kubernetes.io/unschedulable:NoSchedule (Exists), "
        "node.kubernetes.io/network-unavailable:NoSchedule (Exists); "
        "dropped tolerationSeconds from node.kubernetes.io/not-ready:NoExecute (Exists) "
        "for 300s",
    ),
    (
        "a rewrite alone is named",
        daemonset(tolerations=[*SIX[1:], tol(NR, "Exists", effect="NoExecute", seconds=5)]),
        "dropped tolerationSeconds from node.kubernetes.io/not-ready:NoExecute (Exists) for 5s",
    ),
    (
        "a default spelled with an explicit empty value is rewritten to upstream's form",
        daemonset(tolerations=[*SIX[1:], tol(NR, "Exists", "", "NoExecute")]),
        "rewrote matching default tolerations in place",
    ),
]


@pytest.mark.parametrize(("obj", "summary"), [a[1:] for a in AUDITS], ids=[a[0] for a in AUDITS])
def test_the_audit_annotation_summarises_the_change(obj: dict[str, Any], summary: str) -> None:
    result = mutate(request(obj), obj, Context(Settings()))
    assert result.audit == {"daemonset-tolerations": summary}


@pytest.mark.parametrize(
    "obj",
    [
        daemonset(tolerations="not-a-list"),  # type: ignore[arg-type]
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"}, "spec": []},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": {"template": {"spec": "x"}}},
    ],
    ids=[
        "a template whose tolerations are not a list",
        "a spec that is not an object",
        "a pod spec that is not an object",
    ],
)
def test_malformed_daemonsets_are_left_for_validation(obj: dict[str, Any]) -> None:
    assert mutate(request(obj), obj, Context(Settings())).obj is None


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="a DaemonSet without a template"),
        pytest.param(None, id="a DaemonSet whose spec is null"),
        pytest.param({"template": None}, id="a DaemonSet whose template is null"),
        pytest.param({"template": {"metadata": {}}}, id="a template without a pod spec"),
    ],
)
def test_a_missing_template_reads_as_the_empty_one_the_api_server_decodes(
    spec: dict[str, Any] | None,
) -> None:
    obj = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"}, "spec": spec}
    result = mutate(request(obj), obj, Context(Settings()))
    assert result.obj is not None
    assert result.obj["spec"]["template"]["spec"]["tolerations"] == SIX
    assert apply(obj, result.patch) == result.obj


def test_the_whole_chain_gives_a_daemonset_pod_its_defaults_before_any_other_mutator() -> None:
    # The controller writes them before admission, so this plugin runs first: upstream's
    # DefaultTolerationSeconds then finds not-ready and unreachable covered and adds no
    # 300 s entries, and the pod ends as the DaemonSet controller's pods end.
    obj = owned_by(pod())
    outcome = reviews.decide(obj, phases=("mutate",))
    assert outcome.changed_by == ("daemonset-tolerations",)
    assert apply(obj, outcome.patch)["spec"]["tolerations"] == SIX


def test_the_whole_chain_touches_a_daemonset_only_through_this_plugin() -> None:
    obj = daemonset(tolerations=[FOO])
    outcome = reviews.decide(obj)
    assert outcome.allowed
    assert outcome.changed_by == ("daemonset-tolerations",)
    assert apply(obj, outcome.patch)["spec"]["template"]["spec"]["tolerations"] == [FOO, *SIX]
