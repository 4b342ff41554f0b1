"""Failover at scale: a tenth of a kwok fleet stops renewing its Leases, and every pod the
taint eviction controller deletes is timed against ``explain``'s forecast.

The bed: the real control plane in mode ``webhooks`` with the fleet's policy
(``bench/configs/fleet.yaml``, cluster defaults of :data:`DEFAULT_SECONDS` so a run ends in
minutes), kube-controller-manager with a node monitor grace period of 40 s (upstream's
before v1.32) looking every :data:`PERIOD`, kwok playing the kubelets of ``--nodes`` Nodes
(:mod:`controlplane.harness.fleet`), and one Deployment per namespace of
:data:`NAMESPACES`. Each namespace sets its own failover time with
``placement-webhooks.io/unreachable-seconds`` (``namespaceOverrides``), but one, which gets
the cluster default. The Deployments' pods spread over the general pool.

Then a tenth of the Nodes (from the general pool, across zones) stop renewing their Leases
and status heartbeats (:func:`controlplane.harness.kwok.stop_heartbeats`). ``explain
--fail`` with the same grace period, eviction rate and config forecasts, for each
namespace and failed node, when its pods are deleted; a watch sees each deletion. A pod's
time counts from its node's last Lease renewal (``renewTime``, microseconds, from kwok's
clock, which is this machine's).

Why ``--node-eviction-rate`` is raised (100 nodes/s, given to the controller and to
``explain`` alike): at upstream's 0.1 the controller taints a zone's failed nodes ten
seconds apart in the order its cache lists them, which is no order a forecast can know;
the forecast of the whole set would hold and each pod's would not. Why the controller-
manager's client may send 1,000 requests/s
(:data:`controlplane.harness.fleet.CONTROLLER_MANAGER_ARGS`): a namespace's evictions all
fall due in the same second, and at its default 20/s the client's own rate limit, not the
controllers, would decide when the last pod goes.

Prints one row per namespace: pods evicted, the forecast, the measured median and maximum
(seconds from the node's last renewal), the largest error. Target: every pod within 2 s.

Usage: python -m bench.scale.failover [--nodes 200] [--replicas 200] [--share 0.1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    create_namespace,
    running,
)
from controlplane.harness.cli import placement_webhooks
from controlplane.harness.fleet import FleetShape, controller_manager, create_fleet
from controlplane.harness.kwok import lease_renewals, start_kwok, stop_heartbeats
from controlplane.harness.modes import apiserver_options
from controlplane.harness.nodes import UNREACHABLE

FLEET_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "fleet.yaml"
GRACE = 40
#: How often the node monitor looks. It notices a renewal up to one period late and the
#: expiry up to one period late again, a lag no forecast knows: 0.25 s keeps it at 0.5 s.
PERIOD = "250ms"
EVICTION_RATE = 100.0
#: The cluster default (in place of 300 s) the namespace without an override gets.
DEFAULT_SECONDS = 60
#: Namespace -> its ``unreachable-seconds`` (``None``: the cluster default).
NAMESPACES: dict[str, int | None] = {
    "failover-at-once": 0,
    "failover-5s": 5,
    "failover-20s": 20,
    "failover-default": None,
}
OVERRIDE = "placement-webhooks.io/unreachable-seconds"
APP_LABEL = "scale.placement-webhooks.io/failover"
WITHIN = 2.0


def failover_config(directory: Path) -> Path:
    """``fleet.yaml`` with the cluster defaults of :data:`DEFAULT_SECONDS`, written there."""
    config = yaml.safe_load(FLEET_CONFIG.read_text())
    config["plugins"]["default-toleration-seconds"].update(
        notReadySeconds=DEFAULT_SECONDS, unreachableSeconds=DEFAULT_SECONDS
    )
    path = directory / "failover.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def plane_options(config: Path) -> ControlPlaneOptions:
    """Mode ``webhooks`` with ``config``; the node lifecycle of :data:`GRACE` and
    :data:`EVICTION_RATE`, and a controller-manager client without a tight rate limit."""
    return ControlPlaneOptions(
        apiservers=(apiserver_options("webhooks", config, name="main"),),
        controller_manager=controller_manager(GRACE, period=PERIOD, eviction_rate=EVICTION_RATE),
    )


def deployment(name: str, replicas: int) -> dict[str, Any]:
    """A Deployment of small pods (100m, 128Mi), so they spread over the general pool."""
    labels = {APP_LABEL: name}
    container = {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "terminationGracePeriodSeconds": 30},
            },
        },
    }


def _pods(plane: ControlPlane) -> list[dict[str, Any]]:
    for _ in range(5):  # the probe client gives up after 5 s, which a busy server may take
        status, body = plane.api.get(f"/api/v1/pods?labelSelector={APP_LABEL}")
        if status == 200:
            break
    else:
        raise RuntimeError(f"could not list pods: {status} {body}")
    items: list[dict[str, Any]] = body["items"]
    return items


def _running(plane: ControlPlane, wanted: int) -> bool:
    pods = _pods(plane)
    return sum(p.get("status", {}).get("phase") == "Running" for p in pods) >= wanted


class Sightings:
    """First sightings (wall clock) of each watched pod's deletion and of each Node's
    ``unreachable:NoExecute`` taint, from two watch threads.

    Why wall-clock time: it is compared with Lease ``renewTime``s, which kwok stamps from
    this machine's clock. Why the taint too: it splits each pod's time into the node
    lifecycle controller's part and the taint eviction controller's. Each watch stays open
    for the whole run (a reopened watch would list every pod again, which on a loaded
    machine delays the events behind it).
    """

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        core = client.CoreV1Api(api_client)
        self.deleted: dict[tuple[str, str], float] = {}
        self.tainted: dict[str, float] = {}
        self.errors: list[str] = []
        self._stopped = threading.Event()
        self._threads = [
            threading.Thread(
                target=self._watch,
                args=(core.list_pod_for_all_namespaces, self._pod),
                kwargs={"label_selector": APP_LABEL},
                daemon=True,
            ),
            threading.Thread(target=self._watch, args=(core.list_node, self._node), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Stop recording (the daemon threads end with the connection)."""
        self._stopped.set()

    def _watch(self, lister: Any, seen: Any, **selector: str) -> None:
        from kubernetes import watch

        while not self._stopped.is_set():
            try:
                stream = watch.Watch().stream(
                    lister, timeout_seconds=3600, _preload_content=False, **selector
                )
                for event in stream:
                    if self._stopped.is_set():
                        return
                    seen(time.time(), event["type"], event["raw_object"])
            except Exception as exc:  # reopened; kept for the report
                self.errors.append(str(exc))
                time.sleep(0.1)

    def _pod(self, moment: float, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            self.deleted.setdefault((meta["namespace"], meta["name"]), moment)

    def _node(self, moment: float, kind: str, node: dict[str, Any]) -> None:
        for taint in node.get("spec", {}).get("taints") or []:
            if taint.get("key") == UNREACHABLE and taint.get("effect") == "NoExecute":
                self.tainted.setdefault(node["metadata"]["name"], moment)


def forecast(
    plane: ControlPlane, config: Path, failing: Sequence[str]
) -> dict[tuple[str, str], float | None]:
    """``explain --fail``'s forecast: seconds from failure to deletion, by (namespace, node)."""
    forecasts: dict[tuple[str, str], float | None] = {}
    for namespace in NAMESPACES:
        run = placement_webhooks(
            plane.api,
            "explain",
            "-n",
            namespace,
            "--fail",
            ",".join(failing),
            "--node-monitor-grace-period",
            f"{GRACE}s",
            "--node-eviction-rate",
            str(EVICTION_RATE),
            "--secondary-node-eviction-rate",
            str(EVICTION_RATE),
            "--config",
            str(config),
            "-o",
            "json",
        )
        if run.code not in (0, 1):
            raise RuntimeError(f"explain failed: {run.stderr}")
        for eviction in run.json()["failure"]["evictions"]:
            forecasts[(namespace, eviction["node"])] = eviction["at"]
    return forecasts


@dataclass(frozen=True, slots=True)
class Row:
    """One namespace's evictions: the forecast and what was measured, in seconds."""

    namespace: str
    tolerated: str
    expected: int
    evicted: int
    forecast: str
    median: float
    worst: float
    error: float


def measure(
    nodes: int, replicas: int, share: float, *, out: Any = print
) -> tuple[list[Row], dict[str, Any]]:
    """Run the whole scenario; the rows and a few figures about the bed (see module doc)."""
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="failover-") as scratch:
        config = failover_config(Path(scratch))
        with running(plane_options(config)) as plane:
            kwok = start_kwok(plane.directory / "kwok", plane.api)
            try:
                return _scenario(plane, config, nodes, replicas, share, figures, out), figures
            finally:
                kwok.stop()


def _scenario(
    plane: ControlPlane,
    config: Path,
    nodes: int,
    replicas: int,
    share: float,
    figures: dict[str, Any],
    out: Any,
) -> list[Row]:
    from controlplane.harness.process import wait_until

    fleet = create_fleet(plane.api, FleetShape(nodes=nodes))
    out(
        f"fleet of {nodes} nodes: written in {fleet.created_in:.1f} s, "
        f"Ready in {fleet.ready_in:.1f} s"
    )
    with plane.api.client() as api:
        for namespace, seconds in NAMESPACES.items():
            annotations = {} if seconds is None else {OVERRIDE: str(seconds)}
            create_namespace(api, namespace, annotations=annotations)
            status, body = plane.api.request(
                "POST",
                f"/apis/apps/v1/namespaces/{namespace}/deployments",
                deployment("spread", replicas),
            )
            if status != 201:
                raise RuntimeError(f"could not create the Deployment: {status} {body}")
        total = replicas * len(NAMESPACES)
        began = time.monotonic()
        wait_until(
            lambda: _running(plane, total), timeout=600, what=f"running ({total} pods)", interval=1
        )
        out(f"{total} pods Running in {time.monotonic() - began:.1f} s")

        general = fleet.pools["general"]
        count = max(1, int(nodes * share))
        step = max(1, len(general) // count)
        failing = general[::step][:count]
        predicted = forecast(plane, config, failing)
        on_failing = {
            (p["metadata"]["namespace"], p["metadata"]["name"]): p["spec"]["nodeName"]
            for p in _pods(plane)
            if p["spec"].get("nodeName") in set(failing)
        }
        sightings = Sightings(api)
        time.sleep(2)  # the watches have listed what is there
        try:
            stop_heartbeats(plane.api, failing)
            time.sleep(2)  # a renewal already under way lands
            renewed = lease_renewals(plane.api)
            last = {n: renewed[n].timestamp() for n in failing}
            latest = max((at for at in predicted.values() if at is not None), default=0.0)
            deadline = max(last.values()) + latest + WITHIN + 5
            while time.time() < deadline:
                time.sleep(0.5)
            after = lease_renewals(plane.api)
            figures["renewed after the stop"] = sum(after[n].timestamp() > last[n] for n in failing)
        finally:
            sightings.close()
    figures["failed nodes"] = len(failing)
    figures["pods on failed nodes"] = len(on_failing)
    taken = sorted(sightings.tainted[n] - last[n] for n in failing if n in sightings.tainted)
    figures["nodes tainted"] = len(taken)
    if taken:
        figures["taint seen after (s)"] = (
            f"{statistics.median(taken):.2f} median, {taken[-1]:.2f} max (forecast {GRACE})"
        )
    figures["watch errors"] = len(sightings.errors)
    return _rows(on_failing, predicted, last, sightings.deleted)


def _rows(
    on_failing: dict[tuple[str, str], str],
    predicted: dict[tuple[str, str], float | None],
    last: dict[str, float],
    seen: dict[tuple[str, str], float],
) -> list[Row]:
    rows = []
    for namespace, seconds in NAMESPACES.items():
        pods = {key: node for key, node in on_failing.items() if key[0] == namespace}
        measured, errors, forecasts = [], [], set()
        missing = 0
        for key, node in pods.items():
            expected = predicted.get((namespace, node))
            forecasts.add(expected)
            if key not in seen:
                missing += 1
                continue
            taken = seen[key] - last[node]
            measured.append(taken)
            errors.append(abs(taken - expected) if expected is not None else float("inf"))
        known = sorted(f for f in forecasts if f is not None)
        shown = "never" if not known else f"{known[0]:g}"
        if len(known) > 1:  # the k-th node of a zone is tainted k / rate seconds after the first
            shown += f" to {known[-1]:g}"
        if None in forecasts and known:
            shown += " or never"
        rows.append(
            Row(
                namespace,
                f"{DEFAULT_SECONDS} (default)" if seconds is None else str(seconds),
                len(pods),
                len(measured),
                shown,
                statistics.median(measured) if measured else float("nan"),
                max(measured) if measured else float("nan"),
                max(errors) if errors else float("nan"),
            )
        )
    return rows


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table, as docs/scale.md shows it."""
    lines = [
        "| namespace | unreachable s | pods on failed nodes | evicted | forecast s "
        "| measured median s | measured max s | max abs error s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.namespace} | {r.tolerated} | {r.expected} | {r.evicted} | {r.forecast} "
        f"| {r.median:.2f} | {r.worst:.2f} | {r.error:.2f} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run it and print the table; exit 1 when a pod was not evicted within 2 s of its
    forecast."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=200, help="pods per namespace")
    parser.add_argument("--share", type=float, default=0.1, help="share of nodes that fail")
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.UTC)
    rows, figures = measure(args.nodes, args.replicas, args.share)
    print(
        f"failover at {args.nodes} nodes ({started:%Y-%m-%d %H:%M} UTC), grace {GRACE} s, "
        f"eviction rate {EVICTION_RATE:g}/s, times from each node's last Lease renewal:"
    )
    print(table(rows))
    print(", ".join(f"{k}: {v}" for k, v in figures.items()))
    good = all(r.evicted == r.expected and r.error <= WITHIN for r in rows)
    return 0 if good else 1


if __name__ == "__main__":
    raise SystemExit(main())
