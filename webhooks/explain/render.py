"""Rendering an :class:`~webhooks.explain.model.Explanation` as text for people or JSON.

Text groups nodes that get the same answer onto one line, so a hundred identical workers
read as one entry; JSON lists every node for every pod, for scripts. Both say the same
things: the model is rendered, never recomputed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from webhooks.explain.model import (
    Explanation,
    Fit,
    Node,
    NoExecuteVerdict,
    Placement,
    Simulation,
    Zone,
    show_quantity,
)

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
    lines = [f"- {u.message}" for u in fit.unmet]
    lines.extend(
        f"- tolerates {t.taint} with {t.toleration}" + (", added by admission" if t.added else "")
        for t in fit.tolerated
    )
    lines.extend(f"- ignores {t}: spec.nodeName bypasses the scheduler" for t in fit.ignored)
    lines.extend(
        f"- a poor choice: PreferNoSchedule taint {t} is not tolerated"
        for t in fit.prefer_no_schedule
    )
    if fit.unmet and any(u.rule == "nodeName" for u in fit.unmet):
        return tuple(lines)
    verdict = no_execute_text(fit.no_execute)
    if verdict:
        lines.append(f"- {verdict}")
    return tuple(lines)


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


def _placement_text(placement: Placement, total: int) -> Iterator[str]:
    pod = placement.pod
    yield f"{pod.subject} ({pod.where})"
    for line in pod.admission:
        yield f"  admission: {line}"
    for line in pod.denied:
        yield f"  DENIED by admission: {line}"
    fitting = placement.nodes
    if fitting:
        each = " (one pod on each)" if pod.daemon else ""
        yield f"  fits {len(fitting)} of {total} nodes{each}: {', '.join(fitting)}"
    else:
        yield f"  fits no node (0 of {total})"
        closest = placement.closest
        if closest is not None:
            yield f"  closest: {closest.node}, missing {len(closest.unmet)}:"
            for unmet in closest.unmet:
                yield f"    - {unmet.message}"
    groups: dict[tuple[bool, tuple[str, ...]], list[str]] = {}
    for fit in placement.fits:
        groups.setdefault((fit.fits, _fit_lines(fit)), []).append(fit.node)
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
    yield (
        "Node failure (t+0s: the node lifecycle controller sees the failed nodes not Ready; "
        "times are approximate, see --help)"
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


def text(explanation: Explanation) -> str:
    """The human report: nodes, then each pod's placement, then the failure simulation.

    Why that order: each part reads with what comes before it in mind.
    """
    nodes = explanation.nodes
    zones = {n.zone for n in nodes}
    out = [f"Nodes: {len(nodes)} in {len(zones)} zone{'s' if len(zones) != 1 else ''}"]
    for node in nodes:
        out.extend(_node_text(node))
    for placement in explanation.placements:
        out.append("")
        out.extend(_placement_text(placement, len(nodes)))
    if explanation.simulation is not None:
        out.append("")
        out.extend(_simulation_text(explanation.simulation))
    return "\n".join(out) + "\n"


# --- JSON ---------------------------------------------------------------------------------


def _verdict(verdict: NoExecuteVerdict) -> dict[str, Any]:
    return {"outcome": verdict.outcome, "seconds": verdict.seconds, "reason": verdict.reason}


def _node(node: Node) -> dict[str, Any]:
    allocatable = None
    if node.allocatable is not None:
        allocatable = {k: show_quantity(k, v) for k, v in sorted(node.allocatable.items())}
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
    return {
        "node": fit.node,
        "fits": fit.fits,
        "unmet": [{"rule": u.rule, "message": u.message} for u in fit.unmet],
        "tolerated": [
            {"taint": t.taint, "toleration": t.toleration, "addedByAdmission": t.added}
            for t in fit.tolerated
        ],
        "preferNoSchedule": list(fit.prefer_no_schedule),
        "ignoredBecauseOfNodeName": list(fit.ignored),
        "noExecute": _verdict(fit.no_execute),
    }


def _placement(placement: Placement) -> dict[str, Any]:
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
    }


def _simulation(sim: Simulation) -> dict[str, Any]:
    rates = sim.rates
    return {
        "settings": {
            "nodeEvictionRate": rates.node_eviction_rate,
            "secondaryNodeEvictionRate": rates.secondary_node_eviction_rate,
            "unhealthyZoneThreshold": rates.unhealthy_zone_threshold,
            "largeClusterSizeThreshold": rates.large_cluster_size_threshold,
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


def json(explanation: Explanation) -> str:
    """Every node for every pod, and the whole simulation, as one JSON document.

    Why no grouping here: scripts look nodes up by name and must not parse sentences.
    """
    data = {
        "nodes": [_node(n) for n in explanation.nodes],
        "pods": [_placement(p) for p in explanation.placements],
        "failure": None if explanation.simulation is None else _simulation(explanation.simulation),
        "exitCode": explanation.exit_code,
    }
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
