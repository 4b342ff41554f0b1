"""The one pinned Kubernetes release, and where its binaries are cached.

Every real-control-plane test runs against one Kubernetes release, so ``KUBERNETES_VERSION``
below is the only place that names it: the Go modules under ``gomod/`` are generated from it
(``make controlplane-mod``), the build stamps its output with it, and the harness finds the
binaries through it. The binaries live outside the work tree because a cold build takes many
minutes and every clone and worktree of the project can share one.

Why v1.37.2: it is the newest patch of the newest minor the Go module proxy serves, and its
``go.mod`` asks for Go 1.26.0, which the project's machines have (no toolchain download).
Its ``cmd/kubeadm/app/constants`` recommends etcd 3.7.0, which the generator reads from there.

This module uses only the standard library: ``make e2e`` imports it before anything else, and
``make test`` never imports it at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

KUBERNETES_VERSION: Final = "v1.37.2"
#: Helm, built beside the control plane for the chart's install/upgrade/rollback proofs.
#: v4.3.1 is the newest Helm the Go module proxy serves; its go.mod asks for the same
#: client-go line (v0.37) and Go 1.26.0. Helm 4 is the current major: new releases are
#: installed with server-side apply, so field managers matter (docs/operations.md).
HELM_VERSION: Final = "v4.3.1"
HELM_MODULE: Final = "helm.sh/helm/v4"

GOMOD_DIR: Final = Path(__file__).resolve().parent / "gomod"
KUBERNETES_MODULE_DIR: Final = GOMOD_DIR / "kubernetes"
ETCD_MODULE_DIR: Final = GOMOD_DIR / "etcd"
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
