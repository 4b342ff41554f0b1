"""``explain`` holds one pod's answer at a time: memory follows pods + nodes, not pods × nodes.

Each answer holds a fit per node (about 2 KB a pair once rendered), so an explanation that
kept them all grew with the product: 10 MB of input could take gigabytes. These tests count
what is alive while the report is written, and how peak memory moves when the pods
double; none measures time.
"""

from __future__ import annotations

import gc
import re
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
import pytest

from webhooks.explain import explanation as explanation_module
from webhooks.explain import render
from webhooks.explain.coverage import DaemonRun
from webhooks.explain.explanation import (
    MAX_PAIRS,
    Explanation,
    TooManyPairs,
    check_pairs,
    explain,
)
from webhooks.explain.failure import Rates
from webhooks.explain.fit import Fit
from webhooks.explain.nodes import Node, parse_node
from webhooks.explain.pods import PodView

Writer = Callable[[Explanation, Callable[[str], object]], int]
WRITERS = [
    pytest.param(render.write_text, id="the text report"),
    pytest.param(render.write_json, id="the JSON report"),
]


def _node(i: int) -> Node:
    return parse_node(
        {
            "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {"pool": f"p{i % 3}"}},
            "spec": {"taints": [{"key": f"team-{i % 4}", "effect": "NoSchedule"}]},
            "status": {
                "conditions": [{"type": "Ready", "status": "False" if i == 0 else "True"}],
                "allocatable": {"cpu": "4", "pods": "110"},
            },
        }
    )


def _pod(i: int) -> PodView:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{1 + i % 5}"}}}],
        "tolerations": [{"key": f"team-{i % 4}", "operator": "Exists"}],
        "nodeSelector": {"pool": f"p{i % 3}"},
    }
    return PodView(subject=f"Pod default/p-{i}", spec=spec)


def _daemon(i: int) -> PodView:
    return replace(_pod(i), subject=f"Pod kube-system/ds-{i}", daemon=True)


def _explanation(pods: int, nodes: int, daemons: int = 0) -> Explanation:
    admitted = [_pod(i) for i in range(pods)] + [_daemon(i) for i in range(daemons)]
    return explain([_node(i) for i in range(nodes)], admitted, Rates())


def test_no_pod_is_placed_until_a_renderer_asks_for_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    placed: list[str] = []
    real = explanation_module.place

    def counting(pod: PodView, nodes: Any) -> Any:
        placed.append(pod.subject)
        return real(pod, nodes)

    monkeypatch.setattr(explanation_module, "place", counting)
    found = _explanation(5, 10)
    assert placed == [], "placing every pod up front keeps pods × nodes fits"
    answers = found.answers()
    next(answers)
    assert placed == ["Pod default/p-0"]


@pytest.mark.parametrize("writer", WRITERS)
def test_while_the_report_is_written_only_one_pods_fits_are_alive(writer: Writer) -> None:
    nodes, pods = 30, 12
    found = _explanation(pods, nodes)
    alive: list[int] = []

    def write(chunk: str) -> None:
        alive.append(sum(isinstance(o, Fit) for o in gc.get_objects()))

    writer(found, write)
    assert alive, "the report was written"
    assert max(alive) <= nodes, f"{max(alive)} fits alive at once, for {nodes} nodes"


@pytest.mark.parametrize("writer", WRITERS)
def test_while_coverage_is_written_only_one_nodes_entry_is_alive(writer: Writer) -> None:
    nodes, daemons = 30, 8
    found = _explanation(0, nodes, daemons)
    alive: list[int] = []

    def write(chunk: str) -> None:
        alive.append(sum(isinstance(o, DaemonRun) for o in gc.get_objects()))

    writer(found, write)
    assert max(alive) <= daemons, f"{max(alive)} answers alive, for {daemons} DaemonSets"


def _peak(writer: Writer, pods: int, nodes: int, daemons: int = 0) -> int:
    found = _explanation(pods, nodes, daemons)  # the inputs, built before measuring
    written: list[int] = []
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        writer(found, lambda chunk: written.append(len(chunk)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


@pytest.mark.parametrize("writer", WRITERS)
def test_twice_the_pods_on_the_same_nodes_take_no_more_memory(writer: Writer) -> None:
    once, twice = _peak(writer, 20, 60), _peak(writer, 40, 60)
    # Kept answers would double the peak (20 more pods × 60 nodes of fits); one answer at a
    # time leaves it where it was, give or take the pods' own small records.
    assert twice < 1.25 * once, f"{once:,} bytes for 20 pods, {twice:,} for 40"


@pytest.mark.parametrize("writer", WRITERS)
def test_twice_the_daemonsets_and_nodes_take_twice_the_memory_not_four_times(
    writer: Writer,
) -> None:
    # Each DaemonSet's pod is placed like any pod, and checked on every tainted node: one
    # answer or coverage entry holds one side's worth, all of them the product.
    once, twice = _peak(writer, 0, 40, 10), _peak(writer, 0, 80, 20)
    assert twice < 2.5 * once, f"{once:,} bytes for 10 x 40, {twice:,} for 20 x 80"


@pytest.mark.parametrize("writer", WRITERS)
def test_the_report_written_a_pod_at_a_time_is_the_report(writer: Writer) -> None:
    found = _explanation(4, 6, 2)
    chunks: list[str] = []
    code = writer(found, chunks.append)
    assert len(chunks) > 4, "written in pieces, at least one per pod"
    whole = "".join(chunks)
    assert code == found.exit_code
    if writer is render.write_json:
        data = orjson.loads(whole)
        # Indented exactly as one dump of the whole document would be.
        assert whole == orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
        assert [p["pod"] for p in data["pods"]][:4] == [f"Pod default/p-{i}" for i in range(4)]
        assert len(data["daemonSetCoverage"]) == 6
        assert all(len(p["nodes"]) == 6 for p in data["pods"])
        assert list(data)[-1] == "exitCode" and data["exitCode"] == code
    else:
        assert whole == render.text(found)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_report_without_pods_is_still_whole(writer: Writer) -> None:
    found = _explanation(0, 3)
    chunks: list[str] = []
    assert writer(found, chunks.append) == 0
    if writer is render.write_json:
        assert orjson.loads("".join(chunks))["pods"] == []


@pytest.mark.parametrize(
    ("pods", "nodes", "refused"),
    [
        pytest.param(MAX_PAIRS // 5_000, 5_000, False, id="pairs up to the limit are placed"),
        pytest.param(MAX_PAIRS // 5_000 + 1, 5_000, True, id="one pod more is refused"),
        pytest.param(0, 10**9, False, id="no pods place nothing, however many nodes"),
    ],
)
def test_pod_node_pairs_past_the_limit_are_refused_naming_it(
    pods: int, nodes: int, refused: bool
) -> None:
    if refused:
        limit = re.escape(f"over the limit of {MAX_PAIRS:,} (--max-pairs)")
        with pytest.raises(TooManyPairs, match=limit):
            check_pairs(pods, nodes)
    else:
        check_pairs(pods, nodes)
