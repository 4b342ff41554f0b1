"""Pod storms through the controllers and the scheduler onto kwok nodes, one mode at a time.

A Deployment scaled from 0 to ``replicas``, then a Job of ``completions`` (parallelism
``parallelism``), on a control plane of its own per mode: etcd, the mode's API server,
kube-scheduler (its defaults: 50 QPS, burst 100), kube-controller-manager
(:func:`~controlplane.harness.fleet.controller_manager`: client QPS raised, so the
ReplicaSet and Job controllers are not what caps the rate), kwok and a
fleet of ``nodes``. A pod watch records, per pod, when it was first seen, first bound and
first Running (or Succeeded): time to all created, scheduled and Running, and the create
rate in 5-second steps. Modes run one after another (a storm saturates the machine; two at
once would measure each other), in the order given, and rounds rotate that order.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.scale import procs
from bench.scale.modes import Mode, apiserver_for, installed_modes
from controlplane.harness import ControlPlaneOptions, running
from controlplane.harness.components import DEFAULT_CONTROLLERS, ApiServer
from controlplane.harness.fleet import FleetShape, controller_manager, create_fleet
from controlplane.harness.kwok import start_kwok
from controlplane.harness.nativepolicies import ensure_namespace
from controlplane.harness.rest import Rest

NAMESPACE = "storm"
IMAGE = "registry.k8s.io/pause:3.10"
#: The fleet's controller-manager (client QPS raised, so the ReplicaSet and Job controllers
#: do not cap the rate), with the Job controller for the Job storm.
MANAGER = controller_manager(controllers=(*DEFAULT_CONTROLLERS, "job-controller"))


@dataclass(slots=True)
class PodTimes:
    """When the watch first saw each pod created, bound and running (or done)."""

    created: dict[str, float] = field(default_factory=dict)
    scheduled: dict[str, float] = field(default_factory=dict)
    running: dict[str, float] = field(default_factory=dict)


class PodWatch:
    """A watch on the storm namespace's pods, read in a thread; times by this process's clock.

    Why a raw stream: the watch carries thousands of events a second in a storm, and the
    ``kubernetes`` client's model objects would cost more CPU than the API server's work.
    """

    def __init__(self, server: ApiServer, selector: str) -> None:
        self.times = PodTimes()
        self._server, self._selector = server, selector
        self._stop = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PodWatch:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the pod watch did not start")
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.sock.shutdown(2)  # type: ignore[union-attr]
        self._thread.join(10)

    def _run(self) -> None:
        """Read events until stopped; a stream the server ends is reopened from the last
        resourceVersion seen, so no event is lost to a watch timeout."""
        parts = urlsplit(self._server.url)
        context = ssl.create_default_context(cafile=str(self._server.credentials.serving.ca))
        token = self._server.credentials.tokens["admin"]
        version = ""
        while not self._stop.is_set():
            conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=context)
            self._conn = conn
            path = f"/api/v1/namespaces/{NAMESPACE}/pods?watch=1&labelSelector={self._selector}" + (
                f"&resourceVersion={version}" if version else ""
            )
            try:
                conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
                response = conn.getresponse()
                self._ready.set()
                version = self._read(response, version)
            except (OSError, http.client.HTTPException):
                if self._stop.is_set():
                    return
                time.sleep(0.2)
            finally:
                conn.close()

    def _read(self, response: http.client.HTTPResponse, version: str) -> str:
        """Record every event of one stream; returns the last resourceVersion seen.

        Why bytes split by hand: ``read1`` hands over whatever has arrived, whole events or
        not, and a line is complete only at its newline; parsing per line keeps one event
        that cannot be read from ending the watch.
        """
        times = self.times
        pending = b""
        while not self._stop.is_set():
            data = response.read1(65536)
            if not data:
                return version
            now = time.monotonic()
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                event = json.loads(line)
                pod = event.get("object", {})
                metadata = pod.get("metadata", {})
                version = metadata.get("resourceVersion", version)
                name = metadata.get("name")
                if not name or event.get("type") in ("DELETED", "ERROR", "BOOKMARK"):
                    continue
                times.created.setdefault(name, now)
                if pod.get("spec", {}).get("nodeName"):
                    times.scheduled.setdefault(name, now)
                if pod.get("status", {}).get("phase") in ("Running", "Succeeded"):
                    times.running.setdefault(name, now)
        return version


def _template(app: str, restart: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


def deployment(replicas: int) -> dict[str, Any]:
    """The Deployment of the storm, ``replicas`` of a small pod."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template("web", "Always"),
        },
    }


def job(completions: int, parallelism: int) -> dict[str, Any]:
    """The Job of the storm: ``completions`` pods that kwok completes once they run."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch", "namespace": NAMESPACE},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": 0,
            "template": _template("batch", "Never"),
        },
    }


@dataclass(slots=True)
class StormResult:
    """One storm in one mode: the pods' times, the cost of the admission processes."""

    mode: str
    workload: str
    pods: int
    times: PodTimes
    began: float
    admission_cpu: float
    apiserver_cpu: float
    peak_rss_kib: int
    peak_pss_kib: int
    timed_out: bool = False

    def after(self, stamps: dict[str, float]) -> float | None:
        """Seconds from the start to the last of ``stamps``, if all pods have one."""
        if len(stamps) < self.pods:
            return None
        return max(stamps.values()) - self.began

    def rate(self, step: float = 5.0) -> list[int]:
        """Pods created per second in each ``step``-second window from the start."""
        counts: dict[int, int] = {}
        for stamp in self.times.created.values():
            counts[int((stamp - self.began) // step)] = (
                counts.get(int((stamp - self.began) // step), 0) + 1
            )
        if not counts:
            return []
        return [round(counts.get(i, 0) / step) for i in range(max(counts) + 1)]


def _storm(
    server: ApiServer,
    pids: list[int],
    mode: str,
    workload: str,
    pods: int,
    start: Any,
    timeout: float,
) -> StormResult:
    """Start one workload with ``start()`` and wait until its ``pods`` pods all run."""
    with PodWatch(server, f"app={workload}") as watch, procs.PeakMemory({"a": pids}) as peak:
        cpu0, api0 = procs.cpu_seconds(pids), procs.cpu_seconds([server.component.proc.pid])
        began = time.monotonic()
        start()
        deadline = began + timeout
        while len(watch.times.running) < pods and time.monotonic() < deadline:
            time.sleep(0.2)
        timed_out = len(watch.times.running) < pods
        cpu = procs.cpu_seconds(pids) - cpu0
        api = procs.cpu_seconds([server.component.proc.pid]) - api0
    rss, pss = peak.peaks.get("a", (0, 0))
    return StormResult(mode, workload, pods, watch.times, began, cpu, api, rss, pss, timed_out)


def run_mode(
    mode: Mode, directory: Path, *, nodes: int, replicas: int, completions: int, timeout: float
) -> list[StormResult]:
    """Both storms in ``mode`` on a control plane and fleet of their own."""
    options = ControlPlaneOptions(apiservers=(apiserver_for(mode),), controller_manager=MANAGER)
    with running(options) as plane:
        kwok = start_kwok(plane.directory / "kwok", plane.api)
        try:
            with installed_modes([mode], plane, directory / mode.name) as ready:
                item = ready[mode.name]
                create_fleet(plane.api, FleetShape(nodes=nodes))
                rest = Rest(plane.api)
                ensure_namespace(rest, NAMESPACE)
                rest.apply_all([deployment(0)])
                path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/web"
                scale = {"spec": {"replicas": replicas}}
                results = [
                    _storm(
                        plane.api,
                        item.admission_pids,
                        mode.name,
                        "web",
                        replicas,
                        lambda: plane.api.request(
                            "PATCH", path, scale, content_type="application/merge-patch+json"
                        ),
                        timeout,
                    )
                ]
                results.append(
                    _storm(
                        plane.api,
                        item.admission_pids,
                        mode.name,
                        "batch",
                        completions,
                        lambda: rest.apply_all([job(completions, min(completions, 500))]),
                        timeout,
                    )
                )
                return results
        finally:
            kwok.stop()


def rotations(modes: list[Mode], rounds: int) -> Iterator[list[Mode]]:
    """The order of the modes in each round: rotated, so none is always first."""
    for r in range(rounds):
        shift = r % len(modes)
        yield modes[shift:] + modes[:shift]


def _fmt(value: float | None) -> str:
    return f"{value:8.1f}" if value is not None else f"{'-':>8}"


def table(results: list[StormResult]) -> list[str]:
    """The printed rows: per storm and mode, times to all created/scheduled/running, cost."""
    lines = [
        f"  {'workload':8} {'mode':16} {'pods':>6} {'created s':>9} {'sched s':>8}"
        f" {'running s':>9} {'adm CPU s/1k':>12} {'api CPU s/1k':>12} {'peak PSS MiB':>12}"
    ]
    for result in results:
        per_k = 1000 / max(result.pods, 1)
        adm = f"{result.admission_cpu * per_k:12.2f}" if result.peak_pss_kib else f"{'-':>12}"
        pss = f"{result.peak_pss_kib / 1024:12.0f}" if result.peak_pss_kib else f"{'-':>12}"
        lines.append(
            f"  {result.workload:8} {result.mode:16} {result.pods:6d}"
            f" {_fmt(result.after(result.times.created)):>9}"
            f" {_fmt(result.after(result.times.scheduled))}"
            f" {_fmt(result.after(result.times.running)):>9}"
            f" {adm} {result.apiserver_cpu * per_k:12.2f} {pss}"
            + ("  (timed out)" if result.timed_out else "")
        )
    lines.append("  create rate, pods/s per 5 s from the scale-up:")
    for result in results:
        lines.append(f"    {result.workload:8} {result.mode:16} {result.rate()}")
    return lines
