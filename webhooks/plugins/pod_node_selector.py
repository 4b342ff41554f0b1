"""pod-node-selector: the PodNodeSelector admission plugin (spec §6).

Why it exists: a cluster shared between tenants keeps each namespace's pods on that
namespace's nodes by giving the namespace a node selector
(``scheduler.alpha.kubernetes.io/node-selector: "k=v,k2=v2"``) that every new pod there must
carry. Upstream ships this as an opt-in kube-apiserver plugin, and managed clusters do not
let it be enabled; this plugin is the same rule as a webhook, messages included.

Settings (``plugins.pod-node-selector``; disabled by default, as upstream):

``clusterDefaultNodeSelector``  the selector for namespaces without the annotation
                                (upstream's ``clusterDefaultNodeSelector``), ``k=v,...``.
``nodeSelectorWhitelist``       ``{namespace: "k=v,..."}``: the pairs a pod of that namespace
                                may select (upstream's per-namespace config entries).

On CREATE it merges the namespace's selector (the annotation when present, even empty;
otherwise the cluster default) into ``spec.nodeSelector``, refusing a pod whose own selector
contradicts it, and then checks the whitelist, as upstream's Admit ends with its own
validation; the validating half checks both again on the final object. Where upstream has no
answer offline, a Namespace that does not exist counts as one without annotations (the API
server refuses pods of a missing namespace before any webhook runs), and an annotation that
does not parse refuses the pod with a message naming the namespace and the annotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin, Validator
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.excerpt import clip, show
from webhooks.k8s.fielderr import pod_forbidden
from webhooks.k8s.labels import first_conflict, format_label_set, is_subset, parse_label_set
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.namespaces import NODE_SELECTOR_ANNOTATION, annotations_of
from webhooks.k8s.podspec import spec_at

NAME = "pod-node-selector"

# Upstream's exact reasons (spec §6); the message is ``pods "<name>" is forbidden: <reason>``.
CONFLICT = "pod node label selector conflicts with its namespace node label selector"
NOT_WHITELISTED = "pod node label selector labels conflict with its namespace whitelist"
FIELD = "spec.nodeSelector"
#: Where an imposed selector came from, as the audit annotation says it.
ANNOTATED = "namespace annotation"
CLUSTER_DEFAULT = "clusterDefaultNodeSelector"
# The names of the derived values, built once.
_SELECTOR, _WHITELISTS = f"{NAME}/selector", f"{NAME}/whitelists"


@dataclass(frozen=True, slots=True)
class Settings:
    """Upstream's ``podNodeSelectorPluginConfig``; every selector is checked at load."""

    cluster_default_node_selector: str = ""
    node_selector_whitelist: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            parse_label_set(self.cluster_default_node_selector)
        except ValueError as exc:
            raise ValueError(f"clusterDefaultNodeSelector: {clip(str(exc))}") from None
        for namespace, text in self.node_selector_whitelist.items():
            try:
                parse_label_set(text)
            except ValueError as exc:
                raise ValueError(
                    f"nodeSelectorWhitelist: namespace {show(namespace)}: {clip(str(exc))}"
                ) from None


class _Unreadable(ValueError):
    """The namespace's node-selector annotation does not parse; the message says where."""


@dataclass(frozen=True, slots=True)
class Imposed:
    """What a Namespace imposes: the selector and where it came from, or why it cannot.

    Why a value with the failure in it: it is derived once per Namespace version and kept
    (:mod:`webhooks.core.derived`), and an annotation that does not parse must give its
    error on every review that meets it.
    """

    selector: Mapping[str, str]
    origin: str
    error: str = ""


def _imposed(namespace: Mapping[str, Any] | None, settings: Settings) -> Imposed:
    found = annotations_of(namespace)
    if NODE_SELECTOR_ANNOTATION in found:
        text = found[NODE_SELECTOR_ANNOTATION]
        try:
            return Imposed(parse_label_set(text if isinstance(text, str) else ""), ANNOTATED)
        except ValueError as exc:
            return Imposed({}, ANNOTATED, str(exc))
    return Imposed(parse_label_set(settings.cluster_default_node_selector), CLUSTER_DEFAULT)


def namespace_selector(request: AdmissionRequest, ctx: Context) -> tuple[Mapping[str, str], str]:
    """The selector the pod's namespace imposes, and where it came from.

    Why a present annotation wins even when empty: upstream applies the cluster default only
    to namespaces that do not have the annotation at all (spec §6). Parsed once per
    Namespace version; the selector is shared, so it is read, never changed.
    """
    settings: Settings = ctx.settings
    imposed = ctx.derived.of(
        "Namespace",
        ctx.cluster.namespace(request.namespace),
        _SELECTOR,
        lambda ns: _imposed(ns, settings),
    )
    if imposed.error:
        raise _Unreadable(
            f"namespace {request.namespace!r} annotation {NODE_SELECTOR_ANNOTATION}: "
            f"{imposed.error}"
        )
    return imposed.selector, imposed.origin


def _whitelists(settings: Settings) -> dict[str, dict[str, str]]:
    return {ns: parse_label_set(text) for ns, text in settings.node_selector_whitelist.items()}


def _selector(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    value = spec.get("nodeSelector")
    if value is None:
        return {}
    return value if isinstance(value, MAPPING) else None


def _outside_whitelist(
    request: AdmissionRequest, pod: Mapping[str, Any], selector: Mapping[str, Any], ctx: Context
) -> list[Violation]:
    """The second check of upstream's Validate: the selector within the namespace's whitelist."""
    whitelists = ctx.derived.of("Settings", ctx.settings, _WHITELISTS, _whitelists)
    allowed = whitelists.get(request.namespace)
    if allowed and not is_subset(selector, allowed):  # none, or an empty one, allows all
        return [Violation(pod_forbidden(pod, NOT_WHITELISTED), FIELD)]
    return []


def _problems(
    request: AdmissionRequest, pod: Mapping[str, Any], selector: Mapping[str, Any], ctx: Context
) -> list[Violation]:
    """Upstream's Validate: the namespace selector, then the namespace's whitelist."""
    try:
        imposed, _ = namespace_selector(request, ctx)
    except _Unreadable as exc:
        return [Violation(str(exc), FIELD)]
    if first_conflict(imposed, selector) is not None:
        return [Violation(pod_forbidden(pod, CONFLICT), FIELD)]
    return _outside_whitelist(request, pod, selector, ctx)


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Merge the namespace's selector into the pod's, then validate as upstream's Admit does.

    Why validate here too: upstream's denial comes before later plugins run, which decides
    which message a pod that several plugins would refuse sees.
    """
    spec = spec_at(pod)  # a missing spec is an empty one, as the API server decodes it
    selector = _selector(spec) if spec is not None else None
    if selector is None:
        return UNCHANGED  # a spec or selector that is not an object cannot be merged into
    try:
        imposed, origin = namespace_selector(request, ctx)
    except _Unreadable as exc:
        return Result(violations=(Violation(str(exc), FIELD),))
    if first_conflict(imposed, selector) is not None:
        return Result(violations=(Violation(pod_forbidden(pod, CONFLICT), FIELD),))
    # Upstream's Validate follows on the merged selector, less what cannot fail there: the
    # namespace selector was just read, and the merge adds only its own pairs to pairs
    # that do not conflict with it. (Reading it again was a sixth of this half's cost.)
    added = {k: v for k, v in imposed.items() if k not in selector}
    if not added:  # already carried (the second pass, pods that name it themselves)
        violations = tuple(_outside_whitelist(request, pod, selector, ctx))
        return Result(violations=violations) if violations else UNCHANGED
    editor = Editor(pod)
    for key in sorted(added):
        editor.set(("spec", "nodeSelector", key), added[key])
    merged = {**selector, **added}
    violations = tuple(_outside_whitelist(request, editor.obj, merged, ctx))
    if not editor.changed:
        return Result(violations=violations) if violations else UNCHANGED
    summary = f"nodeSelector gained {format_label_set(added)} from {origin}"
    return Result(editor.obj, editor.patch, violations=violations, audit={NAME: summary})


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """Upstream's Validate on the final object: no conflict, and within the whitelist.

    Why again after all mutation: a later mutator (a RuntimeClass's nodeSelector) may have
    added a pair the namespace forbids.
    """
    spec = spec_at(pod)
    selector = _selector(spec) if spec is not None else None
    if selector is None:
        return []
    return _problems(request, pod, selector, ctx)


PLUGIN = Plugin(
    name=NAME,
    summary="Gives new pods their namespace's node selector and keeps them within its whitelist.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE"})),
    validate=Validator(validate, frozenset({PODS}), frozenset({"CREATE"})),
    enabled_by_default=False,
    upstream="PodNodeSelector",
)
