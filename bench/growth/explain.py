"""``explain``: placing pods on an inventory, rendered, as the pods and as the nodes double.

Why both directions: the work is one fit per pod and node, so time doubles with either;
memory must not follow the pairs, only the inputs. With the inventory fixed, doubling the
pods must leave the peak flat (each pod's answer is rendered and dropped); with the pods
fixed, doubling the nodes may double it (one pod's answer holds a fit per node). The
inputs (nodes, admitted pods) are built before the measured window, so what is measured is
what placing and rendering them costs. One node of the inventory is not Ready, so the
failure simulation runs too. Every pod tolerates some taints and not others, so nodes do
not all get the same answer and the text does not collapse into one line.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from bench.growth.measure import Surface, in_process
from webhooks.explain import render
from webhooks.explain.explanation import Explanation, explain
from webhooks.explain.failure import Rates
from webhooks.explain.nodes import Node, parse_node
from webhooks.explain.pods import PodView

_fresh = itertools.count()
_ZONES = ("a", "b", "c")
#: The fixed side of each surface.
_NODES, _PODS = 200, 50


def _node(i: int) -> Node:
    taints = [{"key": f"team-{i % 7}", "value": "x", "effect": "NoSchedule"}]
    if i % 5 == 0:
        taints.append({"key": "gpu", "effect": "NoExecute"})
    ready = "False" if i == 0 else "True"
    return parse_node(
        {
            "kind": "Node",
            "metadata": {
                "name": f"node-{i}",
                "labels": {"topology.kubernetes.io/zone": _ZONES[i % 3], "pool": f"p{i % 4}"},
            },
            "spec": {"taints": taints},
            "status": {
                "conditions": [{"type": "Ready", "status": ready}],
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            },
        }
    )


def _pod(i: int) -> PodView:
    tag = next(_fresh)
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{1 + i % 9}"}}}],
        "tolerations": [
            {"key": f"team-{i % 7}", "operator": "Exists"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        ],
    }
    if i % 3 == 0:
        spec["nodeSelector"] = {"pool": f"p{i % 4}"}
    return PodView(subject=f"Pod default/p-{tag}-{i}", spec=spec)


def _inputs(pods: int, nodes: int) -> tuple[list[Node], list[PodView]]:
    return [_node(i) for i in range(nodes)], [_pod(i) for i in range(pods)]


class _Sink:
    """Where the report goes (a terminal, a file): its length counted, nothing kept."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, chunk: str) -> None:
        self.written += len(chunk)


Writer = Callable[[Explanation, Callable[[str], object]], int]


def _runner(writer: Writer) -> Callable[[tuple[list[Node], list[PodView]]], int]:
    def run(inputs: tuple[list[Node], list[PodView]]) -> int:
        nodes, pods = inputs
        sink = _Sink()
        writer(explain(nodes, pods, Rates()), sink.write)
        return sink.written

    return run


SURFACES = [
    Surface(
        f"explain: pods on {_NODES} nodes, text",
        "pods",
        100,
        in_process(lambda n: _inputs(n, _NODES), _runner(render.write_text), repeat=2),
    ),
    Surface(
        f"explain: pods on {_NODES} nodes, JSON",
        "pods",
        100,
        in_process(lambda n: _inputs(n, _NODES), _runner(render.write_json), repeat=2),
    ),
    Surface(
        f"explain: nodes under {_PODS} pods, text",
        "nodes",
        400,
        in_process(lambda n: _inputs(_PODS, n), _runner(render.write_text), repeat=2),
    ),
    Surface(
        f"explain: nodes under {_PODS} pods, JSON",
        "nodes",
        400,
        in_process(lambda n: _inputs(_PODS, n), _runner(render.write_json), repeat=2),
    ),
]
