"""The Kubernetes releases placement-webhooks supports, and what each one serves.

Why one table: what differs between releases (the API version of MutatingAdmissionPolicy,
the version DeviceTaintRule is served at, whether a feature gate exists and is on by
default) decides what ``export`` writes, what ``webhook-config`` and the chart register,
what the cache and ``explain`` read, and how the test control plane starts. Every one of
those reads this table; nothing else decides by version. The chart cannot import Python,
so its ``templates/_releases.tpl`` is generated from it (``make chart-native``) and a test
keeps the two equal.

Every fact below was read from the release's own ``pkg/features/kube_features.go`` and
``pkg/registry/*/rest`` (the Go module ``k8s.io/kubernetes`` at the ``proven`` tag), the CEL
facts from ``k8s.io/apiserver`` at the matching tag (``pkg/cel/environment/base.go``), and
each row is proven by ``KUBERNETES_VERSION=<proven> make e2e``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

_VERSION: Final = re.compile(r"[vV]?(\d{1,4})\.(\d{1,4})(?![\d])")

Stage = Literal["alpha", "beta", "ga"]


@dataclass(frozen=True, slots=True)
class Gate:
    """A feature gate as one release has it: its stage and whether it is on by default.

    Why both: a managed cluster runs the defaults, so "on by default" is what a user gets;
    the stage says whether a self-managed cluster may turn it on at all (alpha gates are
    refused by most managed offerings).
    """

    stage: Stage
    default: bool


@dataclass(frozen=True, slots=True)
class Release:
    """One supported minor release of Kubernetes and what its API server offers."""

    #: ``(1, 34)``.
    minor: tuple[int, int]
    #: The patch release every fact here was proven on.
    proven: str
    #: The API version MutatingAdmissionPolicy (and its binding) is served at.
    mutating_policy_version: str
    #: The API version DeviceTaintRule is served at, when its gate is on.
    device_taint_rule_version: str
    #: The gate that serves DeviceTaintRule (``DRADeviceTaints`` until 1.35 split the API
    #: off into ``DRADeviceTaintRules``; read from ``pkg/features/kube_features.go``).
    device_taint_rule_gate: str
    #: The CEL environment the API server compiles a *new* admission policy expression
    #: against: its minimum compatibility version, one minor below the release
    #: (``environment.DefaultCompatibilityVersion``; ``NewExpressions`` in
    #: ``pkg/apis/admissionregistration/validation``). A library younger than this is
    #: refused when the policy is created, though the release's own CEL has it.
    cel_environment: tuple[int, int]
    #: The gates this project's features depend on, as this release has them. A gate
    #: absent from the map does not exist in the release (the API server refuses it).
    gates: Mapping[str, Gate] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """``1.34``: how people and ``--kubernetes-version`` name a release."""
        return f"{self.minor[0]}.{self.minor[1]}"

    def gate_on(self, gate: str) -> bool:
        """Whether ``gate`` is on in this release's defaults (a missing gate is off)."""
        found = self.gates.get(gate)
        return found is not None and found.default

    def gate_state(self, gate: str) -> str:
        """How ``gate`` stands in this release, as a clause of a sentence.

        ``"absent from Kubernetes 1.34"``, ``"alpha, off by default on Kubernetes 1.35"``,
        ``"on by default on Kubernetes 1.37"``. Why words and not the :class:`Gate`: the
        messages that tell a user a setting cannot work say it this way, and the stage
        tells them whether turning the gate on is even possible on a managed cluster.
        """
        found = self.gates.get(gate)
        if found is None:
            return f"absent from Kubernetes {self.name}"
        if found.default:
            return f"on by default on Kubernetes {self.name}"
        return f"{found.stage}, off by default on Kubernetes {self.name}"

    @property
    def device_taint_rules_by_default(self) -> bool:
        """Whether DeviceTaintRule is served without a gate or runtime-config.

        Why both: an alpha or beta API version is off by default whatever its gate says
        (``--runtime-config`` turns it on), so only a GA version with its gate on is served.
        """
        return self.device_taint_rule_version == "v1" and self.gate_on(self.device_taint_rule_gate)

    @property
    def mutating_policies_by_default(self) -> bool:
        """Whether MutatingAdmissionPolicy is served without a gate or runtime-config."""
        return self.gate_on(MUTATING_ADMISSION_POLICY)

    @property
    def mutating_policy_api(self) -> str:
        """``admissionregistration.k8s.io/<version>`` of MutatingAdmissionPolicy."""
        return f"admissionregistration.k8s.io/{self.mutating_policy_version}"

    def cel_offers(self, library: str) -> bool:
        """Whether a new admission policy expression may use CEL ``library`` (a key of
        :data:`CEL_LIBRARIES`) on this release."""
        return CEL_LIBRARIES[library] <= self.cel_environment

    @property
    def device_taint_rule_api(self) -> str:
        """``resource.k8s.io/<version>`` of DeviceTaintRule."""
        return f"resource.k8s.io/{self.device_taint_rule_version}"


MUTATING_ADMISSION_POLICY: Final = "MutatingAdmissionPolicy"
#: KEP-5004: a DeviceClass's ``extendedResourceName`` lets pods ask for devices by name.
DRA_EXTENDED_RESOURCE: Final = "DRAExtendedResource"
#: KEP-5055: taints on devices (in ResourceSlices), tolerated by claims.
DRA_DEVICE_TAINTS: Final = "DRADeviceTaints"
#: KEP-5055: the DeviceTaintRule API.
DRA_DEVICE_TAINT_RULES: Final = "DRADeviceTaintRules"
#: KEP-5793: admission policies and webhook configurations loaded from files at start-up.
STATIC_ADMISSION: Final = "ManifestBasedAdmissionControlConfig"
#: KEP-5471: ``Lt``/``Gt`` tolerations.
TOLERATION_COMPARISONS: Final = "TaintTolerationComparisonOperators"

#: The CEL libraries admission policy expressions of this project use, and the CEL
#: environment version that first offers each (``IntroducedVersion`` in
#: ``k8s.io/apiserver/pkg/cel/environment/base.go``, the same in v0.34.4 to v0.37.2).
CEL_OPTIONAL: Final = "optional types"
CEL_QUANTITY: Final = "quantity"
CEL_STRINGS: Final = "strings (version 2)"
CEL_TWO_VARIABLE: Final = "two-variable comprehensions"
CEL_LISTS: Final = "lists (cel-go ext.Lists version 3)"
CEL_LIBRARIES: Final[Mapping[str, tuple[int, int]]] = {
    CEL_OPTIONAL: (1, 28),
    CEL_QUANTITY: (1, 28),
    CEL_STRINGS: (1, 29),
    CEL_TWO_VARIABLE: (1, 32),
    CEL_LISTS: (1, 34),
}

_ALPHA_OFF: Final = Gate("alpha", False)
_BETA_OFF: Final = Gate("beta", False)
_BETA_ON: Final = Gate("beta", True)
_GA: Final = Gate("ga", True)

#: Oldest first. DynamicResourceAllocation (``resource.k8s.io/v1``) is GA and on in all of
#: them, and ValidatingAdmissionPolicy is ``v1`` in all of them, so neither has a column.
RELEASES: Final[tuple[Release, ...]] = (
    Release(
        (1, 34),
        "v1.34.4",
        "v1beta1",
        "v1alpha3",
        DRA_DEVICE_TAINTS,
        (1, 33),
        {
            MUTATING_ADMISSION_POLICY: _BETA_OFF,
            DRA_EXTENDED_RESOURCE: _ALPHA_OFF,
            DRA_DEVICE_TAINTS: _ALPHA_OFF,
        },
    ),
    Release(
        (1, 35),
        "v1.35.4",
        "v1beta1",
        "v1alpha3",
        DRA_DEVICE_TAINT_RULES,
        (1, 34),
        {
            MUTATING_ADMISSION_POLICY: _BETA_OFF,
            DRA_EXTENDED_RESOURCE: _ALPHA_OFF,
            DRA_DEVICE_TAINTS: _ALPHA_OFF,
            DRA_DEVICE_TAINT_RULES: _ALPHA_OFF,
            TOLERATION_COMPARISONS: _ALPHA_OFF,
        },
    ),
    Release(
        (1, 36),
        "v1.36.3",
        "v1",
        "v1beta2",
        DRA_DEVICE_TAINT_RULES,
        (1, 35),
        {
            MUTATING_ADMISSION_POLICY: _GA,
            DRA_EXTENDED_RESOURCE: _BETA_ON,
            DRA_DEVICE_TAINTS: _BETA_ON,
            DRA_DEVICE_TAINT_RULES: _BETA_OFF,
            TOLERATION_COMPARISONS: _ALPHA_OFF,
            STATIC_ADMISSION: _ALPHA_OFF,
        },
    ),
    Release(
        (1, 37),
        "v1.37.2",
        "v1",
        "v1",
        DRA_DEVICE_TAINT_RULES,
        (1, 36),
        {
            MUTATING_ADMISSION_POLICY: _GA,
            DRA_EXTENDED_RESOURCE: _GA,
            DRA_DEVICE_TAINTS: _GA,
            DRA_DEVICE_TAINT_RULES: _GA,
            TOLERATION_COMPARISONS: _ALPHA_OFF,
            STATIC_ADMISSION: _BETA_ON,
        },
    ),
)
NEWEST: Final = RELEASES[-1]
OLDEST: Final = RELEASES[0]


class UnsupportedRelease(ValueError):
    """A version names no supported release; the message lists the ones there are."""


def parse_minor(text: str) -> tuple[int, int]:
    """``(1, 34)`` from ``1.34``, ``v1.34.4``, ``v1.34.4-eks-1234``.

    Why so lenient: managed clusters report ``gitVersion`` with vendor suffixes; only the
    major and minor decide what a release serves.
    """
    match = _VERSION.match(text.strip())
    if match is None:
        raise UnsupportedRelease(f"{text[:40]!r} is not a Kubernetes version (expected e.g. 1.34)")
    return int(match.group(1)), int(match.group(2))


def release(text: str) -> Release:
    """The supported release ``text`` names; :class:`UnsupportedRelease` otherwise.

    A release newer than the newest row is read as the newest (what is GA there stays
    GA); an older one is refused, naming the oldest supported.
    """
    minor = parse_minor(text)
    for row in RELEASES:
        if row.minor == minor:
            return row
    if minor > NEWEST.minor:
        return NEWEST
    names = ", ".join(r.name for r in RELEASES)
    raise UnsupportedRelease(
        f"Kubernetes {minor[0]}.{minor[1]} is not supported (supported: {names}); "
        f"{OLDEST.name} is the oldest"
    )


@dataclass(frozen=True, slots=True)
class ServerRelease:
    """The release a cluster's API server runs, as far as it could be told.

    ``reported`` is what the server said (its ``gitVersion``; ``""`` when it could not be
    read). ``note`` is ``""`` when that names a supported release, else one line saying
    which release is assumed and why. Why an assumption and not a refusal: a server that
    cannot tell its version must still serve the policy; what depends on the release is
    then said once, with the assumption, instead of guessed silently. ``failure`` is why
    the server could not be asked (``""`` when it answered), for callers that refuse to
    assume.
    """

    release: Release
    reported: str = ""
    note: str = ""
    failure: str = ""


def judge(reported: str | None, failure: str = "") -> ServerRelease:
    """The :class:`ServerRelease` for what an API server reported (``None``: it could not
    be asked, and ``failure`` says why).

    Unreadable or unparsable: the newest release is assumed, since a cluster that cannot
    be asked is most likely current and a wrong "older" would warn about settings that
    work. Older than the oldest row: the oldest, which lacks the most. Newer than the
    newest: the newest, as :func:`release` does.
    """
    if reported is None:
        failure = failure or "no answer"
        return ServerRelease(
            NEWEST,
            "",
            f"cannot read the API server's version ({failure}): assuming "
            f"Kubernetes {NEWEST.name}, the newest supported",
            failure,
        )
    try:
        minor = parse_minor(reported)
    except UnsupportedRelease:
        return ServerRelease(
            NEWEST,
            reported,
            f"the API server's version {reported[:40]!r} names no Kubernetes release: "
            f"assuming Kubernetes {NEWEST.name}, the newest supported",
        )
    if minor < OLDEST.minor:
        return ServerRelease(
            OLDEST,
            reported,
            f"Kubernetes {minor[0]}.{minor[1]} is older than the oldest supported release: "
            f"judged as Kubernetes {OLDEST.name}, and more may not work than is said",
        )
    found = release(reported)
    if found.minor != minor:
        return ServerRelease(
            found,
            reported,
            f"Kubernetes {minor[0]}.{minor[1]} is newer than the newest supported release: "
            f"judged as Kubernetes {found.name}",
        )
    return ServerRelease(found, reported)
