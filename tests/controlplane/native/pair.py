"""A native and a webhook API server side by side, with one config, for the comparisons.

``native``: the six in-tree twins off and the policies ``export`` printed for the config
installed (and in force, :func:`install.install`); ``webhooks``: ``MODE=webhooks`` with the
same config (``serve`` registered with ``webhook-config``'s output). Both on one etcd, each
under its own prefix; a controller-manager runs the ValidatingAdmissionPolicy status
controller against the native one, so its type checking can be read. The same
RuntimeClasses exist on both, created before the policies: a policy's param informer lists
them when it starts.

Everything is exported for the running release (:data:`controlplane.release.RELEASE`): its
MutatingAdmissionPolicy version, and only the CEL it accepts. Where the release refuses a
plugin's half, the native API server runs as a hybrid installation (the webhook keeps what
the release cannot express), so the comparison covers everything exported and the refusal
is what the report says; :attr:`Pair.refused` lets a test about one half say it was refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.harness import (
    ApiServerOptions,
    ControllerManagerOptions,
    ControlPlane,
    ControlPlaneOptions,
    running,
)
from controlplane.harness.admission import TWINS, AdmissionSetup, read
from controlplane.harness.modes import apiserver_options
from controlplane.harness.nativepolicies import install
from controlplane.harness.rest import Rest
from controlplane.release import RELEASE
from tests.controlplane.native import cases
from webhooks.core.config import Config
from webhooks.export import Export, export
from webhooks.plugins import REGISTRY

#: The controllers the comparison needs: service accounts (the harness waits for
#: ``default/default``) and the policies' type checking.
CONTROLLERS = ("serviceaccount-controller", "validatingadmissionpolicy-status-controller")


@dataclass(slots=True)
class Pair:
    """The two API servers, their clients, and what was exported."""

    plane: ControlPlane
    native: Rest
    webhooks: Rest
    exported: Export

    @property
    def refused(self) -> frozenset[tuple[str, str]]:
        """The (plugin, phase) halves the running release's CEL cannot express."""
        return self.exported.refused

    def refusal(self, plugin: str) -> str:
        """The report's line for ``plugin`` when the release refused a half of it, else ""."""
        if not any(name == plugin for name, _ in self.refused):
            return ""
        return next(
            line for line in self.exported.report() if line.startswith(f"plugins.{plugin}:")
        )

    @property
    def policy_names(self) -> list[str]:
        """The ValidatingAdmissionPolicies installed on the native API server."""
        return [
            str(obj["metadata"]["name"])  # type: ignore[index]
            for obj in self.exported.objects
            if obj["kind"] == "ValidatingAdmissionPolicy"
        ]


def export_here(config: Config, only: tuple[str, ...] = (), *, hybrid: bool = False) -> Export:
    """``export --kubernetes-version <the running release>`` of ``config``."""
    return export(config, REGISTRY, only, hybrid=hybrid, release=RELEASE)


#: What ``serve --native`` and ``webhook-config --native`` are given beside ``--native``.
RELEASE_ARGS = ("--kubernetes-version", RELEASE.name)


def native_options(name: str = "native") -> ApiServerOptions:
    """An API server with the in-tree twins off and nothing else: where exported policies run."""
    return ApiServerOptions(name=name, admission=AdmissionSetup(disable=tuple(TWINS.values())))


@contextlib.contextmanager
def pair(
    config: Path | None,
    extra: list[dict[str, Any]] | None = None,
    *,
    hybrid: bool = False,
) -> Iterator[Pair]:
    """Both API servers for ``config``; ``extra`` objects are created on both first.

    ``hybrid``: the native API server also runs ``serve --native``, registered with
    ``webhook-config --native``, beside the policies ``export --hybrid`` prints; also when
    the running release refuses a half (see the module docstring).
    """
    exported = export_here(read(config), hybrid=hybrid)
    if exported.refused and not hybrid:
        hybrid, exported = True, export_here(read(config), hybrid=True)
    native = native_options()
    if hybrid:
        native = ApiServerOptions(
            name="native",
            admission=native.admission,
            webhooks=True,
            webhook_config=config,
            webhook_args=("--native", *RELEASE_ARGS),
            serve_args=("--native", *RELEASE_ARGS),
        )
    options = ControlPlaneOptions(
        apiservers=(native, apiserver_options("webhooks", config)),
        scheduler=False,
        controller_manager=ControllerManagerOptions(controllers=CONTROLLERS),
        components_for="native",
    )
    with running(options) as plane:
        both = Pair(
            plane,
            Rest(plane.apiservers["native"]),
            Rest(plane.apiservers["webhooks"]),
            exported,
        )
        for rest in (both.native, both.webhooks):
            rest.apply_all([*cases.runtime_class_objects(), *(extra or [])])
        install(both.native, list(exported.objects))
        yield both
