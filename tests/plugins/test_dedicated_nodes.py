"""dedicated-nodes: group pinning and enforcement, through the real chain with real
AdmissionReview requests."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import reviews
from tests.command import invoke_cli
from tests.reviews import apply, container, namespace, pod, review, tol
from webhooks.cluster.files import StaticCluster
from webhooks.core.config import ConfigError, load_config
from webhooks.core.plugin import Phase
from webhooks.core.result import Outcome
from webhooks.core.review import decode_patch
from webhooks.plugins import REGISTRY
from webhooks.plugins.dedicated_nodes import NAME, Settings, read_namespace
from webhooks.plugins.pod_toleration_restriction import NOT_WHITELISTED

LABEL = "placement-webhooks.io/dedicated"
NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


ML = namespace("ml", "gpu-team")
WEB = namespace("web")
KUBE_SYSTEM = namespace("kube-system")
CLUSTER = (ML, WEB, KUBE_SYSTEM)

GPU_TEAM = tol("dedicated", "Equal", "gpu-team", "NoSchedule")
REQ = {"key": "dedicated", "operator": "In", "values": ["gpu-team"]}


def ex(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def terms(*items: Any) -> dict[str, Any]:
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": list(items)}}}


def term(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(expressions)}


def decide(
    obj: dict[str, Any],
    *,
    phases: Sequence[Phase] = ("mutate", "validate"),
    cluster: Any = None,
    settings: dict[str, Any] | None = None,
    plugins: dict[str, Any] | None = None,
    only: str | None = NAME,
    **kw: Any,
) -> Outcome:
    config = {"plugins": {NAME: {"enabled": True, **(settings or {})}, **(plugins or {})}}
    view = StaticCluster(CLUSTER) if cluster is None else cluster
    return reviews.decide(obj, config=config, cluster=view, phases=phases, only=only, **kw)


def mutated(obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
    outcome = decide(obj, phases=("mutate",), **kw)
    assert outcome.allowed, outcome.message
    return apply(obj, outcome.patch)


# --- settings -------------------------------------------------------------------------------


def test_defaults_match_the_documented_ones() -> None:
    config = load_config(None, REGISTRY)
    assert not config.plugins[NAME].enabled
    s = config.settings(NAME)
    assert (s.namespace_label, s.key, s.effect, s.enforce) == (
        LABEL,
        "dedicated",
        "NoSchedule",
        True,
    )
    exempt = config.exceptions[-1]
    assert (exempt.name, exempt.plugins, exempt.namespaces, exempt.phases) == (
        f"{NAME}.exemptNamespaces",
        (NAME,),
        ("kube-system",),
        ("validate",),
    )


def test_settings_read_camel_case() -> None:
    config = load_config(
        {
            "plugins": {
                NAME: {
                    "namespaceLabel": "example.com/team",
                    "namespaces": {"ml": "gpu-team"},
                    "effect": "NoExecute",
                    "exemptNamespaces": ["kube-system", "monitoring"],
                }
            }
        },
        REGISTRY,
    )
    s = config.settings(NAME)
    assert s.namespaces == {"ml": "gpu-team"} and s.effect == "NoExecute"
    (exempt,) = [e for e in config.exceptions if e.plugins == (NAME,)]
    assert exempt.namespaces == ("kube-system", "monitoring")


MOVED = [
    ("clusterDefaultNodeSelector", "pool=a", "pod-node-selector"),
    ("nodeSelectorWhitelist", {}, "pod-node-selector"),
    ("defaultTolerations", [], "pod-toleration-restriction"),
    ("tolerationsWhitelist", [], "pod-toleration-restriction"),
    ("memoryPressureToleration", True, "pod-toleration-restriction"),
]


@pytest.mark.parametrize(
    ("key", "value", "plugin"), MOVED, ids=[f"{k} moved to {p}" for k, _, p in MOVED]
)
def test_an_old_namespace_annotation_setting_names_the_plugin_that_took_it(
    key: str, value: Any, plugin: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"plugins": {NAME: {key: value}}}, REGISTRY)
    assert str(caught.value).startswith(
        f"plugins.{NAME}.{key}: moved to plugins.{plugin}.{key} (the {plugin} plugin"
    )


def test_the_readme_config_block_loads_and_documents_the_defaults() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    configuration = readme[readme.index("\n## Configuration") :]
    block = re.search(r"```yaml\n(.*?)```", configuration, re.S)
    assert block is not None
    config = load_config(yaml.safe_load(block.group(1)), REGISTRY)
    defaults = load_config(None, REGISTRY)
    for name in (NAME, "extended-resource-toleration"):
        assert config.plugins[name] == defaults.plugins[name]


# --- membership -----------------------------------------------------------------------------

MEMBERSHIP: list[tuple[str, str, dict[str, Any] | None, dict[str, Any], str | None]] = [
    ("the label names the group", "ml", ML, {}, "gpu-team"),
    ("an unlabelled namespace has no group", "web", WEB, {}, None),
    ("an empty label value means no group", "x", namespace("x", ""), {}, None),
    ("the static map wins over the label", "ml", ML, {"namespaces": {"ml": "other"}}, "other"),
    ("the static map needs no Namespace object", "gone", None, {"namespaces": {"gone": "g"}}, "g"),
    ("a missing Namespace is not dedicated", "gone", None, {}, None),
    (
        "a custom label key is read",
        "ml",
        namespace("ml", None) | {"metadata": {"name": "ml", "labels": {"team": "t"}}},
        {"namespace_label": "team"},
        "t",
    ),
    (
        "a pod cannot claim a group: only the Namespace counts",
        "web",
        WEB,
        {},
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "obj", "kw", "group"),
    [c[1:] for c in MEMBERSHIP],
    ids=[c[0] for c in MEMBERSHIP],
)
def test_group_membership(
    name: str, obj: dict[str, Any] | None, kw: dict[str, Any], group: str | None
) -> None:
    assert read_namespace(name, obj, Settings(**kw)).group == group


# --- mutation -------------------------------------------------------------------------------

PIN: list[tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, Any]]] = [
    (
        "a bare pod gets the toleration and a one-term affinity",
        pod(namespace="ml"),
        [GPU_TEAM],
        terms(term(REQ)),
    ),
    (
        "the requirement is ANDed into both of two terms",
        pod(
            namespace="ml", affinity=terms(term(ex("zone", "In", "a")), term(ex("zone", "In", "b")))
        ),
        [GPU_TEAM],
        terms(term(ex("zone", "In", "a"), REQ), term(ex("zone", "In", "b"), REQ)),
    ),
    (
        "a term that already has the requirement gets nothing",
        pod(namespace="ml", affinity=terms(term(REQ), term(ex("zone", "In", "b")))),
        [GPU_TEAM],
        terms(term(REQ), term(ex("zone", "In", "b"), REQ)),
    ),
    (
        "an identical toleration is not duplicated",
        pod(namespace="ml", tolerations=[GPU_TEAM]),
        [GPU_TEAM],
        terms(term(REQ)),
    ),
    (
        "a superset toleration with any effect suffices",
        pod(namespace="ml", tolerations=[tol("dedicated", "Equal", "gpu-team")]),
        [tol("dedicated", "Equal", "gpu-team")],
        terms(term(REQ)),
    ),
    (
        "a toleration for another effect is not a superset",
        pod(namespace="ml", tolerations=[tol("dedicated", "Equal", "gpu-team", "NoExecute")]),
        [tol("dedicated", "Equal", "gpu-team", "NoExecute"), GPU_TEAM],
        terms(term(REQ)),
    ),
    (
        "an empty term is not widened while the others are narrowed",
        pod(namespace="ml", affinity=terms({}, term(ex("zone", "In", "a")))),
        [GPU_TEAM],
        terms({}, term(ex("zone", "In", "a"), REQ)),
    ),
    (
        "a nodeSelector on the group's own label still gets the affinity",
        pod(namespace="ml", nodeSelector={"dedicated": "gpu-team"}),
        [GPU_TEAM],
        terms(term(REQ)),
    ),
    (
        "preferred affinity is left as it is",
        pod(
            namespace="ml",
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": term(ex("zone", "In", "a"))}
                    ]
                }
            },
        ),
        [GPU_TEAM],
        {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term(ex("zone", "In", "a"))}
                ],
                REQUIRED: {"nodeSelectorTerms": [term(REQ)]},
            }
        },
    ),
]


@pytest.mark.parametrize(
    ("obj", "tolerations", "affinity"), [c[1:] for c in PIN], ids=[c[0] for c in PIN]
)
def test_a_dedicated_namespace_pins_its_pods(
    obj: dict[str, Any], tolerations: list[dict[str, Any]], affinity: dict[str, Any]
) -> None:
    after = mutated(obj)
    assert after["spec"]["tolerations"] == tolerations
    assert after["spec"]["affinity"] == affinity


def test_the_patch_appends_to_terms_and_never_replaces_them() -> None:
    obj = pod(
        namespace="ml", affinity=terms(term(ex("zone", "In", "a")), term(ex("zone", "In", "b")))
    )
    outcome = decide(obj, phases=("mutate",))
    base = f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms"
    assert [(op["op"], op["path"]) for op in outcome.patch] == [
        ("add", "/spec/tolerations"),
        ("add", f"{base}/0/matchExpressions/-"),
        ("add", f"{base}/1/matchExpressions/-"),
    ]


def test_custom_key_effect_and_static_group() -> None:
    settings = {"key": "example.com/pool", "effect": "NoExecute", "namespaces": {"web": "batch"}}
    after = mutated(pod(namespace="web"), settings=settings)
    assert after["spec"]["tolerations"] == [tol("example.com/pool", "Equal", "batch", "NoExecute")]
    assert after["spec"]["affinity"] == terms(term(ex("example.com/pool", "In", "batch")))


def test_a_pod_outside_any_group_is_not_pinned() -> None:
    outcome = decide(pod(namespace="web"), phases=("mutate",))
    assert outcome.allowed and outcome.patch == [] and outcome.warnings == ()


def test_warnings_say_what_was_added_and_which_label_decided() -> None:
    outcome = decide(pod(namespace="ml"), phases=("mutate",))
    assert outcome.warnings == (
        f"{NAME}: added toleration dedicated=gpu-team:NoSchedule (namespace label {LABEL})",
        f"{NAME}: added node affinity dedicated In [gpu-team] (namespace label {LABEL})",
    )
    assert "dedicated=gpu-team" in outcome.audit_annotations[NAME]


def test_every_warning_stays_under_120_characters_even_with_long_names() -> None:
    long_group = "g" * 63
    long_label = "a" * 200 + "/" + "b" * 63
    cluster = StaticCluster(
        [
            {
                "kind": "Namespace",
                "metadata": {
                    "name": "ml",
                    "labels": {long_label: long_group},
                },
            }
        ]
    )
    obj = pod(
        namespace="ml",
        affinity=terms(term(ex("zone", "In", "a")), term(ex("dedicated", "In", "o"))),
    )
    outcome = decide(
        obj, phases=("mutate",), cluster=cluster, settings={"namespaceLabel": long_label}
    )
    assert len(outcome.warnings) == 3
    assert all(len(w) < 120 for w in outcome.warnings)
    assert all(w.startswith(f"{NAME}: ") for w in outcome.warnings)


EXCLUDED: list[tuple[str, dict[str, Any], list[str], str]] = [
    (
        "a nodeSelector for another group",
        pod(namespace="ml", nodeSelector={"dedicated": "other"}),
        ["nodeSelector dedicated=other", "group gpu-team", f"namespace label {LABEL}"],
        "spec.nodeSelector.dedicated",
    ),
    (
        "a single term requiring another group",
        pod(namespace="ml", affinity=terms(term(ex("dedicated", "In", "other")))),
        ["nodeSelectorTerms[0] has dedicated In [other]", "group gpu-team"],
        f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0]",
    ),
    (
        "every term excluding the group",
        pod(
            namespace="ml",
            affinity=terms(
                term(ex("zone", "In", "a"), ex("dedicated", "DoesNotExist")),
                term(ex("dedicated", "NotIn", "gpu-team")),
            ),
        ),
        ["nodeSelectorTerms[0] has dedicated DoesNotExist (as does every other term)"],
        f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[1]",
    ),
]


@pytest.mark.parametrize(
    ("obj", "fragments", "field"), [c[1:] for c in EXCLUDED], ids=[c[0] for c in EXCLUDED]
)
def test_a_pod_that_could_never_reach_its_group_is_denied(
    obj: dict[str, Any], fragments: list[str], field: str
) -> None:
    outcome = decide(obj, phases=("mutate",))
    assert not outcome.allowed and outcome.code == 403 and outcome.patch == []
    for fragment in fragments:
        assert fragment in outcome.message
    assert outcome.violations[0].field == field


def test_a_term_that_excludes_the_group_is_warned_about_when_another_term_can_match() -> None:
    obj = pod(
        namespace="ml",
        affinity=terms(term(ex("dedicated", "In", "other")), term(ex("zone", "In", "a"))),
    )
    outcome = decide(obj, phases=("mutate",))
    assert outcome.allowed
    after = apply(obj, outcome.patch)
    assert after["spec"]["affinity"] == terms(
        term(ex("dedicated", "In", "other"), REQ), term(ex("zone", "In", "a"), REQ)
    )
    assert (
        f"{NAME}: nodeSelectorTerms[0] (dedicated In [other]) can never match group gpu-team"
        in (outcome.warnings)
    )


# --- enforcement ----------------------------------------------------------------------------

ENFORCE: list[tuple[str, str, dict[str, Any], bool]] = [
    ("another group's toleration in an undedicated namespace", "web", GPU_TEAM, False),
    ("a bare wildcard", "web", tol(operator="Exists"), False),
    ("the same wildcard in kube-system", "kube-system", tol(operator="Exists"), True),
    ("another group's toleration in kube-system", "kube-system", GPU_TEAM, True),
    ("Exists on the dedicated key", "web", tol("dedicated", "Exists"), False),
    (
        "Exists on the dedicated key with the taint's effect",
        "web",
        tol("dedicated", "Exists", effect="NoSchedule"),
        False,
    ),
    (
        "another group's toleration with no effect",
        "web",
        tol("dedicated", "Equal", "gpu-team"),
        False,
    ),
    ("an omitted operator means Equal", "web", tol("dedicated", value="gpu-team"), False),
    (
        "a toleration for another effect does not tolerate the taint",
        "web",
        tol("dedicated", "Equal", "gpu-team", "NoExecute"),
        True,
    ),
    (
        "a wildcard limited to NoExecute does not tolerate it",
        "web",
        tol(operator="Exists", effect="NoExecute"),
        True,
    ),
    (
        "a wildcard limited to NoSchedule does",
        "web",
        tol(operator="Exists", effect="NoSchedule"),
        False,
    ),
    ("the namespace's own group is allowed", "ml", GPU_TEAM, True),
    (
        "another group from a dedicated namespace",
        "ml",
        tol("dedicated", "Equal", "web-team", "NoSchedule"),
        False,
    ),
    (
        "Exists on the key from a dedicated namespace reaches other groups",
        "ml",
        tol("dedicated", "Exists"),
        False,
    ),
    ("an unrelated toleration", "web", tol("spot", "Exists"), True),
    ("an empty value names no group", "web", tol("dedicated", "Equal", "", "NoSchedule"), True),
    ("Gt on the dedicated key can match numeric groups", "web", tol("dedicated", "Gt", "1"), False),
]


@pytest.mark.parametrize(
    ("ns", "toleration", "allowed"), [c[1:] for c in ENFORCE], ids=[c[0] for c in ENFORCE]
)
def test_enforcement_keeps_other_pods_off_dedicated_nodes(
    ns: str, toleration: dict[str, Any], allowed: bool
) -> None:
    outcome = decide(pod(namespace=ns, tolerations=[toleration]), phases=("validate",))
    assert outcome.allowed is allowed, outcome.message
    if not allowed:
        assert outcome.code == 403
        assert outcome.violations[0].field == "spec.tolerations[0]"


def test_the_denial_names_the_toleration_the_group_and_how_to_get_access() -> None:
    outcome = decide(pod(namespace="web", tolerations=[tol("x", "Exists"), GPU_TEAM]))
    assert outcome.message == (
        "toleration dedicated=gpu-team:NoSchedule (Equal) lets this pod onto the nodes "
        "dedicated to group gpu-team, but namespace web belongs to no dedicated group; a "
        f"cluster admin grants a namespace access by labelling it {LABEL}=gpu-team (or mapping "
        "it in dedicated-nodes namespaces)"
    )
    assert outcome.violations[0].field == "spec.tolerations[1]"


def test_a_wildcard_denial_in_a_dedicated_namespace_says_the_own_toleration_is_automatic() -> None:
    outcome = decide(
        pod(namespace="ml", tolerations=[tol(operator="Exists")]), phases=("validate",)
    )
    assert "tolerates every taint, including the dedicated taint of every group" in outcome.message
    assert "namespace ml belongs to group gpu-team" in outcome.message
    assert "dedicated=gpu-team:NoSchedule added automatically" in outcome.message


@pytest.mark.parametrize(
    ("toleration", "fragment"),
    [
        (tol("dedicated", "Exists"), "tolerates the dedicated taint of every dedicated group"),
        (tol("dedicated", "Lt", "9"), "of every group named by a number in range"),
        (tol(operator="Exists"), "tolerates every taint, including the dedicated taint"),
    ],
    ids=["Exists on the key", "Lt on the key", "the bare wildcard"],
)
def test_broad_denials_say_how_broad_and_how_to_get_access(
    toleration: dict[str, Any], fragment: str
) -> None:
    outcome = decide(pod(namespace="web", tolerations=[toleration]), phases=("validate",))
    assert fragment in outcome.message
    assert outcome.message.endswith(
        f"namespace web belongs to no dedicated group; a cluster admin grants a namespace "
        f"access by labelling it {LABEL}=<group> (or mapping it in dedicated-nodes namespaces)"
    )


def test_enforcement_can_be_turned_off_or_exempt_more_namespaces() -> None:
    obj = pod(namespace="web", tolerations=[tol(operator="Exists")])
    assert decide(obj, settings={"enforce": False}).allowed
    assert decide(obj, settings={"exemptNamespaces": ["web"]}).allowed
    assert not decide(obj, settings={"exemptNamespaces": []}, namespace="kube-system").allowed


# --- UPDATE ---------------------------------------------------------------------------------


def test_update_never_mutates() -> None:
    obj = pod(namespace="ml")
    outcome = decide(obj, operation="UPDATE", old=obj)
    assert outcome.allowed and outcome.patch == []


def test_update_denies_a_newly_added_foreign_toleration() -> None:
    old = pod(namespace="web")
    new = pod(namespace="web", tolerations=[GPU_TEAM])
    outcome = decide(new, operation="UPDATE", old=old)
    assert not outcome.allowed and "group gpu-team" in outcome.message


def test_update_lets_a_pod_keep_a_toleration_it_already_had() -> None:
    old = pod(namespace="web", tolerations=[tol(operator="Exists")])
    new = pod(namespace="web", tolerations=[tol(operator="Exists")])
    new["metadata"]["labels"]["changed"] = "yes"
    assert decide(new, operation="UPDATE", old=old).allowed
    assert not decide(new, operation="CREATE").allowed


# --- missing Namespace (a failed lookup: test_contract.py) ---------------------------------


def test_a_missing_namespace_still_gets_its_static_group() -> None:
    settings = {"namespaces": {"nowhere": "g"}}
    after = mutated(pod(namespace="nowhere"), cluster=StaticCluster(), settings=settings)
    assert after["spec"]["tolerations"] == [tol("dedicated", "Equal", "g", "NoSchedule")]


# --- idempotence over the whole chain ---------------------------------------------------------

SHAPES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("a bare pod", pod(namespace="ml"), {}),
    (
        "several terms, one already holding the requirement",
        pod(namespace="ml", affinity=terms(term(REQ), term(ex("zone", "In", "b")), {})),
        {},
    ),
    (
        "an existing superset toleration",
        pod(namespace="ml", tolerations=[tol("dedicated", "Equal", "gpu-team")]),
        {},
    ),
    (
        "namespace default tolerations and node selector",
        pod(
            namespace="annotated",
            containers=[container(requests={"nvidia.com/gpu": "1", "cpu": "1"})],
        ),
        {},
    ),
    (
        "a NoSchedule wildcard default next to an extended-resource toleration",
        pod(namespace="wild", containers=[container(requests={"nvidia.com/gpu": "1"})]),
        {},
    ),
    (
        "a term that can never match plus one that can",
        pod(
            namespace="ml",
            affinity=terms(term(ex("dedicated", "In", "x")), term(ex("zone", "In", "a"))),
        ),
        {},
    ),
]

IDEMPOTENCE_CLUSTER = StaticCluster(
    [
        ML,
        namespace(
            "annotated",
            "gpu-team",
            {
                NODE_SELECTOR: "pool=gpu",
                DEFAULTS: json.dumps(
                    [tol("team", "Exists"), tol("dedicated", "Equal", "gpu-team")]
                ),
            },
        ),
        namespace(
            "wild", annotations={DEFAULTS: '[{"operator": "Exists", "effect": "NoSchedule"}]'}
        ),
    ]
)


@pytest.mark.parametrize(("obj", "settings"), [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_the_chain_on_its_own_output_gives_no_patch(
    obj: dict[str, Any], settings: dict[str, Any]
) -> None:
    kw = {
        "cluster": IDEMPOTENCE_CLUSTER,
        "settings": {"enforce": False, **settings},
        "plugins": {
            "pod-node-selector": {"enabled": True},
            "pod-toleration-restriction": {"enabled": True},
        },
        "only": None,
        "phases": ("mutate",),
    }
    first = decide(obj, **kw)
    assert first.allowed and first.patch, first.message
    second = decide(apply(obj, first.patch), **kw)
    assert second.allowed and second.patch == []


# --- the "done when", as a new user would try it --------------------------------------


def _review_cli(tmp_path: Path, obj: dict[str, Any], objects: str) -> dict[str, Any]:
    (tmp_path / "config.yaml").write_text(
        f"plugins:\n  {NAME}: {{enabled: true}}\n"
        "  extended-resource-toleration: {enforce: {guarded: [{taintKey: nvidia.com/gpu}]}}\n"
        "  pod-toleration-restriction: {enabled: true}\n"
    )
    (tmp_path / "objects.yaml").write_text(objects)
    (tmp_path / "review.json").write_text(json.dumps(review(obj)))
    result = invoke_cli(
        [
            "review",
            "--config",
            str(tmp_path / "config.yaml"),
            "--objects",
            str(tmp_path / "objects.yaml"),
            str(tmp_path / "review.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


WEB_WHITELIST = json.dumps(
    [
        tol("team", "Exists"),
        tol("node.kubernetes.io/not-ready", "Exists"),
        tol("node.kubernetes.io/unreachable", "Exists"),
    ]
)
WEB_DEFAULTS = json.dumps([tol("team", "Equal", "web", "NoSchedule")])
OBJECTS = f"""\
apiVersion: v1
kind: Namespace
metadata:
  name: ml
  labels: {{{LABEL}: gpu-team}}
---
apiVersion: v1
kind: Namespace
metadata:
  name: web
  annotations:
    {DEFAULTS}: '{WEB_DEFAULTS}'
    {WHITELIST}: '{WEB_WHITELIST}'
"""


def test_done_when_two_terms_come_back_pinned_and_unchanged_the_second_time(tmp_path: Path) -> None:
    obj = pod(
        namespace="ml", affinity=terms(term(ex("zone", "In", "a")), term(ex("zone", "In", "b")))
    )
    first = _review_cli(tmp_path, obj, OBJECTS)
    assert first["response"]["allowed"]
    after = apply(obj, decode_patch(first))
    assert GPU_TEAM in after["spec"]["tolerations"]
    for t in after["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]:
        assert REQ in t["matchExpressions"]
    again = _review_cli(tmp_path, after, OBJECTS)
    assert again["response"]["allowed"] and "patch" not in again["response"]


@pytest.mark.parametrize(
    ("ns", "toleration", "allowed"),
    [
        ("web", GPU_TEAM, False),
        ("web", tol(operator="Exists"), False),
        ("kube-system", GPU_TEAM, True),
        ("kube-system", tol(operator="Exists"), True),
    ],
    ids=[
        "web tolerating gpu-team is denied",
        "web with a bare Exists is denied",
        "the same gpu-team pod in kube-system is allowed",
        "the same wildcard pod in kube-system is allowed",
    ],
)
def test_done_when_foreign_tolerations_are_denied(
    tmp_path: Path, ns: str, toleration: dict[str, Any], allowed: bool
) -> None:
    out = _review_cli(tmp_path, pod(namespace=ns, tolerations=[toleration]), OBJECTS)
    assert out["response"]["allowed"] is allowed
    if not allowed:
        assert out["response"]["status"]["code"] == 403


def test_done_when_an_unrequested_gpu_toleration_is_denied(tmp_path: Path) -> None:
    obj = pod(namespace="ml", tolerations=[tol("nvidia.com/gpu", "Exists", effect="NoSchedule")])
    out = _review_cli(tmp_path, obj, OBJECTS)
    assert not out["response"]["allowed"]
    assert (
        "nothing the pod requests or claims earns it (nvidia.com/gpu)"
        in (out["response"]["status"]["message"])
    )


def test_done_when_namespace_defaults_are_given_and_the_whitelist_enforced(tmp_path: Path) -> None:
    out = _review_cli(tmp_path, pod(namespace="web"), OBJECTS)
    assert out["response"]["allowed"], out["response"].get("status")
    assert {"key": "team", "operator": "Equal", "value": "web", "effect": "NoSchedule"} in apply(
        pod(namespace="web"), decode_patch(out)
    )["spec"]["tolerations"]
    denied = _review_cli(
        tmp_path, pod(namespace="web", tolerations=[tol("spot", "Exists")]), OBJECTS
    )
    assert denied["response"]["status"]["message"] == NOT_WHITELISTED.format(scope="namespace")


def test_mirror_pods_are_neither_pinned_nor_judged() -> None:
    obj = pod(namespace="ml", tolerations=[tol(operator="Exists")])
    obj["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc123"}
    outcome = decide(obj)
    assert outcome.allowed and outcome.patch == []


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("a spec that is not an object", {"spec": "junk"}, "/spec"),
    (
        "tolerations that are not a list",
        {"spec": {"tolerations": "junk", "containers": []}},
        "/spec/tolerations",
    ),
]


@pytest.mark.parametrize(
    ("obj", "untouched"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_fields_are_left_for_api_validation(obj: dict[str, Any], untouched: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, **obj}
    outcome = decide(body)
    assert outcome.allowed, outcome.message
    assert not [op for op in outcome.patch if op["path"].startswith(untouched)]
