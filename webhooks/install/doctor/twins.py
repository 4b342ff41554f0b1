"""``in-tree-twins``: is the in-tree admission plugin an enabled plugin of ours reimplements
also on in the API server?

How it is seen: the API server is asked to create pods with ``dryRun=All`` (nothing is
stored) in a namespace none of our webhooks is sent (their ``namespaceSelector`` and
``objectSelector`` leave it out: the suite's own namespace and ``kube-system`` by default),
so whatever the pod comes back with, or is refused for, is the in-tree plugins' doing. The
twin of each plugin is its :attr:`~webhooks.core.plugin.Plugin.upstream`, the one place
that mapping is kept; how each twin shows itself is :data:`PROBES`:

* DefaultTolerationSeconds: the pod, written without tolerations, comes back with the
  not-ready and unreachable ``NoExecute`` tolerations, and their seconds are the flags'.
* ExtendedResourceToleration: the pod requests the extended resource :data:`RESOURCE` and
  comes back tolerating the taint of that name.
* PodTolerationRestriction: the pod is not BestEffort (it requests CPU), and the in-tree
  plugin gives every such pod the memory-pressure toleration; a namespace whitelist that
  refuses the pod says the same.
* PodNodeSelector: only a namespace selector (the annotation, or the plugin's cluster
  default) shows it, so a namespace carrying the annotation is preferred; where none does
  and the pod comes back without a node selector, the twin cannot be judged and the
  finding says so. Nothing is ever annotated or created for the purpose.
* RuntimeClass: a pod naming a RuntimeClass that does not exist is refused in tree.
* LimitPodHardAntiAffinityTopology: a pod with a hard anti-affinity term over zones is
  refused in tree.

What both on deserves:

* The opt-in twins (ExtendedResourceToleration, PodNodeSelector, PodTolerationRestriction,
  LimitPodHardAntiAffinityTopology) fail. The in-tree plugin acts before any webhook, from
  its own configuration (flags, the admission configuration file), so a pod is mutated or
  judged twice by two policies that drift apart, and what ours adds beyond upstream
  (audit and warn stages, exceptions, ``allowedTopologyKeys``, ``exemptNamespaces``) cannot
  undo what the in-tree one already did or refused. One of the two must go.
* DefaultTolerationSeconds is on in every kube-apiserver unless disabled, and runs before
  the webhooks. It appends its tolerations only where none covers the taint, and so does
  ours (upstream semantics §2), so ours, running second, finds them and adds nothing. With
  the same seconds the pod is exactly what either alone would make, and
  ``namespaceOverrides`` recognises the in-tree entries by those seconds and rewrites them
  as designed: ok. With other seconds the in-tree ones always win, ours never apply and
  ``namespaceOverrides`` cannot recognise what to rewrite: fail, with both fixes (disable
  the in-tree plugin, or give its flags our seconds).
* RuntimeClass is also on by default; both read the same RuntimeClass object, and the
  second run finds the overhead it would set already set and the scheduling merge already
  made, so the pod is the same as with one: ok, and the finding says both are on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from webhooks.core.config import Config
from webhooks.core.plugin import Plugin
from webhooks.install.doctor import rest
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation, config_unknown
from webhooks.k8s.fielderr import go_quote
from webhooks.k8s.labels import parse_label_set
from webhooks.k8s.namespaces import NODE_SELECTOR_ANNOTATION, annotations_of, labels_of
from webhooks.k8s.selectors import matches
from webhooks.plugins import REGISTRY
from webhooks.plugins.anti_affinity_topology import HOSTNAME
from webhooks.plugins.anti_affinity_topology import reason as anti_affinity_reason
from webhooks.plugins.default_toleration_seconds import NOT_READY, UNREACHABLE
from webhooks.plugins.pod_node_selector import CONFLICT as SELECTOR_CONFLICT
from webhooks.plugins.pod_node_selector import NOT_WHITELISTED as SELECTOR_NOT_WHITELISTED
from webhooks.plugins.pod_toleration_restriction import MEMORY_PRESSURE
from webhooks.plugins.pod_toleration_restriction import (
    NOT_WHITELISTED as TOLERATIONS_NOT_WHITELISTED,
)
from webhooks.plugins.runtime_class import NOT_FOUND

CHECK: Final = "in-tree-twins"

#: The labels of every dry-run pod: what a webhook's ``objectSelector`` is judged against.
POD_LABELS: Final = {"app.kubernetes.io/name": "placement-webhooks-doctor"}
#: The extended resource the pod requests (never advertised by a node; the pod is not stored).
RESOURCE: Final = "placement-webhooks.io/doctor-probe"
#: A RuntimeClass name no cluster has: in tree, naming it is refused.
ABSENT_RUNTIME_CLASS: Final = "placement-webhooks-doctor-absent"
#: A topology key the in-tree anti-affinity plugin refuses in a hard term.
ZONE: Final = "topology.kubernetes.io/zone"
PODS_PATH: Final = "/api/v1/namespaces/{namespace}/pods"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the API server made of one dry-run pod: the pod, or the refusal's message."""

    namespace: str
    pod: Mapping[str, Any] | None = None
    refused: str = ""


@dataclass(frozen=True, slots=True)
class Seen:
    """Whether a twin is on (``None``: cannot be judged, ``why`` says why) and what it did."""

    on: bool | None
    why: str = ""
    detail: Mapping[str, Any] | None = None


def _base_pod(**spec: Any) -> dict[str, Any]:
    """A pod that passes validation and the restricted Pod Security level, with ``spec``."""
    container: dict[str, Any] = {
        "name": "probe",
        "image": "registry.k8s.io/pause:3.10",
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "placement-webhooks-doctor-", "labels": dict(POD_LABELS)},
        "spec": {
            "automountServiceAccountToken": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 65534,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
            **spec,
        },
    }


def mutation_pod() -> dict[str, Any]:
    """No tolerations, a CPU request (not BestEffort) and one of :data:`RESOURCE`."""
    return _base_pod(
        container={"resources": {"requests": {"cpu": "1m"}, "limits": {RESOURCE: "1"}}}
    )


def runtime_class_pod() -> dict[str, Any]:
    """A pod naming :data:`ABSENT_RUNTIME_CLASS`."""
    return _base_pod(runtimeClassName=ABSENT_RUNTIME_CLASS)


def anti_affinity_pod() -> dict[str, Any]:
    """A pod with a hard anti-affinity term over :data:`ZONE`."""
    term = {"labelSelector": {"matchLabels": dict(POD_LABELS)}, "topologyKey": ZONE}
    return _base_pod(
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )


def _tolerations(outcome: Outcome) -> list[dict[str, Any]]:
    spec = (outcome.pod or {}).get("spec")
    found = spec.get("tolerations") if isinstance(spec, dict) else None
    return [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []


def _has(outcome: Outcome, key: str, effect: str) -> dict[str, Any] | None:
    for toleration in _tolerations(outcome):
        if (
            toleration.get("key") == key
            and toleration.get("effect") == effect
            and toleration.get("operator") == "Exists"
        ):
            return toleration
    return None


def _refused_otherwise(outcome: Outcome) -> Seen:
    return Seen(None, f"the dry-run pod in {outcome.namespace} was refused: {outcome.refused}")


def seen_default_toleration_seconds(outcome: Outcome, namespace: Mapping[str, Any]) -> Seen:
    """On when the pod came back with the not-ready and unreachable tolerations."""
    if outcome.pod is None:
        return _refused_otherwise(outcome)
    found = {key: _has(outcome, key, "NoExecute") for key in (NOT_READY, UNREACHABLE)}
    if all(found.values()):
        return Seen(True, detail={k: (t or {}).get("tolerationSeconds") for k, t in found.items()})
    return Seen(False)


def seen_extended_resource_toleration(outcome: Outcome, namespace: Mapping[str, Any]) -> Seen:
    """On when the pod came back tolerating the taint named after :data:`RESOURCE`."""
    if outcome.pod is None:
        return _refused_otherwise(outcome)
    return Seen(_has(outcome, RESOURCE, "NoSchedule") is not None)


def seen_pod_toleration_restriction(outcome: Outcome, namespace: Mapping[str, Any]) -> Seen:
    """On when the pod came back with the memory-pressure toleration, or a whitelist
    refused it."""
    if outcome.pod is None:
        if TOLERATIONS_NOT_WHITELISTED.split("{scope}", 1)[0] in outcome.refused:
            return Seen(True)
        return _refused_otherwise(outcome)
    return Seen(_has(outcome, MEMORY_PRESSURE["key"], MEMORY_PRESSURE["effect"]) is not None)


def seen_pod_node_selector(outcome: Outcome, namespace: Mapping[str, Any]) -> Seen:
    """On when the pod came back with a node selector (it was sent with none); off only
    when the namespace has a non-empty selector annotation that did not arrive."""
    if outcome.pod is None:
        if SELECTOR_CONFLICT in outcome.refused or SELECTOR_NOT_WHITELISTED in outcome.refused:
            return Seen(True)
        return _refused_otherwise(outcome)
    spec = outcome.pod.get("spec")
    selector = spec.get("nodeSelector") if isinstance(spec, dict) else None
    if isinstance(selector, dict) and selector:
        return Seen(True, detail=selector)
    text = annotations_of(namespace).get(NODE_SELECTOR_ANNOTATION)
    try:
        imposed = parse_label_set(text) if isinstance(text, str) else {}
    except ValueError:
        imposed = {}
    if imposed:
        return Seen(False)
    return Seen(
        None,
        f"no namespace our webhooks skip carries a non-empty {NODE_SELECTOR_ANNOTATION} "
        f"annotation, and in {outcome.namespace} the in-tree plugin would change nothing",
    )


def seen_runtime_class(outcome: Outcome, namespace: Mapping[str, Any]) -> Seen:
    """On when the pod naming a missing RuntimeClass was refused for it."""
    if outcome.pod is not None:
        return Seen(False)
    if NOT_FOUND.format(name=go_quote(ABSENT_RUNTIME_CLASS)) in outcome.refused:
        return Seen(True)
    return _refused_otherwise(outcome)


def seen_anti_affinity(outcome: Outcome, namespace: Mapping[str, Any]) -> Seen:
    """On when the pod with a zone-wide hard anti-affinity term was refused for it."""
    if outcome.pod is not None:
        return Seen(False)
    if anti_affinity_reason(ZONE, (HOSTNAME,)) in outcome.refused:
        return Seen(True)
    return _refused_otherwise(outcome)


@dataclass(frozen=True, slots=True)
class Probe:
    """How one in-tree plugin shows itself: the pod to send, how to read the outcome, and
    what both on does (``""``: both on is harmless, judged by :func:`_default_seconds` or
    said as ok)."""

    pod: Callable[[], dict[str, Any]]
    seen: Callable[[Outcome, Mapping[str, Any]], Seen]
    both_on: str


PROBES: Final[Mapping[str, Probe]] = {
    "PodNodeSelector": Probe(
        mutation_pod,
        seen_pod_node_selector,
        "it merges the selector of its own configuration before any webhook and refuses a pod "
        "that contradicts it, so our plugin's whitelist, stages and exceptions cannot undo it",
    ),
    "DefaultTolerationSeconds": Probe(mutation_pod, seen_default_toleration_seconds, ""),
    "PodTolerationRestriction": Probe(
        mutation_pod,
        seen_pod_toleration_restriction,
        "it merges and whitelists tolerations from its own configuration before any webhook, "
        "so our plugin's stages and exceptions cannot undo what it added or refused",
    ),
    "ExtendedResourceToleration": Probe(
        mutation_pod,
        seen_extended_resource_toleration,
        "every pod requesting an extended resource is mutated twice, and the in-tree copy "
        "keeps tolerating where ours is turned off, staged or skipped",
    ),
    "RuntimeClass": Probe(runtime_class_pod, seen_runtime_class, ""),
    "LimitPodHardAntiAffinityTopology": Probe(
        anti_affinity_pod,
        seen_anti_affinity,
        "it refuses before any webhook, so our plugin's allowedTopologyKeys, stages and exceptions "
        "never take effect",
    ),
}


def _pod_webhooks(configurations: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The webhooks (of every configuration) whose rules cover pods."""
    found: list[Mapping[str, Any]] = []
    for configuration in configurations:
        for hook in configuration.get("webhooks") or []:
            if not isinstance(hook, dict):
                continue
            resources = {
                r.split("/")[0]
                for rule in hook.get("rules") or []
                if isinstance(rule, dict)
                for r in rule.get("resources") or []
                if isinstance(r, str)
            }
            if resources & {"pods", "*"}:
                found.append(hook)
    return found


def unseen(namespace: Mapping[str, Any], configurations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a dry-run pod in ``namespace`` reaches none of our pod webhooks.

    Why both selectors: a webhook is called only when its ``namespaceSelector`` matches the
    namespace's labels and its ``objectSelector`` the pod's; either one leaving it out is
    enough. A selector that cannot be read counts as matching: the namespace is then not
    used, which can only cost a judgement, never make a wrong one.
    """
    labels = labels_of(namespace)
    for hook in _pod_webhooks(configurations):
        try:
            in_namespace = matches(hook.get("namespaceSelector") or {}, labels)
            on_object = matches(hook.get("objectSelector") or {}, POD_LABELS)
        except (KeyError, TypeError, AttributeError):
            return False
        if in_namespace and on_object:
            return False
    return True


def candidates(
    namespaces: Sequence[Mapping[str, Any]],
    configurations: Sequence[Mapping[str, Any]],
    home: str,
    others: Sequence[Mapping[str, Any]] = (),
) -> list[Mapping[str, Any]]:
    """The namespaces no webhook of ours sees a dry-run pod in, best first.

    Why this order: first those no other mutating webhook (``others``: the cluster's other
    configurations) sees either, since what such a webhook adds to the pod could be taken
    for an in-tree plugin's doing; among them the suite's own namespace (``home``), which
    exists wherever it runs and is never sent to it, then ``kube-system``, then the rest by
    name. Terminating namespaces refuse every create and are left out.
    """
    usable = [
        ns
        for ns in namespaces
        if (ns.get("status") or {}).get("phase") != "Terminating" and unseen(ns, configurations)
    ]
    mutating = [c for c in others if c.get("kind") == "MutatingWebhookConfiguration"]

    def rank(ns: Mapping[str, Any]) -> tuple[bool, int, str]:
        name = str((ns.get("metadata") or {}).get("name", ""))
        return (not unseen(ns, mutating), {home: 0, "kube-system": 1}.get(name, 2), name)

    return sorted(usable, key=rank)


def _annotated(namespace: Mapping[str, Any]) -> bool:
    text = annotations_of(namespace).get(NODE_SELECTOR_ANNOTATION)
    try:
        return isinstance(text, str) and bool(parse_label_set(text))
    except ValueError:
        return False


def _name(namespace: Mapping[str, Any]) -> str:
    return str((namespace.get("metadata") or {}).get("name", ""))


def _send(installation: Installation, namespace: str, pod: dict[str, Any]) -> Outcome:
    try:
        made = rest.dry_run_create(installation, PODS_PATH.format(namespace=namespace), pod)
    except rest.Refused as exc:
        return Outcome(namespace, refused=exc.message or f"HTTP {exc.status}")
    return Outcome(namespace, pod=made)


def _ours_seconds(config: Config, plugin: Plugin) -> dict[str, int]:
    settings = config.settings(plugin.name)
    return {
        NOT_READY: int(settings.not_ready_seconds),
        UNREACHABLE: int(settings.unreachable_seconds),
    }


def _fix(plugin: Plugin) -> str:
    return (
        f"remove {plugin.upstream} from kube-apiserver's --enable-admission-plugins (or add it "
        f"to --disable-admission-plugins), or disable ours (plugins.{plugin.name}.enabled: false)"
    )


def judge(plugin: Plugin, seen: Seen, config: Config) -> Finding:
    """The finding for ``plugin`` given what was seen of its twin."""
    twin = plugin.upstream
    if seen.on is None:
        return Finding(
            CHECK,
            Status.WARN,
            f"{plugin.name}: whether the in-tree {twin} is also on could not be judged: {seen.why}",
            f"check kube-apiserver's --enable-admission-plugins for {twin}",
        )
    if not seen.on:
        return Finding(CHECK, Status.OK, f"{plugin.name}: the in-tree {twin} is off")
    if twin == "DefaultTolerationSeconds":
        theirs = dict(seen.detail or {})
        ours = _ours_seconds(config, plugin)
        shown = f"{theirs.get(NOT_READY)} s / {theirs.get(UNREACHABLE)} s"
        if theirs == ours:
            return Finding(
                CHECK,
                Status.OK,
                f"{plugin.name}: the in-tree {twin} is also on with the same seconds ({shown}); "
                "it adds them first and ours finds them there: harmless",
            )
        return Finding(
            CHECK,
            Status.FAIL,
            f"{plugin.name}: the in-tree {twin} is also on and adds not-ready/unreachable "
            f"tolerations of {shown} before any webhook, so ours "
            f"({ours[NOT_READY]} s / {ours[UNREACHABLE]} s) never apply",
            f"add {twin} to kube-apiserver's --disable-admission-plugins, or start it with "
            f"--default-not-ready-toleration-seconds={ours[NOT_READY]} "
            f"--default-unreachable-toleration-seconds={ours[UNREACHABLE]}",
        )
    probe = PROBES[twin]
    if not probe.both_on:
        return Finding(
            CHECK,
            Status.OK,
            f"{plugin.name}: the in-tree {twin} is also on; both read the same object and the "
            "second run changes nothing: harmless",
        )
    return Finding(
        CHECK,
        Status.FAIL,
        f"{plugin.name}: the in-tree {twin} is also on: {probe.both_on}",
        _fix(plugin),
    )


def check(installation: Installation) -> list[Finding]:
    """One finding per enabled plugin that has an in-tree twin (see the module's docstring)."""
    config = installation.config
    if config is None:
        return [
            config_unknown(
                installation,
                CHECK,
                "which plugins are enabled is unknown, so their in-tree twins",
            )
        ]
    plugins = [p for p in config.chain(REGISTRY) if p.upstream in PROBES]
    if not plugins:
        return [
            Finding(CHECK, Status.OK, "no enabled plugin reimplements an in-tree admission plugin")
        ]
    try:
        listed = rest.get(installation, "/api/v1/namespaces").get("items") or []
    except rest.Refused as exc:
        return [_unjudged(plugins, f"the namespaces could not be listed: {exc.message}")]
    namespaces = candidates(
        [ns for ns in listed if isinstance(ns, dict)],
        installation.configurations,
        installation.namespace,
        installation.others,
    )
    if not namespaces:
        return [_unjudged(plugins, "every namespace is sent to our webhooks")]
    first = namespaces[0]
    # PodNodeSelector shows itself only through a namespace's selector: prefer one with it.
    wants_selector = any(p.upstream == "PodNodeSelector" for p in plugins)
    annotated = [ns for ns in namespaces if _annotated(ns)]
    mutation_ns = annotated[0] if wants_selector and annotated else first
    outcomes: dict[Callable[[], dict[str, Any]], tuple[Outcome, Mapping[str, Any]]] = {}
    findings: list[Finding] = []
    for plugin in plugins:
        probe = PROBES[plugin.upstream]
        if probe.pod not in outcomes:
            namespace = mutation_ns if probe.pod is mutation_pod else first
            outcomes[probe.pod] = (_send(installation, _name(namespace), probe.pod()), namespace)
        outcome, namespace = outcomes[probe.pod]
        findings.append(judge(plugin, probe.seen(outcome, namespace), config))
    return findings


def _unjudged(plugins: Sequence[Plugin], why: str) -> Finding:
    names = ", ".join(p.name for p in plugins)
    return Finding(
        CHECK,
        Status.WARN,
        f"whether the in-tree twins of {names} are also on could not be judged: {why}",
        "check kube-apiserver's --enable-admission-plugins and --disable-admission-plugins",
    )
