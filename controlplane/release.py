"""The Kubernetes release the real control plane runs, and where its binaries are cached.

Every real-control-plane test runs against one supported release at a time: the newest by
default, another when ``KUBERNETES_VERSION`` names it (``KUBERNETES_VERSION=v1.34.4 make
e2e``; ``1.34`` means the same). The supported releases and what each serves are the
product's table, ``webhooks.k8s.releases``; this module only picks a row and says where its
Go modules and binaries are. Each release has its own generated modules under
``gomod/releases/<version>/`` (``make controlplane-mod``) and its own cache directory, so
switching back and forth never rebuilds. Helm, kwok and Kyverno are the same programs for
every release, so they are built once into ``tools/`` beside them.

The etcd of each release is the one its ``cmd/kubeadm/app/constants`` recommends, which the
generator reads from there. ``make test`` never imports this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from webhooks.k8s.releases import (
    MUTATING_ADMISSION_POLICY,
    NEWEST,
    RELEASES,
    Release,
    UnsupportedRelease,
    release,
)


def _chosen() -> Release:
    """The release ``$KUBERNETES_VERSION`` names (the newest when unset).

    Only a patch that a row was proven on is accepted: the modules are generated for that
    tag, and a different patch would need modules nobody generated.
    """
    wanted = os.environ.get("KUBERNETES_VERSION", "").strip()
    if not wanted:
        return NEWEST
    try:
        row = release(wanted)
    except UnsupportedRelease as exc:
        raise SystemExit(f"KUBERNETES_VERSION: {exc}") from None
    if wanted.count(".") == 2 and wanted.lstrip("vV") != row.proven.lstrip("v"):
        proven = ", ".join(r.proven for r in RELEASES)
        raise SystemExit(
            f"KUBERNETES_VERSION={wanted}: the control plane builds the proven patches only "
            f"({proven})"
        )
    return row


#: The release of this run, and its tag.
RELEASE: Final = _chosen()
KUBERNETES_VERSION: Final = RELEASE.proven


def apiserver_flags(row: Release = RELEASE) -> tuple[str, ...]:
    """What every test API server of ``row`` is started with beyond the release's defaults.

    Only MutatingAdmissionPolicy, where it is a beta that is off by default (1.34, 1.35):
    ``export``'s output and the chart's ``native.enabled`` are proven there "with the
    gate", as the docs tell a self-managed cluster to run it. Everything else stays as the
    release ships it, which is what a managed cluster runs.
    """
    if row.mutating_policies_by_default:
        return ()
    return (
        f"--feature-gates={MUTATING_ADMISSION_POLICY}=true",
        f"--runtime-config={row.mutating_policy_api}=true",
    )


#: Helm, built beside the control plane for the chart's install/upgrade/rollback proofs.
#: v4.3.1 is the newest Helm the Go module proxy serves; its go.mod asks for the same
#: client-go line (v0.37) and Go 1.26.0. Helm 4 is the current major: new releases are
#: installed with server-side apply, so field managers matter (docs/operations.md).
HELM_VERSION: Final = "v4.3.1"
HELM_MODULE: Final = "helm.sh/helm/v4"

GOMOD_DIR: Final = Path(__file__).resolve().parent / "gomod"
RELEASE_MODULES_DIR: Final = GOMOD_DIR / "releases"
KUBERNETES_MODULE_DIR: Final = RELEASE_MODULES_DIR / KUBERNETES_VERSION / "kubernetes"
ETCD_MODULE_DIR: Final = RELEASE_MODULES_DIR / KUBERNETES_VERSION / "etcd"
HELM_MODULE_DIR: Final = GOMOD_DIR / "helm"

BINARIES: Final = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
STAMP_FILE: Final = ".stamp"
#: Helm has a stamp of its own: adding or moving it never rebuilds the control plane.
HELM_STAMP_FILE: Final = ".stamp-helm"


@dataclass(frozen=True, slots=True)
class Tool:
    """A program the scale bed runs beside the control plane, built from its own module.

    Each gets a module of its own under ``gomod/<name>`` (generated from the tool's own
    ``go.mod``: its ``go`` line and its ``replace`` lines), a binary in the same cache
    directory as the control plane and a stamp of its own, so adding one never rebuilds
    the others. ``version_flag`` is the ``-X`` assignment that makes ``--version`` true.
    """

    name: str
    module: str
    version: str
    package: str
    version_flag: str = ""

    @property
    def module_dir(self) -> Path:
        """Where its generated ``go.mod`` and ``go.sum`` live."""
        return GOMOD_DIR / self.name

    @property
    def stamp_file(self) -> str:
        """The stamp of a finished build, beside the binary."""
        return f".stamp-{self.name}"


#: kwok v0.8.0 simulates kubelets (node heartbeats and Leases, pod phases) for the scale bed;
#: Kyverno v1.19.1 is the policy engine the bed compares with. Both are the newest releases
#: the Go module proxy serves; both build with Go 1.26.
KWOK: Final = Tool(
    "kwok",
    "sigs.k8s.io/kwok",
    "v0.8.0",
    "sigs.k8s.io/kwok/cmd/kwok",
    "sigs.k8s.io/kwok/pkg/consts.Version=0.8.0",
)
KYVERNO: Final = Tool(
    "kyverno",
    "github.com/kyverno/kyverno",
    "v1.19.1",
    "github.com/kyverno/kyverno/cmd/kyverno",
    "github.com/kyverno/kyverno/pkg/version.BuildVersion=v1.19.1",
)
SCALE_TOOLS: Final = (KWOK, KYVERNO)


def cache_root() -> Path:
    """The per-user cache directory of the control-plane builds.

    ``$XDG_CACHE_HOME`` is honoured so that CI can point the cache at a persisted volume.
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "placement-webhooks" / "controlplane"


def binary_dir(version: str = KUBERNETES_VERSION) -> Path:
    """Where the binaries of ``version`` are (or will be) built.

    One directory per version, so switching the pin back and forth never rebuilds twice.
    """
    return cache_root() / version


def tools_dir() -> Path:
    """Where Helm, kwok and Kyverno are built: one copy whatever the release."""
    return cache_root() / "tools"
