"""The offline tools on a live bed, measured: ``explain`` over every node and a sample of
pods, compared with the real scheduler's bindings, and ``audit`` of the whole cluster.

Why a real process for each: what a user feels is the command's wall time and the memory
the machine must have for it, kubeconfig loading, paged LISTs and JSON output included, and
a child's peak RSS is measured apart from the bench's own (``os.wait4`` returns the
resource usage of exactly that child).

``explain -n NS`` explains one pod per controller (they share a template), so the sample is
given to it as files instead: each sampled pod as its creator sent it
(:func:`webhooks.audit.recreate.as_created`, the binding and status left out) under its own
name, with the nodes read from the cluster through ``--kubeconfig``. The answers are then
judged by :func:`controlplane.harness.compare.disagreements`, pod by pod.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from controlplane.harness import components
from controlplane.harness.compare import disagreements
from controlplane.harness.components import ApiServer
from controlplane.harness.controlplane import ControlPlane, ControlPlaneOptions, running
from controlplane.harness.fleet import Fleet, FleetShape, controller_manager, create_fleet
from controlplane.harness.kwok import start_kwok
from controlplane.harness.modes import apiserver_options
from controlplane.harness.process import Component, wait_until
from controlplane.harness.scheduling import Outcome
from controlplane.harness.workload import KIND_LABEL, decision_of, list_all, request

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"

TIMEOUT = 3600.0


@dataclass(frozen=True, slots=True)
class Measured:
    """One finished command: exit code, output files, wall seconds and peak RSS in MiB."""

    args: tuple[str, ...]
    code: int
    stdout: Path
    stderr: Path
    seconds: float
    peak_rss_mib: float

    def json(self) -> Any:
        """stdout decoded as JSON; fails with the command's stderr when it is not."""
        try:
            return json.loads(self.stdout.read_bytes())
        except ValueError as exc:
            tail = self.stderr.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(self.args)} printed no JSON: {tail}") from exc


def measured(
    args: Sequence[str], directory: Path, name: str, *, timeout: float = TIMEOUT
) -> Measured:
    """``placement-webhooks ARGS...`` in a fresh interpreter, stdout and stderr to files in
    ``directory``; waited for with ``os.wait4`` for its own peak RSS.

    Why files: ``explain -o json`` over a thousand nodes prints tens of megabytes, which a
    pipe would make this process hold while the child runs.
    """
    directory.mkdir(parents=True, exist_ok=True)
    out, err = directory / f"{name}.out", directory / f"{name}.err"
    argv = (sys.executable, "-m", "webhooks", *args)
    began = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr)
        deadline = began + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
    seconds = time.monotonic() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux.
    return Measured(tuple(args), proc.returncode, out, err, seconds, usage.ru_maxrss / 1024)


def sample(pods: Mapping[str, Mapping[str, Any]], size: int, seed: int) -> list[str]:
    """``size`` pod keys (``namespace/name``) drawn at random with ``seed``, stratified by
    the workload's :data:`~controlplane.harness.workload.KIND_LABEL`.

    Why stratified: the kinds are of very different sizes (a few stranded pods among tens
    of thousands), and a sample that misses a kind says nothing about it. Each kind gets
    its share of ``size`` and at least a twentieth of it (all its pods if it has fewer);
    the draw is then trimmed to ``size`` at random.
    """
    rng = random.Random(seed)
    by_kind: dict[str, list[str]] = defaultdict(list)
    for key in sorted(pods):
        kind = (pods[key]["metadata"].get("labels") or {}).get(KIND_LABEL, "other")
        by_kind[kind].append(key)
    total = sum(len(keys) for keys in by_kind.values())
    floor = max(1, size // 20)
    drawn: list[str] = []
    for kind in sorted(by_kind):
        keys = by_kind[kind]
        wanted = max(floor, round(size * len(keys) / total)) if total else 0
        drawn += rng.sample(keys, min(len(keys), wanted))
    if len(drawn) > size:
        drawn = rng.sample(drawn, size)
    return sorted(drawn)


def _as_created(pod: Mapping[str, Any]) -> dict[str, Any]:
    from webhooks.audit.recreate import as_created

    # Items of a LIST carry no apiVersion and kind; the reader needs both.
    created = {"apiVersion": "v1", "kind": "Pod", **as_created(pod)}
    created["metadata"] = {**created["metadata"], "name": pod["metadata"]["name"]}
    created["metadata"]["namespace"] = pod["metadata"]["namespace"]
    created["metadata"].pop("generateName", None)
    return created


def unhealthy_nodes(server: ApiServer) -> set[str]:
    """Nodes not Ready, or carrying a ``not-ready``/``unreachable`` taint, right now.

    Why watch them: on a loaded machine kwok may renew a Lease late, and the node lifecycle
    controller then taints the node for a while. A scheduler that judged a pod while a node
    was tainted, and an ``explain`` that reads the node after, see different clusters; the
    bench says when that happened instead of calling it a disagreement about ``explain``.
    """
    bad: set[str] = set()
    for node in list_all(server, "/api/v1/nodes"):
        conditions = node.get("status", {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        tainted = any(
            t.get("key", "") in (NOT_READY, UNREACHABLE)
            for t in node.get("spec", {}).get("taints") or []
        )
        if not ready or tainted:
            bad.add(node["metadata"]["name"])
    return bad


def settle(server: ApiServer, *, timeout: float = 600.0) -> float:
    """Wait until every node is Ready and untainted; the seconds it took."""
    began = time.monotonic()
    wait_until(lambda: not unhealthy_nodes(server), timeout=timeout, what="settled", interval=2)
    return time.monotonic() - began


def redecide(
    server: ApiServer, pods: Mapping[str, Mapping[str, Any]], keys: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The pods ``keys`` that the scheduler found unschedulable and no controller owns,
    deleted and created again as their creators sent them, until decided anew; returns
    ``pods`` with their new stored forms.

    Why: such a pod's reasons are those of the scheduler's last attempt, which may be
    minutes old, and nodes may have changed since (:func:`unhealthy_nodes`); a fresh
    attempt on a settled cluster is what ``explain``, reading the nodes now, must match.
    """
    fresh = {k: dict(v) for k, v in pods.items()}
    again = [
        k
        for k in keys
        if not pods[k]["spec"].get("nodeName") and not pods[k]["metadata"].get("ownerReferences")
    ]
    for key in again:
        namespace, name = key.split("/", 1)
        path = f"/api/v1/namespaces/{namespace}/pods"
        status, body = request(server, "DELETE", f"{path}/{name}", {"gracePeriodSeconds": 0})
        if status not in (200, 404):
            raise RuntimeError(f"could not delete {key}: {status} {body}")
        wait_until(
            lambda p=f"{path}/{name}": request(server, "GET", p)[0] == 404,
            timeout=60,
            what=f"deleted ({key})",
        )
        status, body = request(server, "POST", path, _as_created(pods[key]))
        if status != 201:
            raise RuntimeError(f"could not create {key} again: {status} {body}")

    def decided() -> bool:
        for key in again:
            namespace, name = key.split("/", 1)
            status, body = request(server, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
            if status != 200 or decision_of(body) is None:
                return False
            fresh[key] = body
        return True

    wait_until(decided, timeout=300, what=f"decided again ({len(again)} pods)", interval=1)
    return fresh


@dataclass(frozen=True, slots=True)
class Agreement:
    """``explain`` against the scheduler on a sample: counts, disagreements, cost."""

    sampled: int
    bound: int
    unschedulable: int
    disagreements: list[str]
    run: Measured
    nodes: int

    @property
    def agreed(self) -> int:
        """Sampled pods on which both said the same."""
        return self.sampled - len(self.disagreements)


def explain_sample(
    server: ApiServer,
    pods: Mapping[str, Mapping[str, Any]],
    keys: Sequence[str],
    directory: Path,
) -> Agreement:
    """``explain --kubeconfig -o json`` on the pods ``keys`` (every node of the cluster),
    and where it disagrees with the scheduler's decision stored on each.

    ``pods`` are the stored pods by ``namespace/name`` (:func:`~controlplane.harness.
    workload.stored_pods`); every sampled pod must be decided (bound, or found
    unschedulable).
    """
    directory.mkdir(parents=True, exist_ok=True)
    outcomes: dict[str, Outcome] = {}
    for key in keys:
        outcome = decision_of(pods[key])
        if outcome is None:
            raise ValueError(f"{key} has no scheduling decision yet")
        outcomes[key] = Outcome(key, outcome.node, outcome.message)
    manifests = directory / "sample.json"
    manifests.write_text(
        json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": [_as_created(pods[k]) for k in keys]}
        )
    )
    run = measured(
        [
            "explain",
            "--kubeconfig",
            str(server.kubeconfig),
            "-o",
            "json",
            str(manifests),
        ],
        directory,
        "explain",
    )
    if run.code not in (0, 1):
        raise RuntimeError(f"explain exited {run.code}: {run.stderr.read_text()[-2000:]}")
    report = run.json()
    answers = {_key(answer["pod"]): answer for answer in report["pods"]}
    missing = sorted(set(keys) - set(answers))
    found = [f"{key}: explain gave no answer" for key in missing]
    present = {k: v for k, v in outcomes.items() if k in answers}
    stored = {k: pods[k] for k in present}
    found += disagreements(answers, present, stored)
    nodes = max((len(a.get("nodes", [])) for a in answers.values()), default=0)
    bound = sum(o.bound for o in outcomes.values())
    return Agreement(len(keys), bound, len(keys) - bound, found, run, nodes)


def _key(pod: str) -> str:
    """``namespace/name`` from explain's pod title (``Pod namespace/name`` or the like)."""
    return pod.rsplit(" ", 1)[-1]


@dataclass(frozen=True, slots=True)
class Audit:
    """``audit`` of the whole cluster: what it read, what it found, and its cost."""

    objects: dict[str, int]
    #: Results as reported (a controller's pods share one), and the pods they cover.
    findings: int
    results: dict[str, int]
    pods_affected: int
    run: Measured


def audit_cluster(server: ApiServer, directory: Path, config: Path | None = None) -> Audit:
    """``audit --kubeconfig -o json --exit-zero`` over the whole cluster, measured; with
    ``config``, the policy it audits against (our defaults otherwise)."""
    run = measured(
        [
            "audit",
            "--kubeconfig",
            str(server.kubeconfig),
            "-o",
            "json",
            "--exit-zero",
            *(["--config", str(config)] if config else []),
        ],
        directory,
        "audit",
    )
    if run.code != 0:
        raise RuntimeError(f"audit exited {run.code}: {run.stderr.read_text()[-2000:]}")
    report = run.json()
    summary = report.get("summary", {})
    results = report.get("results", [])
    counted: dict[str, int] = defaultdict(int)
    for result in results:
        counted[str(result.get("result", "?"))] += 1
    affected = sum(int((r.get("properties") or {}).get("pods", 1)) for r in results)
    return Audit(dict(summary.get("objects", {})), len(results), dict(counted), affected, run)


#: The client rate the scheduler gets on a bed of tens of thousands of pods: its default
#: (50 per second, bursts of 100) would make binding 30,000 pods a ten-minute wait on the
#: client's rate limiter alone. (The controller-manager gets the fleet's own rate.)
API_QPS = ("--kube-api-qps=500", "--kube-api-burst=1000")


def start_scheduler(plane: ControlPlane) -> Component:
    """kube-scheduler for ``plane``'s API server with :data:`API_QPS`, once it is healthy.

    Why not the harness's: that one keeps the scheduler's default client rate, and the
    harness takes no scheduler flags; this one is the same command line plus the rate
    (the flags apply because no ``--config`` is given).
    """
    scheduler, port = components.start_scheduler(
        plane.binaries, plane.directory / "scheduler", plane.api, API_QPS
    )
    try:
        wait_until(partial(components.healthz, port), timeout=60, components=[scheduler])
    except BaseException:
        scheduler.stop()
        raise
    return scheduler


@contextlib.contextmanager
def offline_bed(shape: FleetShape, *, ready_timeout: float = 900.0) -> Iterator[Bed]:
    """A control plane (etcd, kube-apiserver with the in-tree plugins of our default config,
    kube-scheduler at :data:`API_QPS`, kube-controller-manager as
    :func:`~controlplane.harness.fleet.controller_manager` makes it), kwok, and the fleet of
    ``shape`` written and Ready; everything stopped afterwards.

    Why the in-tree plugins of our default config: ``explain`` admits each pod with our
    default config, so the cluster must have admitted it the same way for the placements
    to be comparable (they are upstream's defaults plus ExtendedResourceToleration).
    """
    options = ControlPlaneOptions(
        apiservers=(apiserver_options("in-tree", None, name="main"),),
        scheduler=False,
        # Upstream's node monitor timing: a kwok Lease renewed late on a busy machine must
        # not make a node NotReady and its pods evicted in the middle of a measurement.
        controller_manager=controller_manager(50, period="5s"),
    )
    with running(options) as plane:
        scheduler = start_scheduler(plane)
        try:
            kwok = start_kwok(plane.directory / "kwok", plane.api)
            try:
                fleet = create_fleet(plane.api, shape, timeout=ready_timeout)
                yield Bed(plane, fleet)
            finally:
                kwok.stop()
        finally:
            scheduler.stop()


@dataclass(frozen=True, slots=True)
class Bed:
    """A running control plane with its kwok fleet."""

    plane: ControlPlane
    fleet: Fleet

    @property
    def api(self) -> ApiServer:
        """The bed's API server."""
        return self.plane.api
