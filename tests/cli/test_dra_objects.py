"""``check``, ``mutate``, ``review`` and ``test`` with DRA objects from the manifests or
``--objects``: a Job and its ResourceClaimTemplate in one file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests import dra
from tests.command import invoke_cli
from tests.reviews import pod, review

FIXTURES = Path(__file__).parent.parent / "fixtures" / "dra"
JOB = str(FIXTURES / "training-job.yaml")
TOLERATING = str(FIXTURES / "training-job-tolerating.yaml")
DEVICE_CLAIMS = str(FIXTURES / "device-claims.yaml")
ENFORCE = str(FIXTURES / "enforce.yaml")
GPU_TOLERATION = {"key": dra.GPU, "operator": "Exists", "effect": "NoSchedule"}


def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = invoke_cli(list(args), stdin=stdin)
    return result.exit_code, result.output


def job_tolerations(output: str) -> list[dict[str, str]]:
    job = next(d for d in yaml.safe_load_all(output) if d and d.get("kind") == "Job")
    return list(job["spec"]["template"]["spec"].get("tolerations", []))


def test_mutate_adds_the_gpu_toleration_to_a_job_and_its_template_in_one_file() -> None:
    code, out = run("mutate", "--config", DEVICE_CLAIMS, JOB)
    assert code == 0
    assert GPU_TOLERATION in job_tolerations(out)


def test_mutate_leaves_the_job_without_it_when_the_setting_is_off() -> None:
    code, out = run("mutate", JOB)
    assert code == 0
    assert GPU_TOLERATION not in job_tolerations(out)


def test_check_reports_the_mutation_and_the_result_is_a_fixed_point(tmp_path: Path) -> None:
    code, out = run("check", "--config", DEVICE_CLAIMS, JOB)
    assert code == 0
    assert "extended-resource-toleration: pods of Job default/train: added example.com/gpu" in out
    code, written = run("mutate", "--config", DEVICE_CLAIMS, JOB)
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(written, encoding="utf-8")
    code, out = run("check", "--config", DEVICE_CLAIMS, "--fail-on-mutation", str(fixed))
    assert code == 0, out


def test_enforce_admits_the_tolerating_job_and_refuses_the_pod_without_a_claim() -> None:
    code, out = run("check", "--config", ENFORCE, TOLERATING)
    assert code == 1
    lines = [line for line in out.splitlines() if "extended-resource-toleration" in line]
    assert len(lines) == 1
    assert "training-job-tolerating.yaml:50:" in lines[0]  # the squatter Pod's toleration key


def test_the_template_may_come_from_objects(tmp_path: Path) -> None:
    documents = list(yaml.safe_load_all((FIXTURES / "training-job.yaml").read_text()))
    objects = tmp_path / "objects.yaml"
    objects.write_text(yaml.safe_dump_all(documents[:2]), encoding="utf-8")
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(documents[2]), encoding="utf-8")
    code, out = run("mutate", "--config", DEVICE_CLAIMS, "--objects", str(objects), str(job))
    assert code == 0
    assert GPU_TOLERATION in job_tolerations(out)


def test_a_missing_template_is_a_warning_and_no_failure(tmp_path: Path) -> None:
    documents = list(yaml.safe_load_all((FIXTURES / "training-job.yaml").read_text()))
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(documents[2]), encoding="utf-8")
    code, out = run("check", "--config", DEVICE_CLAIMS, "-o", "json", str(job))
    assert code == 0
    found = json.loads(out)["objects"][0]["violations"]
    assert [(f["type"], f["level"]) for f in found] == [("warning", "warning")]
    assert "ResourceClaimTemplate one-gpu in namespace default not found" in found[0]["message"]


def test_review_takes_the_template_and_class_from_objects(tmp_path: Path) -> None:
    objects = tmp_path / "objects.yaml"
    objects.write_text(
        yaml.safe_dump_all([dra.device_class(extended=dra.GPU), dra.claim_template("one-gpu")]),
        encoding="utf-8",
    )
    body = review(pod(resourceClaims=dra.pod_claims(("gpu", "template", "one-gpu"))))
    code, out = run(
        "review", "--config", DEVICE_CLAIMS, "--objects", str(objects), stdin=json.dumps(body)
    )
    assert code == 0
    assert json.loads(out)["response"]["patchType"] == "JSONPatch"


@pytest.mark.parametrize(
    "namespace", ["team-a", "default"], ids=["in the namespace given", "in the default one"]
)
def test_a_template_without_a_namespace_goes_with_its_job(namespace: str) -> None:
    code, out = run("mutate", "--config", DEVICE_CLAIMS, "-n", namespace, JOB)
    assert code == 0
    assert GPU_TOLERATION in job_tolerations(out)


def test_check_takes_the_comparison_operators_gate(tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    obj = pod(tolerations=[{"key": "tier", "operator": "Gt", "value": "5", "effect": "NoSchedule"}])
    manifest.write_text(yaml.safe_dump(obj), encoding="utf-8")
    assert run("check", str(manifest))[0] == 1
    gate = "TaintTolerationComparisonOperators=true"
    assert run("check", "--feature-gates", gate, str(manifest))[0] == 0
    code, out = run(
        "check", "--feature-gates", "TaintTolerationComparisonOperators=maybe", str(manifest)
    )
    assert code == 2 and "must be set to true or false" in out
