"""A whole control plane: etcd, one or more API servers, scheduler, controller-manager, serve.

Several API servers share one etcd, each under its own prefix, so the differential suite can
run ``in-tree``, ``webhooks`` and ``managed`` side by side for the price of one etcd; each is
a separate cluster as far as its clients can tell. The scheduler and the controller-manager
work against one of them (the first, unless named).

Start-up is ordered only where it must be: etcd and every API server start together (the
API server waits for etcd by itself); the scheduler, the controller-manager and ``serve``
start together once their API server is ready. Teardown runs in reverse, always: on
success, on a failed start, on a test failure (the fixture's ``finally``), at interpreter
exit (``atexit``), and, through ``PR_SET_PDEATHSIG``, even when this process is killed.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from controlplane.harness import components, webhookserver
from controlplane.harness.binaries import Binaries, locate
from controlplane.harness.components import (
    ApiServer,
    ApiServerOptions,
    ControllerManagerOptions,
    Etcd,
)
from controlplane.harness.process import Component, wait_until
from controlplane.harness.webhookserver import WebhookServer

START_TIMEOUT = 90.0
#: Set (to anything) to keep a run's directory (logs, kubeconfigs, etcd data) after it stops.
KEEP_ENV = "CONTROLPLANE_KEEP"


@dataclass(frozen=True, slots=True)
class ControlPlaneOptions:
    """What to run. ``controller_manager=None`` or ``scheduler=False`` leaves them out."""

    apiservers: tuple[ApiServerOptions, ...] = (ApiServerOptions(),)
    scheduler: bool = True
    controller_manager: ControllerManagerOptions | None = field(
        default_factory=ControllerManagerOptions
    )
    #: The API server the scheduler and the controller-manager work against ("": the first).
    components_for: str = ""
    timeout: float = START_TIMEOUT


class ControlPlane:
    """A running control plane; use :func:`running` (or ``start``/``stop``) around it."""

    def __init__(self, options: ControlPlaneOptions, binaries: Binaries | None = None) -> None:
        names = [api.name for api in options.apiservers]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"API server names must be given and unique, got {names}")
        self.options = options
        self.binaries = binaries or locate()
        self.directory = Path(tempfile.mkdtemp(prefix="placement-webhooks-cp-"))
        self.etcd: Etcd | None = None
        self.apiservers: dict[str, ApiServer] = {}
        self.webhooks: dict[str, WebhookServer] = {}
        self.started_in: float | None = None
        #: (milestone, seconds since start) of the last start, to see where start-up goes.
        self.timeline: list[tuple[str, float]] = []
        self._components: list[Component] = []

    @property
    def api(self) -> ApiServer:
        """The first API server (the only one, in most tests)."""
        return next(iter(self.apiservers.values()))

    @property
    def components(self) -> tuple[Component, ...]:
        """Every running component, in start order: what a bench reads CPU and memory of."""
        return tuple(self._components)

    def _add(self, component: Component) -> Component:
        self._components.append(component)
        return component

    def start(self) -> ControlPlane:
        """Start everything and wait until it is ready; on any failure, stop what started."""
        atexit.register(self.stop)
        self._began = time.monotonic()
        self.timeline = []
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - self._began
        return self

    def _reached(self, milestone: str) -> None:
        self.timeline.append((milestone, time.monotonic() - self._began))

    def _start(self) -> None:
        options, binaries, root = self.options, self.binaries, self.directory
        timeout = options.timeout
        etcd = self.etcd = components.start_etcd(binaries, root / "etcd")
        self._add(etcd.component)
        for api_options in options.apiservers:
            server = components.start_apiserver(
                binaries, root / f"apiserver-{api_options.name}", etcd, api_options
            )
            self._add(server.component)
            self.apiservers[api_options.name] = server
        wait_until(
            partial(components.etcd_ready, etcd),
            timeout=timeout,
            components=[etcd.component],
            what="healthy",
        )
        self._reached("etcd healthy")
        for server in self.apiservers.values():
            wait_until(
                partial(components.apiserver_ready, server),
                timeout=timeout,
                components=[etcd.component, server.component],
            )
        self._reached("API servers ready")

        target = self.apiservers[options.components_for or next(iter(self.apiservers))]
        waits: list[tuple[Component, Callable[[], bool]]] = []
        if options.scheduler:
            scheduler, port = components.start_scheduler(binaries, root / "scheduler", target)
            waits.append((self._add(scheduler), partial(components.healthz, port)))
        if options.controller_manager is not None:
            manager, port = components.start_controller_manager(
                binaries, root / "controller-manager", target, options.controller_manager
            )
            waits.append((self._add(manager), partial(components.manager_ready, port, target)))
        for server in self.apiservers.values():
            if server.options.webhooks:
                webhook = webhookserver.start(
                    root / f"webhooks-{server.name}",
                    server,
                    server.options.webhook_config,
                    server.options.serve_args,
                )
                self.webhooks[server.name] = webhook
                waits.append((self._add(webhook.component), partial(webhookserver.ready, webhook)))
        # What webhook-config prints needs only serve's URL and CA: ask while serve boots.
        registrations = {
            name: webhookserver.configurations(
                webhook,
                self.apiservers[name].options.webhook_config,
                self.apiservers[name].options.webhook_args,
            )
            for name, webhook in self.webhooks.items()
        }
        for component, ready in waits:
            wait_until(ready, timeout=timeout, components=[component])
            self._reached(f"{component.name} ready")
        for name, webhook in self.webhooks.items():
            server, objects = self.apiservers[name], registrations[name]
            webhookserver.register(server, objects)
            webhookserver.wait_active(server, webhook, objects)
            self._reached(f"{webhook.component.name} registered and called")

    def check(self) -> None:
        """Raise :class:`ComponentError` (with its log) if any component has exited."""
        for component in self._components:
            component.check()

    def stop(self) -> None:
        """Stop every component, newest first, and remove the run's directory.

        The directory stays when ``$CONTROLPLANE_KEEP`` is set. By default it goes, even
        after a failed start: the error already carries the tail of the log that explains
        it, and a long session would otherwise fill /tmp with etcd data.
        """
        atexit.unregister(self.stop)
        while self._components:
            component = self._components.pop()
            with contextlib.suppress(Exception):
                component.stop()
        if not os.environ.get(KEEP_ENV):
            shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def running(options: ControlPlaneOptions | None = None) -> Iterator[ControlPlane]:
    """A started control plane for the ``with`` block, always stopped afterwards."""
    plane = ControlPlane(options or ControlPlaneOptions()).start()
    try:
        yield plane
    finally:
        plane.stop()
