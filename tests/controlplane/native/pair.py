"""A native and a webhook API server side by side, with one config, for the comparisons.

``native``: the six in-tree twins off and the policies ``export`` printed for the config
installed (and in force, :func:`install.install`); ``webhooks``: ``MODE=webhooks`` with the
same config (``serve`` registered with ``webhook-config``'s output). Both on one etcd, each
under its own prefix; a controller-manager runs the ValidatingAdmissionPolicy status
controller against the native one, so its type checking can be read. The same
RuntimeClasses exist on both, created before the policies: a policy's param informer lists
them when it starts.
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
from tests.controlplane.native import cases
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
    def policy_names(self) -> list[str]:
        """The ValidatingAdmissionPolicies installed on the native API server."""
        return [
            str(obj["metadata"]["name"])  # type: ignore[index]
            for obj in self.exported.objects
            if obj["kind"] == "ValidatingAdmissionPolicy"
        ]


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
    ``webhook-config --native``, beside the policies ``export --hybrid`` prints.
    """
    exported = export(read(config), REGISTRY, hybrid=hybrid)
    native = native_options()
    if hybrid:
        native = ApiServerOptions(
            name="native",
            admission=native.admission,
            webhooks=True,
            webhook_config=config,
            webhook_args=("--native",),
            serve_args=("--native",),
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
