"""The harness's ports: drawn outside the kernel's ephemeral range, so no client socket of a
run can take a component's port between its choice and the component's bind."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import pytest

from controlplane.harness.process import (
    DEFAULT_EPHEMERAL,
    LOWEST_PORT,
    ephemeral_range,
    free_port,
    port_candidates,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("32768\t60999\n", (32768, 60999), id="Linux's default range is read"),
        pytest.param("1024 65535\n", (1024, 65535), id="a widened range is read"),
        pytest.param("", DEFAULT_EPHEMERAL, id="an empty file means the default"),
        pytest.param(None, DEFAULT_EPHEMERAL, id="no file means the default"),
    ],
)
def test_the_ephemeral_range_is_the_kernels(
    tmp_path: Path, text: str | None, expected: tuple[int, int]
) -> None:
    path = tmp_path / "ip_local_port_range"
    if text is not None:
        path.write_text(text)
    assert ephemeral_range(path) == expected


@pytest.mark.parametrize(
    ("ephemeral", "bounds"),
    [
        pytest.param((32768, 60999), (LOWEST_PORT, 32767), id="below the default range"),
        pytest.param(
            (10500, 60999), (61000, 65535), id="above a range that leaves too little below"
        ),
        pytest.param((1024, 65535), None, id="none when the range is everything"),
    ],
)
def test_candidates_are_drawn_outside_the_ephemeral_range(
    ephemeral: tuple[int, int], bounds: tuple[int, int] | None
) -> None:
    asked: list[tuple[int, int]] = []

    def draw(low: int, high: int) -> int:
        asked.append((low, high))
        return low

    drawn = list(itertools.islice(port_candidates(ephemeral, draw), 3))
    assert set(asked) == ({bounds} if bounds else set())
    assert len(drawn) == (3 if bounds else 0)


def test_a_free_port_is_bindable_and_outside_this_machines_ephemeral_range() -> None:
    low, high = ephemeral_range()
    port = free_port()
    assert not low <= port <= high
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
