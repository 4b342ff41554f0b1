"""Rendering an :class:`~webhooks.explain.explanation.Explanation` as text for people or JSON.

Text groups nodes that get the same answer onto one line, so a hundred identical workers
read as one entry; JSON lists every node for every pod, for scripts. Both say the same
things: the explanation is rendered, never recomputed here. Both are written a pod at a
time (:func:`write_text`, :func:`write_json`), each pod's answer dropped once written, so
a report of pods × nodes costs the memory of one pod's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from webhooks.explain.allocation import Chosen, DeviceEvictionNote
from webhooks.explain.coverage import Coverage
from webhooks.explain.explanation import Explanation, PodAnswer
from webhooks.explain.failure import Failover, Simulation, Zone
from webhooks.explain.fit import Fit, NoExecuteVerdict, ScaleUp
from webhooks.explain.nodes import Node
from webhooks.explain.pods import show_quantity
from webhooks.explain.queues import Assignment, ClusterQueue, Queues
from webhooks.explain.templates import Template
from webhooks.k8s.tolerations import describe

UNLABELLED = "(unlabelled)"


def duration(seconds: float) -> str:
    """``10s``, ``310s (5m10s)``, ``6000s (1h40m)``; why both: flags and tolerations count seconds.

    Fractions of a second (rates such as 0.03 nodes/s) are kept to one decimal.
    """
    whole = round(seconds, 1)
    text = f"{whole:g}s"
    if whole < 120:
        return text
    minutes, secs = divmod(int(whole), 60)
    hours, minutes = divmod(minutes, 60)
    parts = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return f"{text} ({parts}{f'{secs}s' if secs else ''})"


def _zone_name(name: str) -> str:
    return name or UNLABELLED


def no_execute_text(verdict: NoExecuteVerdict) -> str:
    """What a NoExecute verdict means for a running pod, as one sentence.

    Why for running pods: NoExecute acts on pods already there, unlike NoSchedule.
    """
    if verdict.outcome == "at-once":
        return f"NoExecute: a running pod is evicted at once ({verdict.reason})"
    if verdict.outcome == "after":
        return (
            f"NoExecute: a running pod is evicted {duration(verdict.seconds or 0)} after the "
            f"taint is added ({verdict.reason})"
        )
    if verdict.outcome == "never":
        return f"NoExecute: a running pod keeps running ({verdict.reason})"
    return ""


def _fit_lines(fit: Fit) -> tuple[str, ...]:
    """What one fit says, one line each: the same for a node and a template.

    Why startup taints and DaemonSet requests only when it fits: they explain what the
    new node will be like, which matters only if it is made.
    """
    lines = [f"- {u.message}" for u in fit.unmet]
    lines.extend(
        f"- tolerates {t.taint} with {t.toleration}"
        + (", added by Kueue" if t.kueue else ", added by admission" if t.added else "")
        for t in fit.tolerated
    )
    if fit.admitted_nodes:
        lines.append(
            "- Kueue admits it here; with the flavor's nodeSelector and tolerations it fits "
            + ", ".join(fit.admitted_nodes)
        )
    lines.extend(f"- ignores {t}: spec.nodeName bypasses the scheduler" for t in fit.ignored)
    lines.extend(
        f"- a poor choice: PreferNoSchedule taint {t} is not tolerated"
        for t in fit.prefer_no_schedule
    )
    if fit.fits:
        lines.extend(
            f"- startup taint {t} is not tolerated and is ignored: it is expected to be removed"
            for t in fit.startup_ignored
        )
        lines.extend(f"- {_allocated(c)}" for c in fit.devices)
        shown = ", ".join(
            f"{k} {show_quantity(k, v)}" for k, v in sorted(fit.overhead.items()) if v > 0
        )
        if shown:
            lines.append(f"- DaemonSets there request {shown}")
    if fit.unmet and any(u.rule == "nodeName" for u in fit.unmet):
        return tuple(lines)
    verdict = no_execute_text(fit.no_execute)
    if verdict:
        lines.append(f"- {verdict}")
    lines.extend(f"- NoExecute: {e}" for e in fit.device_evictions)
    return tuple(lines)


def _allocated(chosen: Chosen) -> str:
    request = f", request {chosen.request}" if chosen.request else ""
    return f"device {chosen.device} for {chosen.claim}{request}"


def _device_text(node: Node) -> Iterator[str]:
    if not node.devices:
        return
    names = ", ".join(
        d.name + (f" (in use by {d.in_use})" if d.in_use else "") for d in node.devices
    )
    yield f"    devices: {names}"
    for device in node.devices:
        for taint in device.taints:
            source = "" if taint.source == "ResourceSlice" else f" (from {taint.source})"
            yield f"    device {device.name} taint {taint}{source}"
    for problem in node.device_problems:
        yield f"    {problem}"


def _node_text(node: Node) -> Iterator[str]:
    role = " [control-plane]" if node.control_plane else ""
    ready = "Ready" if node.ready == "True" else f"not Ready (Ready {node.ready})"
    failed = ", failed by --fail" if node.failed else ""
    excluded = ", excluded from zone health" if node.excluded else ""
    yield f"  {node.name}{role}: zone {_zone_name(node.zone)}, {ready}{failed}{excluded}"
    for taint in node.taints:
        source = f" (added: {taint.source})" if taint.source else ""
        effect = ""
        if taint.effect == "NoExecute":
            effect = ": evicts running pods that do not tolerate it"
        elif taint.effect == "PreferNoSchedule":
            effect = ": soft, the scheduler avoids the node when it can"
        yield f"    taint {taint}{source}{effect}"
    if node.allocatable is None:
        yield "    allocatable unknown: resource requests are not checked"
    yield from _device_text(node)


def _failover_line(item: Failover) -> str:
    name = item.taint.split("/")[-1].split(":")[0]
    grace = duration(item.grace)
    if item.outcome == "never":
        return f"{name}: never evicted (toleration {item.toleration}: no tolerationSeconds)"
    assert item.seconds is not None
    if item.toleration_seconds is None:
        how = f"{grace}; no toleration matches {item.taint}"
    else:
        how = f"{grace} + toleration {item.toleration}"
    return f"{name}: evicted {duration(item.seconds)} after its node fails ({how})"


def _failover_text(answer: PodAnswer) -> Iterator[str]:
    if not answer.failover or answer.pod.denied:
        return
    yield "  failover (--node-monitor-grace-period + tolerationSeconds):"
    for item in answer.failover:
        yield f"    {_failover_line(item)}"
    for fit in answer.placement.fits:
        for eviction in fit.device_evictions:
            yield f"    device taint on {fit.name}: {eviction}"


def _kueue_text(assignment: Assignment) -> str:
    if assignment.flavors is None:
        return f"  Kueue: {assignment.reason}"
    return f"  Kueue: {assignment.queue} -> {assignment.cluster_queue}, flavors " + (
        ", ".join(assignment.order) or "none"
    )


def _scale_up_text(up: ScaleUp) -> Iterator[str]:
    if up.kueue is not None:
        yield _kueue_text(up.kueue)
    hosts = up.hosts
    if hosts:
        first = hosts[0].target
        names = ", ".join(f.name for f in hosts)
        yield f"  node templates: a node can be added for it by {names}"
        if len(hosts) > 1 and isinstance(first, Template) and first.kind == "NodePool":
            yield f"    (Karpenter tries the highest weight first: {first.title})"
    else:
        yield f"  node templates: none can add a node for it (0 of {len(up.fits)})"
    for found in up.fits:
        verdict = "can host it" if found.fits else "cannot host it"
        yield f"    {found.name}: {verdict}"
        for line in _fit_lines(found):
            yield f"      {line}"


def _placement_text(answer: PodAnswer, total: int) -> Iterator[str]:
    placement = answer.placement
    pod = placement.pod
    yield f"{pod.subject} ({pod.where})"
    for line in pod.admission:
        yield f"  admission: {line}"
    for line in pod.denied:
        yield f"  DENIED by admission: {line}"
    if answer.suspended:
        yield f"  SUSPENDED: {answer.suspended}"
    fitting = placement.nodes
    if fitting:
        each = " (one pod on each)" if pod.daemon else ""
        yield f"  fits {len(fitting)} of {total} nodes{each}: {', '.join(fitting)}"
    else:
        yield f"  fits no node (0 of {total})"
        closest = placement.closest
        if closest is not None:
            yield f"  closest: {closest.name}, missing {len(closest.unmet)}:"
            for unmet in closest.unmet:
                yield f"    - {unmet.message}"
    if answer.scale_up is not None:
        yield from _scale_up_text(answer.scale_up)
    yield from _failover_text(answer)
    groups: dict[tuple[bool, tuple[str, ...]], list[str]] = {}
    for fit in placement.fits:
        groups.setdefault((fit.fits, _fit_lines(fit)), []).append(fit.name)
    for (fits, lines), names in groups.items():
        if fits and not lines:
            continue
        verdict = "fits" if fits else "does not fit"
        yield f"  {', '.join(names)}: {verdict}"
        for line in lines:
            yield f"    {line}"


def _zone_text(zone: Zone) -> str:
    state = zone.state or "not counted"
    rate = "eviction rate 0: evictions stop" if zone.stopped else f"{zone.rate:g} nodes/s"
    return f"  zone {_zone_name(zone.name)}: {state} ({zone.reason}) -> {rate}"


def _simulation_text(sim: Simulation) -> Iterator[str]:
    grace = duration(sim.rates.node_monitor_grace_period)
    yield (
        f"Node failure (t+0s: the nodes fail; t+{grace}: the node lifecycle controller marks "
        "them after --node-monitor-grace-period; times are approximate, see --help)"
    )
    for zone in sim.zones:
        yield _zone_text(zone)
    for warning in sim.warnings:
        yield f"  WARNING: {warning}"
    events: list[tuple[float, int, str]] = []
    for taint in sim.taints:
        if taint.at is not None:
            how = "already has" if taint.already else "gets"
            events.append((taint.at, 0, f"{taint.node} {how} {taint.taint}"))
    for eviction in sim.evictions:
        if eviction.at is not None:
            events.append(
                (eviction.at, 1, f"{eviction.node}: {eviction.pod} evicted ({eviction.reason})")
            )
    if events:
        down = [t.node for t in sim.taints if not t.already]
        if down:
            events.append((0.0, -1, f"{', '.join(down)} fail{'s' if len(down) == 1 else ''}"))
        yield "  timeline:"
        events.sort(key=lambda e: (e[0], e[1]))
        width = max(len(duration(at)) for at, _, _ in events)
        for at, _, line in events:
            yield f"    t+{duration(at):<{width}}  {line}"
    never = [t for t in sim.taints if t.at is None]
    if never:
        yield "  never tainted:"
        for taint in never:
            why = "the controller removes its taint" if taint.removed else "evictions stop"
            yield f"    {taint.node} ({why})"
    staying: dict[tuple[str, str], list[str]] = {}
    for eviction in sim.evictions:
        if eviction.at is None:
            staying.setdefault((eviction.pod, eviction.reason), []).append(eviction.node)
    if staying:
        yield "  never evicted, keep running:"
        for (pod, reason), nodes in staying.items():
            yield f"    {pod} on {', '.join(nodes)} ({reason})"


def _quantities(values: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items())


def _template_text(template: Template) -> Iterator[str]:
    extra = f", weight {template.weight}" if template.weight else ""
    yield f"  {template.title} ({template.where}){extra}"
    for taint in template.taints:
        yield f"    taint {taint}"
    for taint in template.startup_taints:
        yield f"    startup taint {taint}: pods need not tolerate it"
    for key, value in template.labels.items():
        yield f"    label {key}={value}"
    for req in template.requirements:
        yield f"    {req}"
    for toleration in template.tolerations:
        yield f"    toleration {describe(toleration)}: Kueue adds it to the pods it admits"
    if template.kind == "ResourceFlavor":
        yield "    quota is the ClusterQueue's: resources are not checked here"
    elif template.kind == "NodeGroup":
        if template.allocatable is None:
            yield "    allocatable unknown: resource requests are not checked"
        else:
            yield f"    allocatable {_quantities(_resource_map(template.allocatable))}"
    elif template.limits:
        left = template.remaining
        parts = [
            f"{k} {show_quantity(k, v)} ({show_quantity(k, left[k])} left)"
            for k, v in template.limits.items()
        ]
        yield f"    limits {', '.join(parts)}"
    if template.replicas is not None:
        yield f"    static: spec.replicas {template.replicas}, adds no node for pending pods"
    if template.not_ready:
        yield f"    not Ready ({template.not_ready}): Karpenter ignores it"


def _namespaces(queue: ClusterQueue) -> str:
    if queue.namespaces is None:
        return "no namespaceSelector: serves no namespace"
    if not queue.namespaces.labels and not queue.namespaces.expressions:
        return "every namespace"
    return "namespaces its namespaceSelector selects"


def _queues_text(queues: Queues) -> Iterator[str]:
    if not queues.given:
        return
    yield f"Kueue queues: {len(queues.cluster)} ClusterQueue(s), {len(queues.local)} LocalQueue(s)"
    for cluster in queues.cluster.values():
        stopped = f", stopped ({cluster.stopped})" if cluster.stopped else ""
        flavors = ", ".join(cluster.flavors) or "none"
        yield (
            f"  {cluster.title} ({cluster.where}): flavors {flavors}; "
            f"{_namespaces(cluster)}{stopped}"
        )
    for local in queues.local.values():
        stopped = f", stopped ({local.stopped})" if local.stopped else ""
        yield f"  {local.title} ({local.where}) -> ClusterQueue {local.cluster_queue}{stopped}"


_COVERAGE_TITLE = "DaemonSet coverage (tainted nodes and node templates)"


def _coverage_text(item: Coverage) -> Iterator[str]:
    taints = f" ({', '.join(item.taints)})" if item.taints else ""
    yield f"  {item.target}{taints}"
    for run in item.daemon_sets:
        if run.runs:
            waits = f" (after {', '.join(run.waits_for)} is removed)" if run.waits_for else ""
            yield f"    runs {run.daemon_set}{waits}"
        elif run.selected:
            yield f"    does not run {run.daemon_set}: {'; '.join(run.reasons)}"
        else:
            yield (
                f"    does not run {run.daemon_set}, by its own choice of nodes: "
                f"{'; '.join(run.reasons)}"
            )


def write_text(explanation: Explanation, write: Callable[[str], object]) -> int:
    """Write the human report with ``write``, a pod at a time; returns the exit code.

    The report: nodes and templates, each pod's answer, DaemonSet coverage, then the failure
    simulation; why that order: each part reads with what comes before it in mind. Why
    written as it goes: each pod's answer holds a fit per node, and is dropped once
    written, so the report costs memory for one answer, not for pods × nodes of them.
    """
    nodes = explanation.nodes
    zones = {n.zone for n in nodes}
    head = [f"Nodes: {len(nodes)} in {len(zones)} zone{'s' if len(zones) != 1 else ''}"]
    for node in nodes:
        head.extend(_node_text(node))
    if explanation.templates:
        count = len(explanation.templates)
        head.append(f"Node templates: {count} (nodes that do not exist yet)")
        for template in explanation.templates:
            head.extend(_template_text(template))
    head.extend(_queues_text(explanation.queues))
    head.extend(f"  WARNING: {warning}" for warning in explanation.queue_warnings)
    write("\n".join(head) + "\n")
    placeable = True
    for answer in explanation.answers():
        placeable = placeable and answer.placeable
        write("\n" + "\n".join(_placement_text(answer, len(nodes))) + "\n")
    entries = explanation.coverage_entries()
    entry = next(entries, None)
    if entry is not None:
        write(f"\n{_COVERAGE_TITLE}\n")
        while entry is not None:  # one entry alive at a time
            write("\n".join(_coverage_text(entry)) + "\n")
            entry = next(entries, None)
        write("".join(f"  WARNING: {warning}\n" for warning in explanation.warnings))
    if explanation.simulation is not None:
        write("\n" + "\n".join(_simulation_text(explanation.simulation)) + "\n")
    return 0 if placeable else 1


def text(explanation: Explanation) -> str:
    """The human report (:func:`write_text`) as one string.

    Why both: tests and scripts with a few pods want a value; the command writes as it goes.
    """
    out: list[str] = []
    write_text(explanation, out.append)
    return "".join(out)


# --- JSON ---------------------------------------------------------------------------------


def _verdict(verdict: NoExecuteVerdict) -> dict[str, Any]:
    return {"outcome": verdict.outcome, "seconds": verdict.seconds, "reason": verdict.reason}


def _resource_map(values: Any) -> dict[str, str]:
    return {k: show_quantity(k, v) for k, v in sorted(values.items())}


def _node(node: Node) -> dict[str, Any]:
    allocatable = None
    if node.allocatable is not None:
        allocatable = _resource_map(node.allocatable)
    return {
        "name": node.name,
        "source": node.where,
        "zone": node.zone,
        "ready": node.ready,
        "failed": node.failed,
        "controlPlane": node.control_plane,
        "excludedFromDisruption": node.excluded,
        "taints": [
            {"key": t.key, "value": t.value, "effect": t.effect, "addedBy": t.source}
            for t in node.taints
        ],
        "allocatable": allocatable,
    }


def _fit(fit: Fit) -> dict[str, Any]:
    """One fit as JSON: the same body for a node and a template, named as each is.

    Why the keys differ by target: scripts have read ``node`` for nodes and ``template``,
    ``kind`` and ``name`` for templates since both existed, and only a node has a running
    pod for ``noExecute`` and a ``spec.nodeName`` bypass to report.
    """
    body = {
        "fits": fit.fits,
        "unmet": [{"rule": u.rule, "message": u.message} for u in fit.unmet],
        "tolerated": [
            {
                "taint": t.taint,
                "toleration": t.toleration,
                "addedByAdmission": t.added,
                "addedByKueue": t.kueue,
            }
            for t in fit.tolerated
        ],
        "preferNoSchedule": list(fit.prefer_no_schedule),
    }
    target = fit.target
    if isinstance(target, Template):
        return {
            "template": target.title,
            "kind": target.kind,
            "name": target.name,
            **body,
            "startupTaintsIgnored": list(fit.startup_ignored),
            "daemonSetRequests": _resource_map(fit.overhead),
            "admittedFitsNodes": None if fit.admitted_nodes is None else list(fit.admitted_nodes),
        }
    return {
        "node": target.name,
        **body,
        "ignoredBecauseOfNodeName": list(fit.ignored),
        "noExecute": _verdict(fit.no_execute),
        "devices": [
            {
                "claim": c.claim,
                "request": c.request,
                "driver": c.device.driver,
                "pool": c.device.pool,
                "device": c.device.name,
            }
            for c in fit.devices
        ],
        "deviceEvictions": [_device_eviction(e) for e in fit.device_evictions],
    }


def _device_eviction(item: DeviceEvictionNote) -> dict[str, Any]:
    return {
        "device": item.device,
        "taint": str(item.taint),
        "source": item.taint.source,
        "outcome": item.outcome,
        "seconds": item.seconds,
        "reason": item.why,
    }


def _failover(item: Failover) -> dict[str, Any]:
    return {
        "taint": item.taint,
        "outcome": item.outcome,
        "seconds": item.seconds,
        "nodeMonitorGracePeriod": item.grace,
        "tolerationSeconds": item.toleration_seconds,
        "toleration": item.toleration,
    }


def _taint(taint: Any) -> dict[str, str]:
    return {"key": taint.key, "value": taint.value, "effect": taint.effect}


def _template(template: Template) -> dict[str, Any]:
    return {
        "kind": template.kind,
        "name": template.name,
        "title": template.title,
        "source": template.where,
        "labels": dict(template.labels),
        "taints": [_taint(t) for t in template.taints],
        "startupTaints": [_taint(t) for t in template.startup_taints],
        "requirements": [
            {
                "key": r.key,
                "operator": r.operator,
                "values": list(r.values),
                "minValues": r.min_values,
            }
            for r in template.requirements
        ],
        "allocatable": None
        if template.allocatable is None
        else _resource_map(template.allocatable),
        "limits": _resource_map(template.limits),
        "remaining": _resource_map(template.remaining),
        "replicas": template.replicas,
        "weight": template.weight,
        "notReady": template.not_ready or None,
        "tolerations": [dict(t) for t in template.tolerations],
    }


def _queues(queues: Queues) -> dict[str, Any]:
    return {
        "clusterQueues": [
            {
                "name": q.name,
                "source": q.where,
                "flavors": list(q.flavors),
                "namespaces": _namespaces(q),
                "stopPolicy": q.stopped or None,
            }
            for q in queues.cluster.values()
        ],
        "localQueues": [
            {
                "namespace": q.namespace,
                "name": q.name,
                "source": q.where,
                "clusterQueue": q.cluster_queue,
                "stopPolicy": q.stopped or None,
            }
            for q in queues.local.values()
        ],
    }


def _scale_up(up: ScaleUp | None) -> dict[str, Any] | None:
    if up is None:
        return None
    return {
        "hosts": [f.name for f in up.hosts],
        "kueue": None if up.kueue is None else _assignment(up.kueue),
        "templates": [_fit(f) for f in up.fits],
    }


def _assignment(assignment: Assignment) -> dict[str, Any]:
    return {
        "localQueue": assignment.queue or None,
        "clusterQueue": assignment.cluster_queue or None,
        "flavors": None if assignment.flavors is None else list(assignment.order),
        "reason": assignment.reason or None,
    }


def _placement(answer: PodAnswer) -> dict[str, Any]:
    placement = answer.placement
    pod = placement.pod
    closest = placement.closest
    return {
        "pod": pod.subject,
        "source": pod.where,
        "daemonSet": pod.daemon,
        "admission": list(pod.admission),
        "denied": list(pod.denied),
        "fits": placement.nodes,
        "closest": None if closest is None else _fit(closest),
        "nodes": [_fit(f) for f in placement.fits],
        "failover": [_failover(f) for f in answer.failover],
        "scaleUp": _scale_up(answer.scale_up),
        "kueueSuspended": answer.suspended or None,
        "placeable": answer.placeable,
    }


def _coverage(item: Coverage) -> dict[str, Any]:
    return {
        "target": item.target,
        "kind": item.kind,
        "taints": list(item.taints),
        "daemonSets": [
            {
                "daemonSet": d.daemon_set,
                "runs": d.runs,
                "reasons": list(d.reasons),
                "waitsFor": list(d.waits_for),
                "selectedByItsSelectors": d.selected,
            }
            for d in item.daemon_sets
        ],
    }


def _simulation(sim: Simulation) -> dict[str, Any]:
    rates = sim.rates
    return {
        "settings": {
            "nodeEvictionRate": rates.node_eviction_rate,
            "secondaryNodeEvictionRate": rates.secondary_node_eviction_rate,
            "unhealthyZoneThreshold": rates.unhealthy_zone_threshold,
            "largeClusterSizeThreshold": rates.large_cluster_size_threshold,
            "nodeMonitorGracePeriod": rates.node_monitor_grace_period,
        },
        "allZonesFullyDisrupted": sim.all_fully_disrupted,
        "zones": [
            {
                "zone": z.name,
                "nodes": list(z.nodes),
                "counted": z.counted,
                "notReady": z.not_ready,
                "state": z.state,
                "rate": z.rate,
                "evictionsStop": z.stopped,
                "reason": z.reason,
            }
            for z in sim.zones
        ],
        "warnings": list(sim.warnings),
        "taints": [
            {
                "node": t.node,
                "zone": t.zone,
                "taint": str(t.taint),
                "at": t.at,
                "alreadyTainted": t.already,
                "removed": t.removed,
            }
            for t in sim.taints
        ],
        "evictions": [
            {
                "pod": e.pod,
                "node": e.node,
                "at": e.at,
                "daemonSet": e.daemon,
                "noExecute": _verdict(e.verdict),
                "reason": e.reason,
            }
            for e in sim.evictions
        ],
    }


#: Stand-ins in the JSON skeleton for the lists written an item at a time, and for the exit
#: code, known only once every pod has been answered.
_PODS = "\x00pods\x00"
_COVERAGE = "\x00daemonSetCoverage\x00"
_EXIT = "\x00exitCode\x00"
#: How deep an item of a top-level list sits in the document (``{"pods": [ {...} ]}``).
_ITEM_INDENT = "\n    "


def _stand_in(name: str) -> str:
    return orjson.dumps(name).decode()


def _write_items(write: Callable[[str], object], items: Iterator[dict[str, Any]]) -> None:
    """A top-level list written an item at a time, indented as one dump of it would be."""
    first = True
    for item in items:
        body = orjson.dumps(item, option=orjson.OPT_INDENT_2).decode()
        write(("[" if first else ",") + _ITEM_INDENT + body.replace("\n", _ITEM_INDENT))
        first = False
    write("[]" if first else "\n  ]")


def write_json(explanation: Explanation, write: Callable[[str], object]) -> int:
    """Write every node for every pod, and the whole simulation, as one JSON document, a pod
    at a time; returns the exit code (also the document's last key).

    Why no grouping here: scripts look nodes up by name and must not parse sentences. Why
    a pod at a time: each pod's object lists every node (and each tainted node's coverage
    every DaemonSet), so the whole document would hold pods × nodes of them; the skeleton
    is dumped once, and each item is dumped and written in its place, indented as if the
    whole had been dumped at once.
    """
    data = {
        "nodeMonitorGracePeriod": explanation.rates.node_monitor_grace_period,
        "nodes": [_node(n) for n in explanation.nodes],
        "templates": [_template(t) for t in explanation.templates],
        "kueueQueues": _queues(explanation.queues),
        "pods": _PODS,
        "daemonSetCoverage": _COVERAGE,
        "warnings": [*explanation.queue_warnings, *explanation.warnings],
        "failure": None if explanation.simulation is None else _simulation(explanation.simulation),
        "exitCode": _EXIT,
    }
    skeleton = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    head, rest = skeleton.split(_stand_in(_PODS))
    middle, tail = rest.split(_stand_in(_COVERAGE))
    placeable: list[bool] = []

    def pods() -> Iterator[dict[str, Any]]:
        for answer in explanation.answers():
            placeable.append(answer.placeable)
            yield _placement(answer)

    write(head)
    _write_items(write, pods())
    write(middle)
    _write_items(write, (_coverage(c) for c in explanation.coverage_entries()))
    code = 0 if all(placeable) else 1
    write(tail.replace(_stand_in(_EXIT), str(code)) + "\n")
    return code


def json(explanation: Explanation) -> str:
    """The JSON document (:func:`write_json`) as one string; why: as :func:`text`."""
    out: list[str] = []
    write_json(explanation, out.append)
    return "".join(out)
