"""The installations the scale bench compares, each one API server of its own on one etcd.

Every mode runs the same pinned kube-apiserver with the same flags; only admission differs:

* ``in-tree``: upstream's plugins that ours reimplement, configured from the default config
  (what a provider that enables them gives): the floor.
* ``webhooks``: the in-tree twins off, ``serve`` with the default config (2 workers x 4
  threads, its defaults), registered with ``webhook-config``'s output: the chart's default
  registration, mutating webhook failing open, validating failing closed (two calls a pod).
* ``webhooks-closed``: the same with ``--mutating-failure-policy=Fail``, the installation
  for clusters where no pod may be admitted without the policy: a pod no validating check
  can judge then costs one call.
* ``webhooks-full``: the same with ``bench/configs/full.yaml`` (every plugin and policy
  feature on).
* ``native``: the in-tree twins off and the policies ``export`` prints for the default config.
* ``hybrid``: ``export --hybrid``'s policies plus ``serve --native`` for what they cannot do.
* ``kyverno``: the in-tree twins off and Kyverno (one replica) with policies that store the
  same pods as ``webhooks`` does (``bench/scale/kyverno_policies.py``).

Why one API server per mode rather than one after another: modes measured side by side in
one run see the same machine load, so their ratios hold even when the absolute figures move.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.harness.admission import TWINS, AdmissionSetup, read
from controlplane.harness.components import ApiServer, ApiServerOptions
from controlplane.harness.controlplane import ControlPlane
from controlplane.harness.modes import apiserver_options
from controlplane.harness.nativepolicies import SENTINELS, ensure_namespace, install
from controlplane.harness.rest import Rest, collection
from controlplane.release import RELEASE
from webhooks.export import export
from webhooks.plugins import REGISTRY

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
FULL = CONFIGS / "full.yaml"
#: The Namespaces and RuntimeClasses every mode's cluster holds (the benches' usual ones).
CLUSTER = CONFIGS / "cluster.yaml"

NAMES = ("in-tree", "webhooks", "webhooks-closed", "webhooks-full", "native", "hybrid", "kyverno")
#: The ``webhook-config`` option of ``webhooks-closed``.
CLOSED = ("--mutating-failure-policy=Fail",)


@dataclass(frozen=True, slots=True)
class Mode:
    """One installation: its name, a line saying what runs, and its config file."""

    name: str
    what: str
    config: Path | None = None


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode(
            "in-tree",
            "in-tree plugins (DefaultTolerationSeconds, ExtendedResourceToleration, RuntimeClass)",
        ),
        Mode("webhooks", "serve, default config, 2 workers x 4 threads, one replica"),
        Mode("webhooks-closed", "as webhooks, mutating failurePolicy Fail: one call a plain pod"),
        Mode("webhooks-full", "serve, bench/configs/full.yaml, 2 workers x 4 threads", FULL),
        Mode("native", "export's MutatingAdmissionPolicies for the default config"),
        Mode("hybrid", "export --hybrid policies + serve --native"),
        Mode("kyverno", "Kyverno v1.19.1, one replica, policies storing the same pods"),
    )
}


def _twins_off(name: str) -> ApiServerOptions:
    return ApiServerOptions(name=name, admission=AdmissionSetup(disable=tuple(TWINS.values())))


def apiserver_for(mode: Mode, extra_args: tuple[str, ...] = ()) -> ApiServerOptions:
    """The API server options of ``mode`` (named after it), with ``extra_args`` added."""
    if mode.name in ("in-tree", "webhooks", "webhooks-closed", "webhooks-full"):
        base = apiserver_options("in-tree" if mode.name == "in-tree" else "webhooks", mode.config)
        if mode.name == "webhooks-closed":
            base = dataclasses.replace(base, webhook_args=(*base.webhook_args, *CLOSED))
    elif mode.name == "hybrid":
        base = ApiServerOptions(
            admission=_twins_off(mode.name).admission,
            webhooks=True,
            webhook_config=mode.config,
            webhook_args=("--native", "--kubernetes-version", RELEASE.name),
            serve_args=("--native", "--kubernetes-version", RELEASE.name),
        )
    else:
        base = _twins_off(mode.name)
    return ApiServerOptions(
        name=mode.name,
        admission=base.admission,
        webhooks=base.webhooks,
        webhook_config=base.webhook_config,
        extra_args=(*base.extra_args, *extra_args),
        webhook_args=base.webhook_args,
        serve_args=base.serve_args,
    )


def cluster_objects() -> list[dict[str, Any]]:
    """The benches' Namespaces and RuntimeClasses (``bench/configs/cluster.yaml``)."""
    return [doc for doc in yaml.safe_load_all(CLUSTER.read_text()) if doc]


@dataclass(slots=True)
class Installed:
    """A mode ready for traffic: its API server, the process trees that answer its reviews
    beside the API server (``serve``, Kyverno), and what stops them at the end."""

    mode: Mode
    server: ApiServer
    admission_pids: list[int] = field(default_factory=list)
    stop: Callable[[], None] = lambda: None


def install_mode(mode: Mode, plane: ControlPlane, directory: Path) -> Installed:
    """Create the cluster objects on ``mode``'s API server and install its policy engine.

    Native policies are waited for with the sentinels of :mod:`nativepolicies`, which are
    then deleted so the server runs the exported policies and nothing else.
    """
    server = plane.apiservers[mode.name]
    rest = Rest(server)
    ensure_namespace(rest, "default")
    for obj in cluster_objects():
        if obj["kind"] == "Namespace":
            metadata = {k: v for k, v in obj["metadata"].items() if k != "name"}
            ensure_namespace(rest, obj["metadata"]["name"], metadata)
        else:
            rest.apply_all([obj])
    installed = Installed(mode, server)
    if mode.name in plane.webhooks:
        installed.admission_pids.append(plane.webhooks[mode.name].component.proc.pid)
    if mode.name in ("native", "hybrid"):
        exported = export(
            read(mode.config), REGISTRY, hybrid=mode.name == "hybrid", release=RELEASE
        )
        install(rest, list(exported.objects))
        for sentinel in SENTINELS:
            rest.call("DELETE", f"{collection(sentinel)}/{sentinel['metadata']['name']}")
    if mode.name == "kyverno":
        from bench.scale import kyverno_policies
        from controlplane.harness import kyverno

        started = kyverno.start_kyverno(directory / "kyverno", server)
        kyverno.install_policies(server, kyverno_policies.for_config(mode.config))
        installed.admission_pids.append(started.component.proc.pid)
        installed.stop = lambda: kyverno.stop_kyverno(started, server)
    return installed


def available(names: tuple[str, ...]) -> tuple[list[Mode], list[str]]:
    """The modes of ``names`` that can run here, and a line for each that cannot."""
    from controlplane import build
    from controlplane.release import KYVERNO

    modes, skipped = [], []
    for name in names:
        if name == "kyverno" and not build.is_tool_built(KYVERNO):
            skipped.append("kyverno: not built (make scale builds it: needs Go and ~3 GB RAM)")
            continue
        modes.append(MODES[name])
    return modes, skipped


@contextlib.contextmanager
def installed_modes(
    modes: list[Mode], plane: ControlPlane, directory: Path
) -> Iterator[dict[str, Installed]]:
    """Every mode installed on its own API server of ``plane``; stopped again afterwards."""
    done: dict[str, Installed] = {}
    try:
        for mode in modes:
            done[mode.name] = install_mode(mode, plane, directory)
        yield done
    finally:
        for item in done.values():
            with contextlib.suppress(Exception):
                item.stop()
