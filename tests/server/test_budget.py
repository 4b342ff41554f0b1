"""A listener's connection budget without sockets: who is closed to make room, and when."""

from __future__ import annotations

import pytest

from webhooks.server.budget import HEAD_TIMEOUT, Budget


def _budget(steps: list[tuple[str, int, float]], cap: int = 3) -> Budget[str]:
    """A budget after ``steps``: (what happened, connection number, when)."""
    budget: Budget[str] = Budget(cap, HEAD_TIMEOUT)
    for step, key, now in steps:
        name = f"c{key}"
        if step == "opened":
            budget.opened(key, name, now)
        elif step == "starting":
            budget.starting(key, name, now)
        elif step == "body":
            budget.body(key, name, now)
        elif step == "under way":
            budget.under_way(key)
        elif step == "idle":
            budget.idle(key, name)
        elif step == "closing":
            budget.closing(key, name)
        else:
            budget.closed(key)
    return budget


#: id, what happened, when room is wanted, and who is closed (reason, name) or None.
CASES: list[tuple[str, list[tuple[str, int, float]], float, tuple[str, str] | None]] = [
    (
        "nothing open: nobody",
        [],
        0.0,
        None,
    ),
    (
        "a handshake not finished in time is stalled",
        [("opened", 1, 0.0)],
        HEAD_TIMEOUT,
        ("stalled_head", "c1"),
    ),
    (
        "an unfinished connection within its time goes only when nothing is idle",
        [("opened", 1, 0.0)],
        1.0,
        ("unfinished", "c1"),
    ),
    (
        "an idle keep-alive connection goes before an unfinished one within its time",
        [("opened", 1, 0.0), ("under way", 1, 0.1), ("idle", 1, 0.2), ("opened", 2, 1.0)],
        1.5,
        ("idle", "c1"),
    ),
    (
        "a stalled connection goes before an idle one",
        [("opened", 1, 0.0), ("under way", 1, 0.1), ("idle", 1, 0.2), ("opened", 2, 1.0)],
        1.0 + HEAD_TIMEOUT,
        ("stalled_head", "c2"),
    ),
    (
        "the longest idle goes first",
        [
            ("opened", 1, 0.0),
            ("opened", 2, 0.0),
            ("under way", 1, 0.1),
            ("under way", 2, 0.1),
            ("idle", 2, 0.2),
            ("idle", 1, 0.3),
        ],
        10.0,
        ("idle", "c2"),
    ),
    (
        "a keep-alive connection's next head is due from its first byte, not from the accept",
        [
            ("opened", 1, 0.0),
            ("under way", 1, 0.1),
            ("idle", 1, 0.2),
            ("starting", 1, 50.0),
        ],
        50.0 + HEAD_TIMEOUT / 2,
        ("unfinished", "c1"),
    ),
    (
        "a new connection's first byte does not restart its time",
        [("opened", 1, 0.0), ("starting", 1, 1.9)],
        HEAD_TIMEOUT,
        ("stalled_head", "c1"),
    ),
    (
        "a connection closing after its answer goes before all",
        [("opened", 1, 0.0), ("opened", 2, 0.0), ("under way", 2, 0.1), ("closing", 2, 0.2)],
        100.0,
        ("closing", "c2"),
    ),
    (
        "a body not arrived in time goes after the idle",
        [
            ("opened", 1, 0.0),
            ("body", 1, 0.1),
            ("opened", 2, 0.0),
            ("under way", 2, 0.1),
            ("idle", 2, 0.2),
        ],
        0.1 + HEAD_TIMEOUT,
        ("idle", "c2"),
    ),
    (
        "a body not arrived in time goes before an unfinished connection within its time",
        [("opened", 1, 0.0), ("body", 1, 0.1), ("opened", 2, 5.0)],
        0.1 + HEAD_TIMEOUT + 3.0,
        ("stalled_body", "c1"),
    ),
    (
        "a body within its time is never chosen",
        [("opened", 1, 0.0), ("body", 1, 0.1)],
        0.1 + HEAD_TIMEOUT / 2,
        None,
    ),
    (
        "the oldest overdue body goes first",
        [("opened", 1, 0.0), ("opened", 2, 0.0), ("body", 2, 0.1), ("body", 1, 0.2)],
        10.0,
        ("stalled_body", "c2"),
    ),
    (
        "a connection whose request arrived whole is never chosen",
        [("opened", 1, 0.0), ("body", 1, 0.05), ("under way", 1, 0.1)],
        100.0,
        None,
    ),
    (
        "a closed connection is forgotten",
        [("opened", 1, 0.0), ("closed", 1, 0.1)],
        100.0,
        None,
    ),
]


@pytest.mark.parametrize(
    ("steps", "now", "chosen"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_room_is_made_in_order(
    steps: list[tuple[str, int, float]], now: float, chosen: tuple[str, str] | None
) -> None:
    assert _budget(steps).victim(now) == chosen


def test_the_budget_is_full_at_its_cap_and_a_closed_slot_is_free_again() -> None:
    budget = _budget([("opened", 1, 0.0), ("opened", 2, 0.0), ("under way", 2, 0.1)], cap=2)
    assert budget.full and budget.counts() == (0, 1, 0, 0)
    budget.closed(1)
    assert not budget.full and budget.open == 1


def test_unfinished_connections_are_chosen_oldest_first_whatever_their_number() -> None:
    """The order that protects a review in its handshake: only a whole budget of newer
    connections arriving meanwhile can push it out."""
    budget: Budget[int] = Budget(1000)
    for key in range(1000):
        budget.opened(key, key, key / 1000)
    for key in range(1000):
        chosen = budget.victim(1.0)
        assert chosen is not None and chosen[1] == key
        budget.closed(key)
    assert budget.open == 0 and budget.counts() == (0, 0, 0, 0)
