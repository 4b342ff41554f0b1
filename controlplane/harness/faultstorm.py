"""A pod-create storm through two ``serve`` replicas, with one fault injected in the middle.

Each run is its own control plane (etcd, kube-apiserver in mode ``webhooks``, the
controller-manager; no scheduler: pods stay Pending, admission is what is measured) and its
own :class:`~controlplane.harness.replicas.WebhookService` of two replicas behind one
Service (its ClusterIP on loopback), registered exactly as ``webhook-config`` prints it with
``--mutating-failure-policy`` (``Fail`` unless told otherwise; the validating webhook is
``Fail`` by default) and its default 5 s timeout.

The storm: a Deployment in tenant namespace ``tenant-a`` (group ``a``) whose pods request a
GPU is scaled from 0 to ``pods`` replicas, the ReplicaSet controller creating them with its
client limits raised (:data:`CONTROLLER_QPS`, :data:`CONTROLLER_BURST`) so that it, not the
API server or the webhooks, is never what caps the rate; beside it, client threads
(:mod:`.creators`) create pods alternately in ``tenant-a`` (no GPU) and in ``plain`` (a GPU,
no group), timing every outcome. ``lead`` seconds in, the fault; the client threads go on
until ``tail`` seconds after it ended and for ``tail / 2`` seconds
without a failure (at most ``hold`` seconds); then the Deployment is waited for. Last, a
Namespace-dependent probe: ``tenant-b`` (made unlabelled before the storm) is labelled as
group ``b`` and a few pods are created there, which get their policy only if serve's
Namespace cache followed the change, i.e. its watch is alive after the fault. Every stored
pod is then read back (:mod:`.policycheck`).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import signal
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controlplane.harness import components, policycheck, webhookserver
from controlplane.harness.components import ApiServer, ControllerManagerOptions
from controlplane.harness.controlplane import ControlPlane, ControlPlaneOptions, running
from controlplane.harness.creators import Creators, Outcome, Recovery, recovery, top_errors
from controlplane.harness.endpoints import PLEG_PERIOD
from controlplane.harness.metrics import apiserver_metrics
from controlplane.harness.modes import apiserver_options
from controlplane.harness.objects import create_namespace
from controlplane.harness.process import Component, wait_until
from controlplane.harness.replicas import WebhookService
from controlplane.harness.servicenet import loopback_service_range, service_flag

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "bench" / "configs" / "fleet.yaml"
#: The controller-manager's client limits (upstream: 20 and 30), far above any rate reached.
CONTROLLER_QPS = 2000
CONTROLLER_BURST = 4000
TENANT, PLAIN, LATE = "tenant-a", "plain", "tenant-b"
GROUPS = {TENANT: "a", PLAIN: "", LATE: "b"}
LATE_PODS = 20

FAULTS: dict[str, str] = {
    "replica-killed": "one of two replicas SIGKILLed (the kubelet restarts it)",
    "replicas-stopped": "both replicas stopped (SIGTERM) for 30 s, then started",
    "apiserver-restarted": "kube-apiserver stopped (SIGTERM) and started again",
    "etcd-compacted": "etcd compacted at its head revision; the Namespace watch re-watches",
    "certificate-rotated": "a new serving key and certificate (same CA) written under serve",
    "replica-stalled": "one replica SIGSTOPped for 15 s (> the 5 s webhook timeout), SIGCONT",
}


@dataclass(frozen=True, slots=True)
class StormOptions:
    """The storm's size and timing, and how the webhooks are registered."""

    pods: int = 2000
    threads: int = 4
    lead: float = 4.0
    tail: float = 10.0
    stopped_for: float = 30.0
    stalled_for: float = 15.0
    mutating_failure_policy: str = "Fail"
    config: Path = CONFIG
    settle: float = 240.0
    #: The longest the client threads go on after a fault, waiting for steady creates.
    hold: float = 150.0


@dataclass(slots=True)
class FaultResult:
    """One run's row and the evidence behind it."""

    fault: str
    attempted: int = 0
    failed: int = 0
    top_error: str = ""
    stored: int = 0
    unpoliced: int = 0
    unpoliced_examples: list[tuple[str, list[str]]] = field(default_factory=list)
    recovery: Recovery | None = None
    deployment_seconds: float | None = None
    client_attempted: int = 0
    client_failed: int = 0
    #: The API server's webhook calls: (type, code, rejected) -> count.
    webhook_calls: dict[tuple[str, str, str], float] = field(default_factory=dict)
    #: The API server's refusals: (type, error_type, rejection_code) -> count.
    rejections: dict[tuple[str, str, str], float] = field(default_factory=dict)
    fail_open: float = 0.0
    create_codes: dict[str, float] = field(default_factory=dict)
    #: The longest a client thread's create took from the fault's start on (seconds).
    slowest: float = 0.0
    #: The most common failure messages (client threads' and the controller's), with counts.
    errors: list[tuple[str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- metrics


_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text: str, name: str) -> Iterator[tuple[dict[str, str], float]]:
    """Every sample of ``name``: its labels and value."""
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        head, _, value = line.rpartition(" ")
        yield dict(_LABEL.findall(head)), float(value)


def _counters(text: str, webhooks: set[str]) -> Counter[tuple[str, ...]]:
    """The counters a row reports, keyed by metric and the labels that matter."""
    found: Counter[tuple[str, ...]] = Counter()
    for labels, value in samples(text, "apiserver_admission_webhook_request_total"):
        if labels.get("name") in webhooks:
            key = ("calls", labels["type"], labels["code"], labels["rejected"])
            found[key] += value
    for labels, value in samples(text, "apiserver_admission_webhook_rejection_count"):
        if labels.get("name") in webhooks:
            key = ("rejections", labels["type"], labels["error_type"], labels["rejection_code"])
            found[key] += value
    for labels, value in samples(text, "apiserver_admission_webhook_fail_open_count"):
        if labels.get("name") in webhooks:
            found[("fail_open",)] += value
    for labels, value in samples(text, "apiserver_request_total"):
        if (
            labels.get("resource") == "pods"
            and labels.get("verb") == "POST"
            and not labels.get("subresource")
            and not labels.get("dry_run")
        ):
            found[("creates", labels["code"])] += value
    return found


class ApiCounters:
    """Counter increases across the run, summed over API server restarts (which reset them)."""

    def __init__(self, server: ApiServer, webhooks: set[str]) -> None:
        self.server, self.webhooks = server, webhooks
        self.total: Counter[tuple[str, ...]] = Counter()
        self.base = self._read()

    def _read(self) -> Counter[tuple[str, ...]]:
        return _counters(apiserver_metrics(self.server), self.webhooks)

    def before_restart(self) -> None:
        """Bank what the process counted; the next one starts from zero."""
        self.total.update(self._read() - self.base)
        self.base = Counter()

    def finish(self) -> Counter[tuple[str, ...]]:
        self.total.update(self._read() - self.base)
        return self.total


def serve_counter(text: str, name: str, **labels: str) -> float:
    """The sum of ``name`` over serve's workers for ``labels``."""
    return sum(
        v for got, v in samples(text, name) if all(got.get(k) == w for k, w in labels.items())
    )


def namespace_watch(service: WebhookService) -> dict[str, float]:
    """serve's Namespace cache, summed over replicas: lists, 410s, watching now."""
    totals: Counter[str] = Counter()
    for replica in service.replicas:
        text = replica.metrics()
        totals["lists ok"] += serve_counter(
            text, "placement_webhooks_cluster_lists_total", resource="namespaces", result="ok"
        )
        totals["watches expired"] += serve_counter(
            text, "placement_webhooks_cluster_watches_total", resource="namespaces", end="expired"
        )
        totals["watches error"] += serve_counter(
            text, "placement_webhooks_cluster_watches_total", resource="namespaces", end="error"
        )
        totals["watching"] += serve_counter(
            text, "placement_webhooks_cluster_cache_watching", resource="namespaces"
        )
    return dict(totals)


# --------------------------------------------------------------------------- workload


def _container(gpu: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    if gpu:
        container["resources"] = {"limits": {policycheck.GPU: "1"}}
    return container


def pod(name: str, *, gpu: bool) -> dict[str, Any]:
    """A pod of the storm: one pause container, a GPU limit when ``gpu``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "direct"}},
        "spec": {"containers": [_container(gpu)], "terminationGracePeriodSeconds": 0},
    }


def deployment(name: str) -> dict[str, Any]:
    """The storm's Deployment at 0 replicas; its pods request a GPU."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [_container(True)], "terminationGracePeriodSeconds": 0},
            },
        },
    }


def direct(thread: int, index: int) -> tuple[str, dict[str, Any]]:
    """The client threads' pods: alternately a tenant pod and a GPU pod in ``plain``."""
    if index % 2:
        return PLAIN, pod(f"direct-{thread}-{index}", gpu=True)
    return TENANT, pod(f"direct-{thread}-{index}", gpu=False)


def _label_group(server: ApiServer, namespace: str, group: str) -> None:
    patch = {"metadata": {"labels": {policycheck.GROUP_LABEL: group}}}
    status, _ = server.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        patch,
        content_type="application/merge-patch+json",
    )
    if status != 200:
        raise RuntimeError(f"labelling namespace {namespace}: HTTP {status}")


def _policy_in_force(server: ApiServer) -> bool:
    """A dry-run tenant pod comes back with its group's affinity: caches hold the label."""
    status, body = server.request(
        "POST", f"/api/v1/namespaces/{TENANT}/pods?dryRun=All", pod("probe", gpu=True)
    )
    return status == 201 and not policycheck.missing(body, "a")


def _created(server: ApiServer, name: str) -> int:
    status, body = server.get(f"/apis/apps/v1/namespaces/{TENANT}/deployments/{name}")
    return int((body or {}).get("status", {}).get("replicas", 0)) if status == 200 else 0


def _failed_create_events(server: ApiServer) -> list[str]:
    """The ReplicaSet controller's FailedCreate events, one message per failed create."""
    status, body = server.get(f"/api/v1/namespaces/{TENANT}/events?limit=500")
    messages: list[str] = []
    if status != 200:
        return messages
    for event in body["items"]:
        if event.get("reason") == "FailedCreate":
            messages += [str(event.get("message", ""))] * int(event.get("count") or 1)
    return messages


# --------------------------------------------------------------------------- faults


@dataclass(slots=True)
class Bed:
    """What a fault acts on."""

    plane: ControlPlane
    service: WebhookService
    counters: ApiCounters
    options: StormOptions
    notes: list[str]
    restarted: list[Component] = field(default_factory=list)
    #: Set by a fault that must hold the client threads until it is verified.
    hold_until: Callable[[], bool] | None = None


def _replica_killed(bed: Bed) -> tuple[float, float]:
    replica = bed.service.replicas[0]
    began = time.time()
    replica.kill()
    time.sleep(PLEG_PERIOD)  # the kubelet notices the exit at its next relist, then restarts
    bed.service.restart(replica)
    return began, began


def _replicas_stopped(bed: Bed) -> tuple[float, float]:
    began = time.time()
    for replica in bed.service.replicas:
        replica.stop()
    time.sleep(bed.options.stopped_for)
    ended = time.time()
    for replica in bed.service.replicas:
        replica.start()
    bed.service.publish()
    return began, ended


def _apiserver_restarted(bed: Bed) -> tuple[float, float]:
    server = bed.plane.api
    before = namespace_watch(bed.service)
    bed.counters.before_restart()
    began = time.time()
    server.component.stop()
    old = server.component
    server.component = Component(old.name, old.args, old.log)
    bed.restarted.append(server.component)
    ended = time.time()
    wait_until(
        lambda: components.apiserver_ready(server), timeout=90, components=[server.component]
    )
    bed.notes.append(f"API server ready {time.time() - ended:.1f} s after its restart")

    def rewatched() -> bool:
        now = namespace_watch(bed.service)
        return now["lists ok"] > before["lists ok"] and now["watching"] >= len(bed.service.replicas)

    try:
        wait_until(rewatched, timeout=60, what="re-watching Namespaces", interval=0.2)
        bed.notes.append(
            f"serve's Namespace caches relisted and watching {time.time() - ended:.1f} s"
            " after the restart"
        )
    except Exception as exc:
        bed.notes.append(f"serve's Namespace caches did not re-watch: {exc}")
    return began, ended


def _etcd_revision(etcd_url: str) -> int:
    body = json.dumps({"key": base64.b64encode(b"/").decode()}).encode()
    request = urllib.request.Request(f"{etcd_url}/v3/kv/range", body, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.loads(response.read())["header"]["revision"])


def _etcd_compacted(bed: Bed) -> tuple[float, float]:
    etcd = bed.plane.etcd
    assert etcd is not None
    before = namespace_watch(bed.service)
    began = time.time()
    revision = _etcd_revision(etcd.url)
    body = json.dumps({"revision": revision, "physical": True}).encode()
    request = urllib.request.Request(f"{etcd.url}/v3/kv/compaction", body, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
    ended = time.time()
    bed.notes.append(f"etcd compacted at revision {revision}")

    # Every gunicorn worker keeps its own caches, and each has listed once so far: that
    # count is how many Namespace watches must each end in 410 and be followed by a relist.
    informers = before["lists ok"]

    def relisted() -> bool:
        now = namespace_watch(bed.service)
        return (
            now["watches expired"] >= before["watches expired"] + informers
            and now["lists ok"] >= before["lists ok"] + informers
        )

    bed.hold_until = relisted
    bed.notes.append(
        f"waiting for all {int(informers)} Namespace watches (one per worker) to end, get"
        " 410 and relist (≤ 135 s)"
    )
    return began, ended


def _certificate_rotated(bed: Bed) -> tuple[float, float]:
    service = bed.service
    old = [service.serving_certificate(r) for r in service.replicas]
    began = time.time()
    service.rotate_certificate()
    ended = time.time()

    def rotated() -> bool:
        return all(
            service.serving_certificate(r) != before
            for r, before in zip(service.replicas, old, strict=True)
        )

    wait_until(rotated, timeout=30, what="serving the new certificate", interval=0.2)
    bed.notes.append(f"both replicas served the new certificate {time.time() - ended:.1f} s after")
    return began, ended


def _replica_stalled(bed: Bed) -> tuple[float, float]:
    replica = bed.service.replicas[0]
    began = time.time()
    replica.signal(signal.SIGSTOP)
    time.sleep(bed.options.stalled_for)
    ended = time.time()
    replica.signal(signal.SIGCONT)
    return began, ended


INJECT: dict[str, Callable[[Bed], tuple[float, float]]] = {
    "replica-killed": _replica_killed,
    "replicas-stopped": _replicas_stopped,
    "apiserver-restarted": _apiserver_restarted,
    "etcd-compacted": _etcd_compacted,
    "certificate-rotated": _certificate_rotated,
    "replica-stalled": _replica_stalled,
}


# --------------------------------------------------------------------------- the run


def _register(service: WebhookService, options: StormOptions) -> set[str]:
    policy = f"--mutating-failure-policy={options.mutating_failure_policy}"
    objects = service.register((policy,))
    first = service.replicas[0]
    assert first.component is not None
    stand_in = webhookserver.WebhookServer(
        first.component, service.address.url, service.ca_file, first.metrics_port, Path()
    )
    webhookserver.wait_active(service.server, stand_in, objects)
    return {hook["name"] for obj in objects for hook in obj.get("webhooks") or []}


def run_fault(
    fault: str, options: StormOptions = StormOptions(), say: Callable[[str], None] = print
) -> FaultResult:
    """One run: a new control plane, two replicas, the storm, ``fault`` in its middle."""
    if fault not in INJECT:
        raise ValueError(f"unknown fault {fault!r} (faults: {', '.join(FAULTS)})")
    extra: tuple[str, ...] = (service_flag(loopback_service_range()),)
    if fault == "etcd-compacted":
        # With its watch cache, the API server serves our watch from memory and its
        # bookmarks keep our resourceVersion current: a compaction never reaches us. Without
        # it for Namespaces, a re-watch from our last version goes to etcd and gets 410.
        extra += ("--watch-cache-sizes=namespaces#0",)
    api = dataclasses.replace(
        apiserver_options("webhooks", options.config, extra_args=extra), webhooks=False
    )
    manager = ControllerManagerOptions(
        extra_args=(f"--kube-api-qps={CONTROLLER_QPS}", f"--kube-api-burst={CONTROLLER_BURST}")
    )
    result = FaultResult(fault)
    with running(
        ControlPlaneOptions(apiservers=(api,), scheduler=False, controller_manager=manager)
    ) as plane:
        service = WebhookService(plane.directory / "webhooks", plane.api, options.config)
        bed: Bed | None = None
        try:
            service.start()
            webhooks = _register(service, options)
            with plane.api.client() as api_client:
                create_namespace(api_client, TENANT, labels={policycheck.GROUP_LABEL: "a"})
                create_namespace(api_client, PLAIN)
                create_namespace(api_client, LATE)
            wait_until(lambda: _policy_in_force(plane.api), timeout=30, what="admitting")
            status, _ = plane.api.request(
                "POST", f"/apis/apps/v1/namespaces/{TENANT}/deployments", deployment("storm")
            )
            if status != 201:
                raise RuntimeError(f"creating the Deployment: HTTP {status}")
            bed = Bed(plane, service, ApiCounters(plane.api, webhooks), options, result.notes)
            _storm(bed, fault, result, say)
            result.stored, result.unpoliced, result.unpoliced_examples = policycheck.unpoliced(
                plane.api, GROUPS
            )
        finally:
            service.stop()
            for component in bed.restarted if bed else ():
                component.stop()
    return result


def _storm(bed: Bed, fault: str, result: FaultResult, say: Callable[[str], None]) -> None:
    options, server = bed.options, bed.plane.api
    creators = Creators(server, direct, threads=options.threads).start()
    began = time.time()
    created_at: list[float] = []
    stop_watching = threading.Event()

    def watch_deployment() -> None:
        while not stop_watching.is_set():
            try:
                if _created(server, "storm") >= options.pods:
                    created_at.append(time.time())
                    return
            except Exception:  # the API server may be restarting: look again
                pass
            stop_watching.wait(0.5)

    watcher = threading.Thread(target=watch_deployment, daemon=True)
    watcher.start()
    scale = {"spec": {"replicas": options.pods}}
    server.request(
        "PATCH",
        f"/apis/apps/v1/namespaces/{TENANT}/deployments/storm",
        scale,
        content_type="application/merge-patch+json",
    )
    time.sleep(options.lead)
    say(f"{fault}: injecting at {time.time() - began:.1f} s")
    fault_began, fault_ended = INJECT[fault](bed)
    deadline = fault_ended + options.tail

    def done() -> bool:
        if time.time() < deadline or not creators.clean_for(options.tail / 2, fault_ended):
            return False
        return bed.hold_until is None or bed.hold_until()

    while not done():
        if time.time() > fault_ended + options.hold:
            bed.notes.append(f"gave up waiting for steady creates after {options.hold:g} s")
            break
        time.sleep(0.5)
    if bed.hold_until is not None:
        bed.notes.append(f"held until verified: {time.time() - fault_ended:.1f} s after")
    outcomes = creators.stop()
    say(f"{fault}: client threads stopped at {time.time() - began:.1f} s")
    watcher.join(max(0.0, began + options.settle - time.time()))
    stop_watching.set()
    if created_at:
        result.deployment_seconds = created_at[0] - began
    else:
        bed.notes.append(f"Deployment: {_created(server, 'storm')}/{options.pods} created")
    _late_probe(bed)
    _account(bed, result, outcomes, fault_began, fault_ended)


def _late_probe(bed: Bed) -> None:
    """Label ``tenant-b`` now and create pods there: only a live Namespace watch knows."""
    server = bed.plane.api
    _label_group(server, LATE, GROUPS[LATE])
    time.sleep(1.0)
    for index in range(LATE_PODS):
        status, body = server.request(
            "POST", f"/api/v1/namespaces/{LATE}/pods", pod(f"late-{index}", gpu=True)
        )
        if status != 201:
            bed.notes.append(f"late pod refused: HTTP {status} {(body or {}).get('message')}")


def _account(
    bed: Bed, result: FaultResult, outcomes: list[Outcome], began: float, ended: float
) -> None:
    totals = bed.counters.finish()
    codes = {key[1]: value for key, value in totals.items() if key[0] == "creates"}
    # Creates no API server counted: those that reached none, and those an API server
    # refused while shutting down, after its counters were read for the last time.
    restarted = bool(bed.restarted)
    unreached = [
        o for o in outcomes if o.status == 0 or (restarted and not o.ok and began <= o.at <= ended)
    ]
    result.create_codes = codes
    result.attempted = int(sum(codes.values())) + len(unreached)
    result.failed = int(sum(v for code, v in codes.items() if code != "201")) + len(unreached)
    result.client_attempted = len(outcomes)
    result.client_failed = sum(1 for o in outcomes if not o.ok)
    messages = [o.message for o in outcomes if not o.ok] + _failed_create_events(bed.plane.api)
    result.errors = top_errors(messages, 10)
    top = result.errors[:3]
    result.top_error = f"{top[0][0]} (×{top[0][1]})" if top else ""
    result.notes += [f"error ×{n}: {message}" for message, n in top]
    result.recovery = recovery(outcomes, began, ended)
    result.slowest = max((o.seconds for o in outcomes if o.at >= began), default=0.0)
    result.webhook_calls = {(k[1], k[2], k[3]): v for k, v in totals.items() if k[0] == "calls"}
    result.rejections = {(k[1], k[2], k[3]): v for k, v in totals.items() if k[0] == "rejections"}
    result.fail_open = totals.get(("fail_open",), 0.0)
    events = [e for e in bed.service.address.events() if "ready" in e and e["t"] >= began]
    watch = ", ".join(f"{k} {int(v)}" for k, v in namespace_watch(bed.service).items())
    result.notes.append(f"serve's Namespace caches, both replicas: {watch}")
    if not events:
        result.notes.append("both replicas stayed in rotation: every readiness probe passed")
    for event in events:
        state = "in" if event["ready"] else "out of"
        result.notes.append(
            f"{event['t'] - ended:+.1f} s: {event['endpoint']} {state} rotation ({event['why']})"
        )


def _short(message: str) -> str:
    """The part of an API server error that says what failed: after its last colon-prefix."""
    if "failed to call webhook" in message:
        head = message.split('failed calling webhook "', 1)[1].split('"', 1)[0]
        return f"{head}: {message.rsplit(': ', 1)[-1]}"
    return message[:160]


KIND = {"admit": "mutating", "validating": "validating"}


def summary(result: FaultResult) -> Mapping[str, str]:
    """The row's cells as text."""

    def seconds(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    rec = result.recovery
    calls = ", ".join(
        f"{KIND.get(kind, kind)} {code}{'/rej' if rejected == 'true' else ''}: {int(n)}"
        for (kind, code, rejected), n in sorted(result.webhook_calls.items())
        if n
    )
    refused = ", ".join(
        f"{KIND.get(kind, kind)} {error} {code}: {int(n)}"
        for (kind, error, code), n in sorted(result.rejections.items())
        if n
    )
    return {
        "fault": result.fault,
        "creates attempted": str(result.attempted),
        "creates failed": str(result.failed),
        "top error": _short(result.top_error) or "–",
        "pods admitted without the policy": f"{result.unpoliced} of {result.stored}",
        "recovery first / steady s": f"{seconds(rec.first if rec else None)} / "
        f"{seconds(rec.steady if rec else None)}",
        "Deployment all created s": seconds(result.deployment_seconds),
        "slowest create s": seconds(result.slowest),
        "webhook calls by code": calls or "–",
        "refused by failurePolicy": refused or "none",
        "failed open": str(int(result.fail_open)),
    }
