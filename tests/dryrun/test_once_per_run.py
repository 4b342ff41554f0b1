"""A missing DRA object is one fact about the input: reported once per run, with a count.

Pods here claim devices through a ResourceClaimTemplate whose DeviceClass is not among the
inputs (as in a driver's example directory, where the class comes from its Helm chart).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.command import invoke_cli
from webhooks.core.config import load_config
from webhooks.dryrun.report import Report
from webhooks.dryrun.run import dry_run
from webhooks.manifests.reader import Document, Source, split
from webhooks.plugins import REGISTRY

TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}, namespace: default}}
spec:
  spec:
    devices:
      requests:
      - name: dev
        exactly: {{deviceClassName: {device_class}}}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - {{name: app, image: busybox}}
  resourceClaims:
  - {{name: dev, resourceClaimTemplateName: {template}}}
{tolerations}"""

GPU_TOLERATION = (
    "  tolerations:\n  - {key: example.com/gpu, operator: Exists, effect: NoSchedule}\n"
)
DEVICE_CLAIMS = {"plugins": {"extended-resource-toleration": {"deviceClaims": True}}}
ENFORCE = {
    "plugins": {
        "extended-resource-toleration": {"enforce": {"guarded": [{"taintKey": "example.com/gpu"}]}}
    }
}


def _pods(count: int, template: str = "gpu", tolerations: str = "", start: int = 0) -> list[str]:
    return [
        POD.format(name=f"p{start + i}", template=template, tolerations=tolerations)
        for i in range(count)
    ]


def _run(config: dict[str, Any], texts: list[str]) -> Report:
    documents: list[Document] = []
    for index, text in enumerate(texts):
        docs, problem = split(Source(f"m{index}.yaml", text))
        assert problem is None
        documents += docs
    return dry_run(documents, load_config(config, REGISTRY))


def _warnings(report: Report) -> list[tuple[str, str]]:
    return [(c.name, f.message) for c in report.checked for f in c.findings if f.type == "warning"]


TEMPLATES = [
    TEMPLATE.format(name="gpu", device_class="gpu.example.com"),
    TEMPLATE.format(name="fpga", device_class="fpga.example.com"),
]

CASES = [
    pytest.param(
        DEVICE_CLAIMS,
        _pods(1),
        {("p0", "DeviceClass gpu.example.com not found")},
        "",
        id="one pod of an unknown class: one warning, no count",
    ),
    pytest.param(
        DEVICE_CLAIMS,
        _pods(100),
        {("p0", "DeviceClass gpu.example.com not found")},
        "(100 objects refer to it; reported here once)",
        id="100 pods of one unknown class: one warning on the first, counting them",
    ),
    pytest.param(
        DEVICE_CLAIMS,
        [*_pods(3), *_pods(2, "fpga", start=3)],
        {
            ("p0", "DeviceClass gpu.example.com not found"),
            ("p3", "DeviceClass fpga.example.com not found"),
        },
        "objects refer to it; reported here once)",
        id="two unknown classes: one warning each, each counting its own pods",
    ),
    pytest.param(
        ENFORCE,
        _pods(100),
        set(),
        "",
        id="enforce alone and no toleration: nothing depends on the class, no warning",
    ),
    pytest.param(
        ENFORCE,
        [*_pods(100), *_pods(1, tolerations=GPU_TOLERATION, start=100)],
        {("p100", "DeviceClass gpu.example.com not found")},
        "",
        id="enforce alone: only the pod whose toleration a claim could justify is warned",
    ),
    pytest.param(
        None,
        _pods(100, tolerations=GPU_TOLERATION),
        set(),
        "",
        id="the defaults read no claims and warn about none",
    ),
]


@pytest.mark.parametrize(("config", "pods", "expected", "count"), CASES)
def test_an_unresolved_class_is_warned_once_per_run_and_only_where_it_matters(
    config: dict[str, Any] | None, pods: list[str], expected: set[tuple[str, str]], count: str
) -> None:
    report = _run(config or {}, [*TEMPLATES, *pods])
    found = _warnings(report)
    assert {(name, message.split(":")[0]) for name, message in found} == expected
    assert len(found) == len(expected)
    if count:
        assert all(message.endswith(count) for _, message in found)
    else:
        assert all("refer to it" not in message for _, message in found)


def test_each_class_counts_the_objects_that_refer_to_it() -> None:
    report = _run(DEVICE_CLAIMS, [*TEMPLATES, *_pods(3), *_pods(2, "fpga", start=3)])
    found = dict(_warnings(report))
    assert "(3 objects refer to it;" in found["p0"]
    assert "(2 objects refer to it;" in found["p3"]


def test_the_run_still_admits_every_pod_the_same() -> None:
    """Folding the warnings changes what is reported, never what admission decides."""
    report = _run(DEVICE_CLAIMS, [*TEMPLATES, *_pods(5)])
    assert [c.name for c in report.checked] == [f"p{i}" for i in range(5)]
    assert all(
        ("extended-resource-toleration", "unresolved_claim") in c.outcomes["object"].decisions
        for c in report.checked
    )


def test_other_warnings_are_not_folded() -> None:
    """Only warnings about an input object are one fact per run; a plugin's warning about
    a pod stays with each pod (dedicated-nodes says what it added to each)."""
    config = {"plugins": {"dedicated-nodes": {"enabled": True, "namespaces": {"default": "a"}}}}
    pods = [
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: default}}\n"
        "spec:\n  containers: [{name: app, image: busybox}]\n"
        for i in range(3)
    ]
    report = _run(config, pods)
    per_pod = [sum(f.type == "warning" for f in c.findings) for c in report.checked]
    assert per_pod == [per_pod[0]] * 3 and per_pod[0] >= 1


@pytest.mark.parametrize("command", ["check", "mutate"])
def test_check_and_mutate_print_the_warning_once_for_a_directory_of_pods(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "template.yaml").write_text(TEMPLATES[0])
    for index, text in enumerate(_pods(100)):
        (tmp_path / f"pod-{index:03d}.yaml").write_text(text)
    config = tmp_path / "placement.yaml"
    config.write_text("plugins:\n  extended-resource-toleration: {deviceClaims: true}\n")
    result = invoke_cli([command, "--config", str(config), str(tmp_path)])
    printed = result.stdout if command == "check" else result.stderr
    lines = [line for line in printed.splitlines() if "DeviceClass gpu.example.com" in line]
    assert len(lines) == 1, printed[-2000:]
    assert "pod-000.yaml" in lines[0] and "(100 objects refer to it" in lines[0]
