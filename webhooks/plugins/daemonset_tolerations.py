"""daemonset-tolerations: the DaemonSet controller's default tolerations (spec §4).

Why it exists: a DaemonSet pod must keep running on a node that is not ready, unreachable,
under resource pressure or cordoned, because it is usually what makes the node work (CNI,
log shipping, storage). The DaemonSet controller gives every pod it builds six infinite
tolerations for those node taints (plus network-unavailable for host-network pods), but only
on its private copy of the template, so neither the DaemonSet nor a dry run shows them.
This plugin writes the same tolerations into DaemonSet templates on CREATE and UPDATE (so
stored objects, ``mutate`` output and reviews show what pods receive) and into pods whose
controller is a DaemonSet (so pods created by other means than the controller match).

Each default goes through AddOrUpdateTolerationInPodSpec (§1b): user tolerations stay first,
defaults already present keep their position, a matching entry with tolerationSeconds is
rewritten without them, entries differing in operator or effect are kept and the default is
added too, and duplicates are never collapsed.

One exception, on templates only: a template that lacks a default but already tolerates it
more broadly (a §1c superset: a wildcard ``operator: Exists``, or the key with no effect)
is left as written. Its pods still get every default from the controller (and from this
plugin) in upstream's order; but PodTolerationRestriction's and RuntimeClass's merges drop
such a default from them again, so a template that carried it would never match its pods,
and ``mutate``'s output would not read back unchanged. Leaving the whole template alone,
rather than writing the other defaults, keeps the order the controller gives the pods.

Operators should know two consequences. A DaemonSet created before the plugin was enabled
gets the defaults on its next UPDATE, which changes its template and so starts a rollout
(its running pods already carry the same tolerations from the controller). GitOps tools that
compare the stored DaemonSet with the manifest client-side see the added tolerations as
drift; server-side diff, or writing the defaults into the manifest (``placement-webhooks
mutate`` prints them), avoids that.

Wrong kind: upstream has no answer here (the helper is not an admission plugin), so a
request whose object contradicts its resource is answered like the RuntimeClass and
anti-affinity plugins answer it, naming the resource's kind:
``Resource was marked with kind DaemonSet but was unable to be converted`` (or ``Pod``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, GroupResource, Mutator, Plugin
from webhooks.core.result import UNCHANGED, Result
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.podspec import DAEMON_SET, POD, POD_SPEC_PATHS, group_of, spec_at
from webhooks.k8s.tolerations import (
    EXISTS,
    NO_EXECUTE,
    NO_SCHEDULE,
    add_or_update_all,
    describe,
    identity,
    subsumed,
    tolerations_of,
)

DAEMONSETS: GroupResource = ("apps", "daemonsets")

NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"

#: The six defaults, in the order upstream applies them (order decides where they land).
DEFAULT_TAINTS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", NO_EXECUTE),
    ("node.kubernetes.io/unreachable", NO_EXECUTE),
    ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/unschedulable", NO_SCHEDULE),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """No settings: the defaults are fixed upstream and DaemonSets rely on all of them."""


def default_tolerations(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tolerations a DaemonSet pod with pod spec ``spec`` must carry, in upstream order.

    Why ``hostNetwork`` matters: only a pod on the host network can run on a node whose pod
    network is not ready yet (that is how CNI agents bootstrap the network).
    """
    taints = list(DEFAULT_TAINTS)
    if spec.get("hostNetwork") is True:
        taints.append((NETWORK_UNAVAILABLE, NO_SCHEDULE))
    return [{"key": key, "operator": EXISTS, "effect": effect} for key, effect in taints]


def with_defaults(
    tolerations: Sequence[dict[str, Any]], defaults: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Apply AddOrUpdateTolerationInPodSpec (§1b) for each default in order.

    Why in that order: a default appended earlier is seen by the later ones exactly as
    upstream folds them (:func:`add_or_update_all`), so the resulting order matches the
    controller's pods.
    """
    return add_or_update_all(tolerations, defaults)


def controlled_by_daemonset(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj``'s controller owner reference is an ``apps`` DaemonSet.

    Why only the controller: a pod merely listing a DaemonSet among non-controller owners is
    not built or managed by the DaemonSet controller, so upstream never gives it the defaults.
    """
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, MAPPING) else None
    if not isinstance(refs, list):
        return False
    for ref in refs:
        if not isinstance(ref, MAPPING) or ref.get("controller") is not True:
            continue
        # Not group_kind: the controller writes apps/v1 into the references it makes, and an
        # extensions one is no DaemonSet controller's.
        if (group_of(ref.get("apiVersion")), ref.get("kind")) == DAEMON_SET:
            return True
    return False


def _summary(before: Sequence[Any], defaults: Sequence[dict[str, Any]]) -> str:
    wanted = {identity(t) for t in defaults}
    present = {identity(t) for t in before if isinstance(t, dict)}
    added = [describe(t) for t in defaults if identity(t) not in present]
    rewritten = [
        describe(t)
        for t in before
        if isinstance(t, dict) and identity(t) in wanted and "tolerationSeconds" in t
    ]
    parts = []
    if added:
        parts.append("added " + ", ".join(added))
    if rewritten:
        parts.append("dropped tolerationSeconds from " + ", ".join(rewritten))
    # Only reachable when a matching entry differs in spelling alone (e.g. `value: ""`).
    return "; ".join(parts) or "rewrote matching default tolerations in place"


def mutate(request: AdmissionRequest, obj: dict[str, Any], ctx: Context) -> Result:
    """Give a DaemonSet's template, or a DaemonSet-controlled pod, the default tolerations.

    Why pods too: the controller already adds them to the pods it creates, but a pod created
    by anything else on its behalf (or before this rule existed, then updated) must match.
    On a pod UPDATE the change only appends entries or drops tolerationSeconds from matching
    ones, which is all the API server allows there (spec §9).
    """
    if request.group_resource == PODS:
        if not controlled_by_daemonset(obj):
            return UNCHANGED
        path = POD_SPEC_PATHS[POD]
    else:
        path = POD_SPEC_PATHS[DAEMON_SET]
    spec = spec_at(obj, path)  # missing on the way: empty, as the API server decodes it
    tolerations = tolerations_of(spec) if spec is not None else None
    if spec is None or tolerations is None:
        return UNCHANGED
    defaults = default_tolerations(spec)
    if request.group_resource != PODS and subsumed(tolerations, defaults):
        return UNCHANGED  # the template is left as written (module docstring)
    editor = Editor(obj)
    editor.set((*path, "tolerations"), with_defaults(tolerations, defaults))
    if not editor.changed:
        return UNCHANGED
    return Result(editor.obj, editor.patch, audit={PLUGIN.name: _summary(tolerations, defaults)})


PLUGIN = Plugin(
    name="daemonset-tolerations",
    summary="Gives DaemonSet templates and DaemonSet pods the controller's default tolerations.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({DAEMONSETS, PODS}), frozenset({"CREATE", "UPDATE"})),
    wrong_kind="Resource was marked with kind {expected} but was unable to be converted",
    precedes_admission=True,
)
