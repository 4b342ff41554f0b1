"""What an API server's reported version is judged as: a supported row, or an assumption said."""

from __future__ import annotations

import pytest

from webhooks.k8s.releases import NEWEST, OLDEST, judge, release

CASES = [
    pytest.param("v1.34.4", "1.34", "", id="a supported release is itself, with nothing to say"),
    pytest.param("v1.35.2-eks-4f4795d", "1.35", "", id="a vendor suffix is read past"),
    pytest.param(
        "v1.33.9",
        OLDEST.name,
        "Kubernetes 1.33 is older than the oldest supported release: judged as Kubernetes "
        f"{OLDEST.name}, and more may not work than is said",
        id="an older release is judged as the oldest, and said",
    ),
    pytest.param(
        "v1.40.0",
        NEWEST.name,
        f"Kubernetes 1.40 is newer than the newest supported release: judged as Kubernetes "
        f"{NEWEST.name}",
        id="a newer release is judged as the newest, and said",
    ),
    pytest.param(
        "nightly",
        NEWEST.name,
        f"the API server's version 'nightly' names no Kubernetes release: assuming Kubernetes "
        f"{NEWEST.name}, the newest supported",
        id="a version that names no release assumes the newest",
    ),
]


@pytest.mark.parametrize(("reported", "name", "note"), CASES)
def test_a_reported_version_is_judged(reported: str, name: str, note: str) -> None:
    found = judge(reported)
    assert (found.release.name, found.reported, found.note) == (name, reported, note)


def test_a_server_that_cannot_be_asked_is_assumed_the_newest_and_said_why() -> None:
    found = judge(None, "GET /version: no answer within 2s")
    assert found.release == NEWEST
    assert found.note == (
        "cannot read the API server's version (GET /version: no answer within 2s): assuming "
        f"Kubernetes {NEWEST.name}, the newest supported"
    )


@pytest.mark.parametrize(
    ("name", "state"),
    [
        pytest.param("1.34", "absent from Kubernetes 1.34", id="a gate the release lacks"),
        pytest.param("1.35", "alpha, off by default on Kubernetes 1.35", id="an alpha gate"),
        pytest.param("1.37", "alpha, off by default on Kubernetes 1.37", id="still alpha in 1.37"),
    ],
)
def test_a_gate_state_is_a_clause(name: str, state: str) -> None:
    assert release(name).gate_state("TaintTolerationComparisonOperators") == state


def test_device_taint_rules_are_served_by_default_only_where_ga() -> None:
    assert [
        r.name
        for r in (release(n) for n in ("1.34", "1.35", "1.36", "1.37"))
        if r.device_taint_rules_by_default
    ] == ["1.37"]
