"""The table of supported releases: how versions are read, and that each row can be built."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from webhooks.k8s.releases import (
    DRA_DEVICE_TAINT_RULES,
    DRA_EXTENDED_RESOURCE,
    MUTATING_ADMISSION_POLICY,
    NEWEST,
    OLDEST,
    RELEASES,
    STATIC_ADMISSION,
    TOLERATION_COMPARISONS,
    Release,
    UnsupportedRelease,
    parse_minor,
    release,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        pytest.param("1.34", (1, 34), id="a bare minor is read as it is"),
        pytest.param("v1.35.4", (1, 35), id="a tag is read by its minor"),
        pytest.param("v1.36.3-eks-4f4795d", (1, 36), id="a vendor suffix is ignored"),
        pytest.param("v1.37.2+k3s1", (1, 37), id="a k3s build suffix is ignored"),
        pytest.param(" 1.34 ", (1, 34), id="surrounding blanks are ignored"),
    ],
)
def test_a_version_is_read_by_its_major_and_minor(text: str, minor: tuple[int, int]) -> None:
    assert parse_minor(text) == minor


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("1.33", "Kubernetes 1.33 is not supported", id="an older minor is refused"),
        pytest.param("latest", "not a Kubernetes version", id="a word is refused"),
        pytest.param("1", "not a Kubernetes version", id="a major alone is refused"),
        pytest.param("1.34567", "not a Kubernetes version", id="digits run on are not cut"),
        pytest.param("9" * 10_000, "not a Kubernetes version", id="a huge number is refused"),
    ],
)
def test_an_unsupported_version_is_refused_naming_the_supported_ones(
    text: str, message: str
) -> None:
    with pytest.raises(UnsupportedRelease) as raised:
        release(text)
    assert message in str(raised.value)
    assert len(str(raised.value)) < 200


def test_a_release_newer_than_the_table_is_read_as_the_newest() -> None:
    assert release("1.40") is NEWEST


def test_an_older_release_is_refused_with_the_oldest_named() -> None:
    with pytest.raises(UnsupportedRelease, match=f"{OLDEST.name} is the oldest"):
        release("1.20")


@pytest.mark.parametrize(
    ("name", "api", "by_default"),
    [
        pytest.param("1.34", "admissionregistration.k8s.io/v1beta1", False, id="1.34 has a beta"),
        pytest.param("1.35", "admissionregistration.k8s.io/v1beta1", False, id="1.35 too"),
        pytest.param("1.36", "admissionregistration.k8s.io/v1", True, id="1.36 is GA"),
        pytest.param("1.37", "admissionregistration.k8s.io/v1", True, id="1.37 is GA"),
    ],
)
def test_mutating_admission_policies_are_served_at_the_releases_version(
    name: str, api: str, by_default: bool
) -> None:
    row = release(name)
    assert row.mutating_policy_api == api
    assert row.mutating_policies_by_default is by_default


@pytest.mark.parametrize(
    ("name", "gate", "on"),
    [
        pytest.param("1.34", DRA_EXTENDED_RESOURCE, False, id="the bridge is alpha in 1.34"),
        pytest.param("1.36", DRA_EXTENDED_RESOURCE, True, id="the bridge is on from 1.36"),
        pytest.param("1.36", DRA_DEVICE_TAINT_RULES, False, id="taint rules are an off beta"),
        pytest.param("1.37", DRA_DEVICE_TAINT_RULES, True, id="taint rules are GA in 1.37"),
        pytest.param("1.34", TOLERATION_COMPARISONS, False, id="a gate 1.34 lacks is off"),
        pytest.param("1.37", STATIC_ADMISSION, True, id="static admission is on in 1.37"),
        pytest.param("1.36", MUTATING_ADMISSION_POLICY, True, id="MAP is on in 1.36"),
    ],
)
def test_a_gate_is_on_only_where_the_release_turns_it_on(name: str, gate: str, on: bool) -> None:
    assert release(name).gate_on(gate) is on


def test_a_gate_a_release_lacks_is_absent_not_merely_off() -> None:
    assert TOLERATION_COMPARISONS not in release("1.34").gates
    assert TOLERATION_COMPARISONS in release("1.35").gates


def test_the_rows_are_consecutive_minors_oldest_first() -> None:
    minors = [row.minor for row in RELEASES]
    assert minors == [(1, OLDEST.minor[1] + i) for i in range(len(RELEASES))]
    assert all(row.proven.startswith(f"v{row.name}.") for row in RELEASES)


@pytest.mark.parametrize("row", RELEASES, ids=lambda row: f"release {row.name} can be built")
def test_every_row_has_its_generated_modules_pinned_to_its_tag(row: Release) -> None:
    """The control plane of a row builds from committed modules: no row without them."""
    proven = row.proven
    modules = ROOT / "controlplane" / "gomod" / "releases" / proven
    kube = (modules / "kubernetes" / "go.mod").read_text()
    assert re.search(rf"^\s*(require\s+)?k8s\.io/kubernetes {re.escape(proven)}\b", kube, re.M)
    assert (modules / "kubernetes" / "go.sum").is_file()
    assert "go.etcd.io/etcd/server/v3" in (modules / "etcd" / "go.mod").read_text()
    assert (modules / "etcd" / "go.sum").is_file()


def test_no_modules_are_left_for_a_release_the_table_dropped() -> None:
    present = {p.name for p in (ROOT / "controlplane" / "gomod" / "releases").iterdir()}
    assert present == {row.proven for row in RELEASES}


def _gate_cell(row: Release, gate: str) -> str:
    found = row.gates.get(gate)
    if found is None:
        return "none"
    if found.stage == "ga":
        return "on (GA)"
    return f"{found.stage}, {'on' if found.default else 'off'}"


@pytest.mark.parametrize("row", RELEASES, ids=lambda row: f"the docs say what {row.name} serves")
def test_the_releases_page_says_what_the_table_says(row: Release) -> None:
    """docs/releases.md's first table is the code's table in words, row by row."""
    text = (ROOT / "docs" / "releases.md").read_text("utf-8")
    line = next(x for x in text.splitlines() if x.startswith(f"| {row.name} | {row.proven} |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2].startswith(f"`{row.mutating_policy_version}`")
    assert ("off by default" in cells[2]) is not row.mutating_policies_by_default
    assert cells[3].startswith(f"`{row.device_taint_rule_version}`")
    assert cells[3].endswith("on") is row.device_taint_rules_by_default
    assert cells[4] == _gate_cell(row, DRA_EXTENDED_RESOURCE)
    assert cells[5] == _gate_cell(row, STATIC_ADMISSION)
    comparisons = _gate_cell(row, TOLERATION_COMPARISONS)
    assert cells[6] == ("no gate" if comparisons == "none" else comparisons)
