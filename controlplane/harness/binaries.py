"""The four binaries of the pinned release, found in the build cache.

The harness never builds: a build takes many minutes and needs Go, which is a decision for
``make e2e`` (or ``make controlplane``), not for a fixture halfway through a test session.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controlplane import build
from controlplane.release import KUBERNETES_VERSION, binary_dir


class NotBuilt(RuntimeError):
    """The cache holds no finished build of the pinned release."""


@dataclass(frozen=True, slots=True)
class Binaries:
    """Paths of etcd, kube-apiserver, kube-scheduler and kube-controller-manager."""

    directory: Path

    @property
    def etcd(self) -> Path:
        """The etcd server."""
        return self.directory / "etcd"

    @property
    def kube_apiserver(self) -> Path:
        """kube-apiserver."""
        return self.directory / "kube-apiserver"

    @property
    def kube_scheduler(self) -> Path:
        """kube-scheduler."""
        return self.directory / "kube-scheduler"

    @property
    def kube_controller_manager(self) -> Path:
        """kube-controller-manager."""
        return self.directory / "kube-controller-manager"


def locate() -> Binaries:
    """The finished build of the pinned release; :class:`NotBuilt` says how to make it."""
    if not build.is_built():
        raise NotBuilt(
            f"no finished build of Kubernetes {KUBERNETES_VERSION} in {binary_dir()}: "
            "run `make controlplane` (needs Go and the Go module proxy)"
        )
    return Binaries(binary_dir())
