"""The audit's text, JSON and JUnit: one wording, every outcome, the same totals."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from webhooks.audit import render
from webhooks.audit.results import Audit, Outcome, Ref, Rule

NOW = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
WEB = Ref("apps/v1", "Deployment", "shop", "web", "u-web")
SOLO = Ref("v1", "Pod", "shop", "solo", "u-solo")
NODE = Ref("v1", "Node", "", "worker-2", "u-node")


@pytest.mark.parametrize(
    ("outcome", "rule", "pods", "text"),
    [
        ("fail", "violation", 0, "Pod shop/solo: p: m"),
        ("warn", "violation", 0, "Pod shop/solo: p: warning: m"),
        ("warn", "drift", 3, "Deployment shop/web (3 pods): p: drift: m"),
        ("skip", "violation", 1, "Deployment shop/web (1 pod): p: skipped violation: m"),
        ("skip", "drift", 0, "Pod shop/solo: p: skipped drift: m"),
        ("error", "convergence", 0, "Pod shop/solo: p: error: m"),
        ("note", "monitor", 0, "Pod shop/solo: p: note: m"),
    ],
    ids=[
        "a failure reads as check's errors do, untagged",
        "a violation under warn or audit is a warning",
        "drift says so, with the pods counted on their controller",
        "a skip names the rule it skipped",
        "a skipped drift and a skipped violation read apart",
        "an object that could not be judged is an error",
        "a note is a note",
    ],
)
def test_every_outcome_has_its_wording(outcome: Outcome, rule: Rule, pods: int, text: str) -> None:
    found = Audit(NOW)
    ref = WEB if pods else SOLO
    result = found.add(ref, "p", rule, outcome, "m")
    result.pods = pods
    assert render.line(result) == text


def sample() -> Audit:
    found = Audit(NOW)
    found.objects.update({"Pod": 4, "Deployment": 1, "Node": 1})
    found.covered["ReplicaSet"] = 1
    for _ in range(3):
        found.add(WEB, "default-toleration-seconds", "drift", "warn", "added x", pod=True)
    found.add(
        SOLO,
        "dedicated-nodes",
        "violation",
        "fail",
        "toleration y",
        properties={"action": "enforce"},
    )
    found.add(NODE, "taint-toleration-rules", "violation", "fail", "bad key")
    found.skip(Ref("v1", "Pod", "kube-system", "etcd-cp1"), "mirror pod of a static pod: ...")
    return found


def test_text_lists_failures_first_then_what_was_not_admitted_then_the_summary() -> None:
    assert render.text(sample()).splitlines() == [
        "Node worker-2: taint-toleration-rules: bad key",
        "Pod shop/solo: dedicated-nodes: toleration y",
        "Deployment shop/web (3 pods): default-toleration-seconds: drift: added x",
        "Pod kube-system/etcd-cp1: skipped: mirror pod of a static pod: ...",
        "6 objects audited (Deployment 1, Node 1, Pod 4): 2 failed, 0 warnings, 1 drift, "
        "0 skipped by exceptions; through their owners: ReplicaSet 1; "
        "1 pod not admitted (mirror or finished)",
    ]


def test_json_carries_every_result_with_its_subject_and_the_exit_code() -> None:
    data: dict[str, Any] = json.loads(render.json(sample()))
    assert data["summary"] == {
        "objects": {"Deployment": 1, "Node": 1, "Pod": 4},
        "throughOwners": {"ReplicaSet": 1},
        "namespaces": None,
        "excluded": [],
        "fail": 2,
        "error": 0,
        "warn": 1,
        "skip": 0,
        "notAdmitted": 1,
        "exitCode": 1,
    }
    drift = data["results"][2]
    assert drift == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "shop",
        "name": "web",
        "uid": "u-web",
        "policy": "default-toleration-seconds",
        "rule": "drift",
        "result": "warn",
        "severity": "low",
        "message": "added x",
        "pods": 3,
        "properties": {},
    }
    assert data["notAdmitted"][0]["reason"].startswith("mirror pod")


def test_junit_fails_what_fails_and_skips_what_only_warns() -> None:
    root = ET.fromstring(render.junit(sample()))
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "2", "1")
    cases = {case.get("name"): case for suite in root for case in suite}
    assert cases["Node worker-2"].find("failure") is not None
    assert cases["Deployment shop/web (3 pods)"].find("skipped") is not None
    assert [s.get("name") for s in root] == ["cluster", "shop"]
