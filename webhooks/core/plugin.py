"""The plugin contract and the registry that holds plugins in chain order.

A plugin is data (:class:`Plugin`) around two pure functions. The chain, not the plugin,
filters on resource, subresource and operation, so every plugin gets the upstream "no-op for
anything else" behaviour for free and the contract tests can check it from the descriptor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from webhooks.core.derived import Derived
from webhooks.core.result import Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s import podspec
from webhooks.k8s.podspec import TEMPLATE_RESOURCES

Phase = Literal["mutate", "validate"]
PHASES: tuple[Phase, ...] = ("mutate", "validate")

GroupResource = podspec.GroupResource

#: The kind each resource's objects must carry; why: upstream plugins reject a ``pods``
#: request whose object is not a Pod with BadRequest rather than guess (spec §0). The
#: template kinds come from the one table of them (:data:`TEMPLATE_RESOURCES`).
RESOURCE_KINDS: Mapping[GroupResource, str] = {
    **{resource: kind for resource, (_, kind) in TEMPLATE_RESOURCES.items()},
    ("", "nodes"): "Node",
}

PODS: GroupResource = ("", "pods")


class LookupFailure(Exception):
    """A cluster lookup could not complete (unreachable, timed out, server error).

    Not-found is *not* a failure: sources return ``None`` for it, because upstream treats
    the two differently (a specific denial versus the raw error).
    """


class ClusterView(Protocol):
    """Read-only access to the cluster objects plugins consult.

    A view whose objects all carry the API server's ``uid`` and ``resourceVersion`` says so
    with a true ``versioned`` attribute; what plugins derive from its objects is then kept
    per version rather than per object (:mod:`webhooks.core.derived`).
    """

    def runtime_class(self, name: str) -> dict[str, Any] | None:
        """The RuntimeClass called ``name``, or ``None`` when it does not exist."""

    def namespace(self, name: str) -> dict[str, Any] | None:
        """The Namespace called ``name``, or ``None`` when it does not exist."""

    def device_class(self, name: str) -> dict[str, Any] | None:
        """The DeviceClass (``resource.k8s.io``) called ``name``, or ``None``."""

    def resource_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaim ``namespace/name``, or ``None``."""

    def resource_claim_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaimTemplate ``namespace/name``, or ``None``."""


class NoCluster:
    """A cluster with no objects; why: plugins that need none must still run offline."""

    def runtime_class(self, name: str) -> dict[str, Any] | None:
        """Always ``None``."""
        return None

    def namespace(self, name: str) -> dict[str, Any] | None:
        """Always ``None``."""
        return None

    def device_class(self, name: str) -> dict[str, Any] | None:
        """Always ``None``."""
        return None

    def resource_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Always ``None``."""
        return None

    def resource_claim_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Always ``None``."""
        return None


#: Cluster resources a plugin's settings may need kept in the server's cache (plurals);
#: RuntimeClasses and Namespaces are always cached.
DEVICE_CLASSES = "deviceclasses"
RESOURCE_CLAIMS = "resourceclaims"
RESOURCE_CLAIM_TEMPLATES = "resourceclaimtemplates"


@dataclass(frozen=True, slots=True)
class Context:
    """What a plugin may consult besides the request: its settings, the cluster, and what
    it derived from them before (:mod:`webhooks.core.derived`; one cache per chain, shared
    by its plugins, each value named by the plugin that derives it)."""

    settings: Any
    cluster: ClusterView = field(default_factory=NoCluster)
    derived: Derived = field(default_factory=Derived)


#: A mutating half's function: the changed object and what to report, or violations.
MutateFn = Callable[[AdmissionRequest, dict[str, Any], Context], Result]
#: A validating half's function: every reason to refuse the object as it stands.
ValidateFn = Callable[[AdmissionRequest, dict[str, Any], Context], Sequence[Violation]]


@dataclass(frozen=True, slots=True)
class Mutator:
    """The mutating half of a plugin: its function and what it handles.

    Why resources and operations live here and not in the function: the chain filters on
    them, so every plugin gets upstream's "no-op for anything else" for free, and the
    contract tests check it from the descriptor.
    """

    run: MutateFn
    resources: frozenset[GroupResource]
    operations: frozenset[str]


@dataclass(frozen=True, slots=True)
class Validator:
    """The validating half of a plugin: its function and what it handles (see :class:`Mutator`).

    ``active`` says whether the half checks anything under the plugin's settings (``None``:
    always). Why: a check switched off in the config (``enforce: false``) is not a step of
    the chain, so an exception for it (``exemptNamespaces``) skips nothing and is reported
    nowhere, while the plugin's mutating half runs as usual. ``active_key`` names the config
    key whose value decides it (a contract test keeps the two in agreement), so the chart
    can decide the same from its values without running Python.

    ``live_pods`` is a CEL condition on a Pod (``object``) outside which this half can find
    nothing in a request that reached a validating webhook of a live API server (``None``:
    any pod may matter). Why: the API server validates the object itself before it calls
    validating webhooks, so a check that only repeats its own rules (a toleration's syntax)
    can never refuse what it accepted; the webhook configuration then leaves such pods out
    with a match condition, and a pod costs the API server one call instead of two. The
    condition must over-approximate: a pod it leaves out must get no violation, warning or
    audit note from this half under any settings.
    """

    run: ValidateFn
    resources: frozenset[GroupResource]
    operations: frozenset[str]
    active: Callable[[Any], bool] | None = None
    active_key: str = ""
    live_pods: str | None = None


Half = Mutator | Validator


@dataclass(frozen=True, slots=True)
class Need:
    """A setting that works only where the API server serves a feature behind ``gate``.

    ``key`` is the setting's key under the plugin's section (``deviceClaims``), ``feature``
    what the API server must serve (``DeviceClass spec.extendedResourceName``), ``without``
    what happens where it does not, and ``on`` whether given settings use it. Why data
    and not a check in the plugin: the server, the chart's schema and the docs all say the
    same thing about the same settings, and the release table decides where the gate is on
    (:mod:`webhooks.core.availability`); a plugin never learns which release it runs on.
    """

    key: str
    gate: str
    feature: str
    without: str
    on: Callable[[Any], bool]


@dataclass(frozen=True, slots=True)
class Plugin:
    """A named plugin: settings type, optional mutating and validating halves.

    ``wrong_kind`` is the message template upstream answers with BadRequest when the object's
    kind does not match its resource (``{kind}`` is the object's, as Go prints its type;
    ``{expected}`` the resource's kind); ``None`` means such objects are ignored.
    ``moved_settings`` maps setting keys this plugin no longer has to the plugin that took
    them over, so an old config is refused with a message that says where they went.
    ``upstream`` names the in-tree admission plugin this one reimplements ("" for ours):
    the chain treats a change by one of ours as the API server treats a webhook's change
    (see :mod:`webhooks.core.chain`). ``exempt_namespaces``, when not ``None``, offers the
    ``exemptNamespaces`` setting with this default: namespaces whose objects the plugin's
    validation skips, as an exception (:mod:`webhooks.core.policy`) would. ``lookups``
    says which cluster resources (plurals) the plugin's settings make it consult, beyond
    RuntimeClasses and Namespaces, so the server caches those only when a setting needs
    them. ``needs`` lists the settings that work only where the API server serves a gated
    feature (:class:`Need`). ``precedes_admission`` marks a mutating half that writes
    what a controller writes into its objects before they reach admission (the DaemonSet
    controller's default tolerations): the chain runs it before every other mutator, as
    if the object had arrived with it, and its change asks for no second pass.
    """

    name: str
    summary: str
    settings: type[Any]
    mutate: Mutator | None = None
    validate: Validator | None = None
    wrong_kind: str | None = None
    enabled_by_default: bool = True
    moved_settings: Mapping[str, str] = field(default_factory=dict)
    upstream: str = ""
    exempt_namespaces: tuple[str, ...] | None = None
    lookups: Callable[[Any], frozenset[str]] | None = None
    needs: tuple[Need, ...] = ()
    precedes_admission: bool = False

    def half(self, phase: Phase) -> Half | None:
        """The half for ``phase``."""
        return self.mutate if phase == "mutate" else self.validate


class Registry:
    """The plugins in the one chain order; lookups by name.

    Why a class and not a dict: order is part of the contract (mutators see each other's
    output), so the registry is built once from a sequence and never re-sorted.
    """

    __slots__ = ("_by_name", "plugins")

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins: tuple[Plugin, ...] = tuple(plugins)
        self._by_name = {p.name: p for p in self.plugins}
        if len(self._by_name) != len(self.plugins):
            raise ValueError("plugin names must be unique")

    def __iter__(self) -> Iterator[Plugin]:
        return iter(self.plugins)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        """Plugin names in chain order."""
        return tuple(self._by_name)

    def get(self, name: str) -> Plugin:
        """The plugin called ``name``; ``KeyError`` names the known ones."""
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self.names)
            raise KeyError(f"unknown plugin {name!r} (known: {known})") from None
