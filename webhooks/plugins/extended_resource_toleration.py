"""extended-resource-toleration: the ExtendedResourceToleration admission plugin (spec §3).

Why it exists: operators taint GPU and other device nodes with the resource's name so that
only pods requesting that resource land there; this plugin gives exactly those pods the
matching toleration, so users never have to write it by hand.

The taint only keeps pods off if nobody else tolerates it, so ``enforce`` (off by default,
beyond upstream) adds a validating half. It guards only the taint keys the operator names
(``enforce: {guarded: [{taintKey, earnedBy}]}``): on CREATE and UPDATE it denies a pod
with a toleration of a guarded key that nothing the pod requests or claims earns, outside
``exemptNamespaces`` (default ``kube-system``). A key is earned by a request of its own
name, and by what ``earnedBy`` lists: exact resource names (``resources``), name prefixes
(``resourcePrefixes``: ``nvidia.com/`` lets a MIG pod requesting
``nvidia.com/mig-1g.12gb`` tolerate ``nvidia.com/gpu``) and DeviceClasses a claim of the
pod names (``deviceClasses``). A key nobody named is never judged: a mesh's
``<vendor>.io/not-ready`` toleration keeps nobody's GPU. ``enforce: true``, which used to
judge every domain-prefixed key, is a configuration error that says how to name the keys.
GPU nodes then stay free for GPU pods. Wildcard tolerations have an empty key and are
left to dedicated-nodes' enforcement. On UPDATE only tolerations the old pod lacked are
judged, so existing pods can still be relabelled or finalised; mirror pods of static pods
are skipped.

Pods that get their devices through Dynamic Resource Allocation (``spec.resourceClaims``)
request no extended resource, so upstream gives them nothing. Two settings, beyond
upstream and off by default, make such a pod count as requesting the resource its devices
stand for:

* ``deviceClaims: true``: each claim is resolved (the ResourceClaim, or the
  ResourceClaimTemplate it will be made from, in the pod's namespace), then the
  DeviceClass of every request (every ``firstAvailable`` alternative, since any may be
  picked), then the extended resource name the class declares
  (``spec.extendedResourceName``), or ``deviceClassTaints[class]`` for a class that
  declares none. A container request for a class's implicit name
  ``deviceclass.resource.kubernetes.io/<class>`` resolves through the same class. The pod
  gets the toleration it would get for a request of that name, in the same byte-wise
  order.
* ``deviceClassTaints: {<device class>: <taint key>}``: the key for classes that declare
  no extended resource name (the taint the nodes with those devices carry).

With ``enforce`` on, the names the pod's claims resolve to count as requested whether or
not ``deviceClaims`` adds tolerations, and the classes they name count for
``earnedBy.deviceClasses``, so a DRA GPU pod that tolerates its nodes' taint by hand is
never refused for it. A claim, template or class that cannot be found (or looked up) gives
no toleration, a warning and the notice ``unresolved_claim``; it never refuses a pod, and
while some claim of the pod is unresolved, ``enforce`` refuses none of its guarded
tolerations: it cannot tell which of them the claim would earn.

Claims are resolved only where the answer depends on them: always with ``deviceClaims``
(they decide which tolerations are added), and with ``enforce`` alone only for a pod with
a toleration of a guarded key that its containers' requests do not earn (its own, or one
its RuntimeClass's scheduling adds later in the chain). A pod with no such toleration is
admitted the same whatever its claims stand for, so it costs no lookup and gets no
warning about a class or claim nobody needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final

from webhooks.core.patch import Editor
from webhooks.core.plugin import (
    DEVICE_CLASSES,
    PODS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    Context,
    LookupFailure,
    Mutator,
    Need,
    Plugin,
    Validator,
)
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.claims import (
    DEVICE_CLASS,
    claim_spec,
    class_names,
    extended_resource_name,
    implicit_class,
    pod_claims,
    unresolved,
)
from webhooks.k8s.excerpt import show, show_key
from webhooks.k8s.names import is_dns_subdomain, is_extended_resource_name, qualified_name_errors
from webhooks.k8s.podspec import is_mirror_pod, resource_names, spec_at
from webhooks.k8s.releases import DRA_EXTENDED_RESOURCE
from webhooks.k8s.tolerations import (
    NO_SCHEDULE,
    add_or_update_all,
    describe,
    identity,
    previous_identities,
    tolerations_of,
)

#: The notice counted for each request with a claim, template or class not resolved.
UNRESOLVED: Final = "unresolved_claim"


#: What ``enforce: true`` is told at startup: it named no taint key, and what it used to
#: guard (every domain-prefixed key) refused valid pods (a mesh's ``<vendor>.io/not-ready``
#: key, a MIG pod tolerating ``nvidia.com/gpu``), so no reading of it is safe to guess.
ENFORCE_TRUE = (
    "enforce: true names no taint key to guard: name each one and what earns it, e.g. "
    "enforce: {guarded: [{taintKey: nvidia.com/gpu, earnedBy: {resourcePrefixes: "
    "[nvidia.com/], deviceClasses: [gpu.nvidia.com]}}]} (docs/configuration.md, "
    "'Migrating from enforce: true'), or false for no check"
)

#: About the longest list of earners a denial quotes (whole names, then how many more): a
#: guard with hundreds of names still gives a message of one bounded line.
EARNERS_SHOWN = 200


@dataclass(frozen=True, slots=True)
class EarnedBy:
    """What earns a guarded taint key besides a request of the key's own name: exact
    resource names, resource-name prefixes (``nvidia.com/`` earns for
    ``nvidia.com/mig-1g.12gb``), and DeviceClasses a claim of the pod names."""

    resources: tuple[str, ...] = ()
    resource_prefixes: tuple[str, ...] = ()
    device_classes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for index, name in enumerate(self.resources):
            if not is_extended_resource_name(name):
                raise ValueError(
                    f"resources[{index}]: {show(name)} is not an extended resource name "
                    "(a domain-prefixed name outside kubernetes.io, e.g. nvidia.com/gpu)"
                )
        for index, prefix in enumerate(self.resource_prefixes):
            domain, slash, _ = prefix.partition("/")
            if not slash or not is_dns_subdomain(domain):
                raise ValueError(
                    f"resourcePrefixes[{index}]: {show(prefix)} must start with a whole "
                    "domain and a slash (e.g. nvidia.com/ or nvidia.com/mig-), so that it "
                    "cannot match another vendor's names"
                )
        for index, name in enumerate(self.device_classes):
            if not is_dns_subdomain(name):
                raise ValueError(
                    f"deviceClasses[{index}]: {show(name)} is not a device class name (a "
                    "lowercase RFC 1123 subdomain)"
                )

    def describe(self, key: str) -> str:
        """What earns ``key``, in words, for a denial (bounded by :data:`EARNERS_SHOWN`)."""
        parts = [key, *(n for n in self.resources if n != key)]
        parts += [f"any {p}* resource" for p in self.resource_prefixes]
        parts += [f"a claim of device class {c}" for c in self.device_classes]
        shown: list[str] = []
        length = 0
        for part in parts:
            length += len(part) + 2
            if length > EARNERS_SHOWN and shown:
                return ", ".join(shown) + f" and {len(parts) - len(shown)} more"
            shown.append(part)
        return ", ".join(shown)


@dataclass(frozen=True, slots=True)
class Guard:
    """One guarded taint key and what earns a pod the right to tolerate it."""

    taint_key: str = ""
    earned_by: EarnedBy = field(default_factory=EarnedBy)

    def __post_init__(self) -> None:
        if not self.taint_key:
            raise ValueError("taintKey: is required (the key of the taint to guard)")
        errors = qualified_name_errors(self.taint_key)
        if errors:
            raise ValueError(f"taintKey: {show(self.taint_key)}: {errors[0]}")


@dataclass(frozen=True, slots=True)
class Earners:
    """An :class:`Enforce` compiled once for lookups whose cost per pod is linear: names
    and classes to the keys they earn, and the prefixes as a trie walked once per name.

    Why a trie: matching every name against every prefix is names × prefixes per pod; a
    walk down the trie visits each character of the name once, whatever the prefixes.
    Where a prefix ends, the trie holds an index into ``ends`` (the keys it earns), and
    each index reached is expanded once however many names reach it, so the keys added
    are bounded by the config, not by names × keys.
    """

    keys: frozenset[str]
    by_name: Mapping[str, tuple[str, ...]]
    by_class: Mapping[str, tuple[str, ...]]
    trie: Mapping[str, Any]
    ends: tuple[tuple[str, ...], ...]
    described: Mapping[str, str]

    def earned(self, names: AbstractSet[str], classes: AbstractSet[str]) -> set[str]:
        """The guarded keys that ``names`` (resources requested, or claimed through a
        class's resource name) and ``classes`` (DeviceClasses claimed) earn."""
        out: set[str] = set()
        reached: set[int] = set()
        for name in names:
            out.update(self.by_name.get(name, ()))
            node = self.trie
            for char in name:
                if _END in node:
                    reached.add(node[_END])
                child = node.get(char)
                if child is None:
                    break
                node = child
            else:
                if _END in node:
                    reached.add(node[_END])
        for index in reached:
            out.update(self.ends[index])
        for name in classes:
            out.update(self.by_class.get(name, ()))
        return out


#: The trie's marker for "a prefix ends here": no character is the empty string.
_END: Final = ""


def _compile(guards: tuple[Guard, ...]) -> Earners:
    by_name: dict[str, list[str]] = {}
    by_class: dict[str, list[str]] = {}
    trie: dict[str, Any] = {}
    ends: list[list[str]] = []
    for guard in guards:
        key, earned_by = guard.taint_key, guard.earned_by
        for name in dict.fromkeys((key, *earned_by.resources)):
            by_name.setdefault(name, []).append(key)
        for name in dict.fromkeys(earned_by.device_classes):
            by_class.setdefault(name, []).append(key)
        for prefix in dict.fromkeys(earned_by.resource_prefixes):
            node = trie
            for char in prefix:
                node = node.setdefault(char, {})
            if _END not in node:
                node[_END] = len(ends)
                ends.append([])
            ends[node[_END]].append(key)
    return Earners(
        keys=frozenset(g.taint_key for g in guards),
        by_name={n: tuple(k) for n, k in by_name.items()},
        by_class={n: tuple(k) for n, k in by_class.items()},
        trie=trie,
        ends=tuple(tuple(k) for k in ends),
        described={g.taint_key: g.earned_by.describe(g.taint_key) for g in guards},
    )


@dataclass(frozen=True, slots=True)
class Enforce:
    """``enforce``'s guarded taint keys. A key not listed is never refused: only the
    operator knows which taints keep nodes for a resource (a mesh's ``not-ready`` taint
    does not)."""

    guarded: tuple[Guard, ...] = ()
    earners: Earners = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.guarded:
            raise ValueError(
                "guarded: is required: at least one {taintKey, earnedBy} (or enforce: false "
                "for no check)"
            )
        seen: dict[str, int] = {}
        for index, guard in enumerate(self.guarded):
            if guard.taint_key in seen:
                raise ValueError(
                    f"guarded[{index}].taintKey: {show(guard.taint_key)} is already guarded "
                    f"by guarded[{seen[guard.taint_key]}]: put all its earners there"
                )
            seen[guard.taint_key] = index
        object.__setattr__(self, "earners", _compile(self.guarded))


@dataclass(frozen=True, slots=True)
class Settings:
    """Upstream has no settings; ``enforce`` switches the validating half's check on, and
    ``deviceClaims`` / ``deviceClassTaints`` extend the plugin to DRA claims (module doc).

    ``exemptNamespaces`` (default ``[kube-system]``) is an exception for the validating
    half, handled by the chain like every exception.
    """

    enforce: Enforce | bool = False
    device_claims: bool = False
    device_class_taints: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.enforce is True:
            raise ValueError(ENFORCE_TRUE)
        for name, key in self.device_class_taints.items():
            if not is_dns_subdomain(name):
                raise ValueError(
                    f"deviceClassTaints: {show(name)} is not a device class name (a lowercase "
                    "RFC 1123 subdomain)"
                )
            errors = qualified_name_errors(key)
            if errors:
                raise ValueError(
                    f"deviceClassTaints.{show_key(name)}: taint key {show(key)}: {errors[0]}"
                )

    @property
    def resolves_claims(self) -> bool:
        """Whether a pod's claims are resolved at all: to add tolerations, or to judge them."""
        return self.device_claims or self.guards is not None

    @property
    def guards(self) -> Earners | None:
        """The guarded keys compiled, or ``None`` when ``enforce`` is off."""
        return self.enforce.earners if isinstance(self.enforce, Enforce) else None


def lookups(settings: Settings) -> frozenset[str]:
    """The objects the server must cache for these settings: claims, templates and classes
    when claims are resolved, nothing otherwise (the default costs no memory)."""
    if not settings.resolves_claims:
        return frozenset()
    return frozenset({DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES})


@dataclass(frozen=True, slots=True)
class Claimed:
    """What a pod's claims (and implicit class requests) stand for: resource names, the
    DeviceClasses named (for ``earnedBy.deviceClasses``), and a one-line problem for each
    claim, template or class that could not be resolved."""

    names: frozenset[str] = frozenset()
    problems: tuple[str, ...] = ()
    classes: frozenset[str] = frozenset()


NOTHING_CLAIMED = Claimed()


def _pod_namespace(request: AdmissionRequest, pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata")
    own = meta.get("namespace") if isinstance(meta, dict) else None
    return request.namespace or (own if isinstance(own, str) else "")


def _lookup(find: Any, *args: str) -> tuple[dict[str, Any] | None, str]:
    try:
        return find(*args), ""
    except LookupFailure as exc:
        return None, f"cannot be looked up ({exc})"


def claimed(
    request: AdmissionRequest,
    pod: Mapping[str, Any],
    settings: Settings,
    ctx: Context,
    resources: set[str] | None = None,
) -> Claimed:
    """Resolve the pod's claims and implicit class requests to resource names (module doc).

    Why lookups that fail are problems, not errors: this goes beyond upstream, and a pod
    must never be refused because an opt-in extra could not read the cluster.
    ``resources``: :func:`resource_names` of the pod's spec, when the caller has read it
    already (both halves need it too, and reading it twice was a fifth of their cost).
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return NOTHING_CLAIMED
    references = pod_claims(spec)
    requested = resource_names(spec) if resources is None else resources
    implicit = [c for n in requested if (c := implicit_class(n))]
    if not references and not implicit:
        return NOTHING_CLAIMED
    namespace = _pod_namespace(request, pod)
    problems: list[str] = []
    classes: list[str] = []
    for reference in references:
        if reference.claim:
            found, why = _lookup(ctx.cluster.resource_claim, namespace, reference.claim)
        else:
            found, why = _lookup(ctx.cluster.resource_claim_template, namespace, reference.template)
        if found is None:
            problems.append(unresolved(f"{reference} in namespace {namespace}", why))
            continue
        classes.extend(class_names(claim_spec(found)))
    classes.extend(implicit)
    names: set[str] = set()
    for name in dict.fromkeys(classes):
        device_class, why = _lookup(ctx.cluster.device_class, name)
        if device_class is None:
            problems.append(unresolved(f"{DEVICE_CLASS} {name}", why))
            continue
        declared = extended_resource_name(device_class)
        if is_extended_resource_name(declared):
            names.add(declared)
        elif name in settings.device_class_taints:
            names.add(settings.device_class_taints[name])
    return Claimed(frozenset(names), tuple(problems), frozenset(classes))


def _unresolved_warning(problem: str) -> str:
    return (
        f"{PLUGIN.name}: {problem}: no toleration for its devices' nodes is added and none "
        "is refused"
    )


def wanted_tolerations(
    spec: dict[str, Any],
    extra: frozenset[str] = frozenset(),
    resources: set[str] | None = None,
) -> list[dict[str, Any]]:
    """One Exists/NoSchedule toleration per extended resource requested, plus one per name
    in ``extra`` (what the pod's claims stand for), sorted byte-wise.

    Limits count as requests (API defaulting, spec §0); quantities are irrelevant.
    ``resources``: :func:`resource_names` of ``spec``, when the caller has read it already.
    """
    found = resource_names(spec) if resources is None else resources
    requested = {n for n in found if is_extended_resource_name(n)}
    ordered = sorted(requested | extra, key=lambda n: n.encode())
    return [{"key": n, "operator": "Exists", "effect": NO_SCHEDULE} for n in ordered]


def _spelling(toleration: dict[str, Any]) -> tuple[str, ...]:
    """A toleration's key, operator and effect when it has those three string fields and
    no other, else ``()``: two such tolerations are equal exactly when these are.

    Why: telling which wanted tolerations the pod lacked by list membership compared each
    with every entry (n² for n extended resources); a set of spellings does not.
    """
    if toleration.keys() != _WANTED_FIELDS:
        return ()
    found = (toleration["key"], toleration["operator"], toleration["effect"])
    return found if all(isinstance(v, str) for v in found) else ()


_WANTED_FIELDS = frozenset({"key", "operator", "effect"})


def _unrequested(
    request: AdmissionRequest,
    tolerations: list[Any],
    requested: AbstractSet[str],
    guards: Earners,
) -> list[tuple[int, dict[str, Any], str]]:
    """(index, toleration, key) of each toleration ``enforce`` judges whose guarded key
    nothing in ``requested`` earns: what it refuses unless a claim earns it. On UPDATE
    only tolerations the old pod lacked are judged.

    Why the requests first: a key they earn is earned whatever the claims stand for, so
    only the rest can make the claims worth looking up.
    """
    old = previous_identities(request.operation, request.old_object)
    judged = []
    for index, toleration in enumerate(tolerations):
        if not isinstance(toleration, dict) or (old and identity(toleration) in old):
            continue
        # The key as identity() reads it; the whole identity only matters on UPDATE.
        key = toleration.get("key")
        if isinstance(key, str) and key in guards.keys:
            judged.append((index, toleration, key))
    if not judged:
        return []
    earned = guards.earned(requested, frozenset())
    return [entry for entry in judged if entry[2] not in earned]


def _runtime_class_tolerations(spec: Mapping[str, Any], ctx: Context) -> list[Any] | None:
    """The tolerations the pod's RuntimeClass adds later in the chain (``[]`` for none),
    or ``None`` when the class cannot be looked up."""
    name = spec.get("runtimeClassName")
    if not isinstance(name, str) or not name:
        return []
    try:
        found = ctx.cluster.runtime_class(name)
    except LookupFailure:
        return None
    scheduling = found.get("scheduling") if isinstance(found, dict) else None
    tolerations = scheduling.get("tolerations") if isinstance(scheduling, dict) else None
    return tolerations if isinstance(tolerations, list) else []


def claims_matter(
    request: AdmissionRequest,
    spec: Mapping[str, Any],
    settings: Settings,
    ctx: Context,
    requested: set[str],
) -> bool:
    """Whether what the pod's claims stand for can change this plugin's answer for it.

    Why ask: resolving claims costs lookups, and a class or claim that cannot be found is a
    warning; for a pod whose answer is the same either way both are noise. With
    ``deviceClaims`` the claims decide the tolerations added; with ``enforce`` alone only a
    toleration of a guarded key the containers' requests do not earn, on the pod or from
    its RuntimeClass, can be saved by a claim. ``requested``: :func:`resource_names` of
    ``spec``.
    """
    if settings.device_claims:
        return True
    guards = settings.guards
    if guards is None:
        return False
    if _unrequested(request, tolerations_of(spec) or [], requested, guards):
        return True
    added = _runtime_class_tolerations(spec, ctx)
    return added is None or bool(_unrequested(request, added, requested, guards))


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Add or update each wanted toleration with AddOrUpdateTolerationInPodSpec (§1b).

    With claims resolved (``deviceClaims``, or ``enforce`` for a pod whose answer depends
    on them: :func:`claims_matter`), a claim that cannot be resolved is a warning here,
    once per request, whichever setting asked for it.
    """
    spec = spec_at(pod)  # a missing spec is an empty one, as the API server decodes it
    if spec is None:
        return UNCHANGED
    settings: Settings = ctx.settings
    names = resource_names(spec)  # read once for both uses below
    found = NOTHING_CLAIMED
    if (
        settings.resolves_claims
        and not is_mirror_pod(pod)
        and (pod_claims(spec) or any(implicit_class(n) for n in names))
        and claims_matter(request, spec, settings, ctx, names)
    ):
        found = claimed(request, pod, settings, ctx, names)
    warnings = tuple(_unresolved_warning(p) for p in found.problems)
    notices = (UNRESOLVED,) if found.problems else ()
    extra = found.names if settings.device_claims else frozenset()
    wanted = wanted_tolerations(spec, extra, names)
    tolerations = tolerations_of(spec)
    quiet = Result(warnings=warnings, notices=notices) if warnings else UNCHANGED
    if not wanted or tolerations is None:
        return quiet
    editor = Editor(pod)
    editor.set(("spec", "tolerations"), add_or_update_all(tolerations, wanted))
    if not editor.changed:
        return quiet
    written = {_spelling(t) for t in tolerations if isinstance(t, dict)}
    added = [t for t in wanted if _spelling(t) not in written]
    summary = "added " + ", ".join(describe(t) for t in added)
    return Result(editor.obj, editor.patch, warnings, audit={PLUGIN.name: summary}, notices=notices)


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """With ``enforce``: deny tolerations of a guarded taint key that nothing the pod
    requests or claims earns.

    Why: a device taint keeps other pods off only while nobody tolerates it by hand; a pod
    that tolerates ``nvidia.com/gpu`` without requesting a GPU can take a GPU node's CPU
    and memory and leave a GPU pod Pending. Only guarded keys are judged, so the claims
    are resolved only for a pod that tolerates one.
    """
    settings: Settings = ctx.settings
    guards = settings.guards
    if guards is None:
        return []
    spec = pod.get("spec")
    if not isinstance(spec, dict) or is_mirror_pod(pod):
        return []
    tolerations = tolerations_of(spec) or []
    names = resource_names(spec)  # read once for both uses below
    suspects = _unrequested(request, tolerations, names, guards)
    if not suspects:
        return []  # every guarded toleration is earned by a request: no lookups
    found = claimed(request, pod, settings, ctx, names)
    if found.problems:
        return []  # warned by the mutating half: what the claims justify is unknown
    earned = guards.earned(found.names, found.classes) if found.names or found.classes else ()
    return [
        Violation(
            f"toleration {describe(toleration)} lets this pod onto nodes reserved for {key}, "
            f"but nothing the pod requests or claims earns it ({guards.described[key]}): "
            "request or claim one of those, or remove the toleration",
            f"spec.tolerations[{index}].key",
        )
        for index, toleration, key in suspects
        if key not in earned
    ]


def enforcing(settings: Settings) -> bool:
    """Whether the validating half checks anything: only with ``enforce``.

    Why the chain asks: with enforcement off there is nothing for ``exemptNamespaces`` to
    exempt, so no exception may be reported as skipping this plugin.
    """
    return settings.guards is not None


#: ``deviceClaims`` reads the extended resource name a DeviceClass declares (KEP-5004); an
#: API server with the gate off drops that field when a class is written, so only the
#: classes ``deviceClassTaints`` names resolve there.
NEEDS: Final = (
    Need(
        "deviceClaims",
        DRA_EXTENDED_RESOURCE,
        "DeviceClass spec.extendedResourceName",
        "a claim of a DeviceClass not named in deviceClassTaints gives its pod no toleration",
        lambda settings: bool(settings.device_claims),
    ),
)


PLUGIN = Plugin(
    name="extended-resource-toleration",
    summary="Tolerates the taint named after each extended resource a pod requests.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE", "UPDATE"})),
    validate=Validator(
        validate,
        frozenset({PODS}),
        frozenset({"CREATE", "UPDATE"}),
        active=enforcing,
        active_key="enforce",
    ),
    wrong_kind="expected *core.Pod but got {kind}",
    upstream="ExtendedResourceToleration",
    exempt_namespaces=("kube-system",),
    lookups=lookups,
    needs=NEEDS,
)
