"""The install window and `helm test`: nothing refused before the server answers, then the
configured policies; the hooks' commands are ones `placement-webhooks probe` accepts."""

from __future__ import annotations

from typing import Any

import pytest

from tests.charts.render import NAMESPACE, RELEASE, is_hook, notes, of_kind, one, released, render
from webhooks.cli.probe import probe

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"


def policies(objects: list[dict[str, Any]]) -> dict[str, str]:
    return {
        hook["name"]: hook["failurePolicy"]
        for obj in objects
        if obj["kind"] in (MUTATING, VALIDATING)
        for hook in obj["webhooks"]
    }


def hook_events(obj: dict[str, Any]) -> set[str]:
    return set(obj["metadata"]["annotations"]["helm.sh/hook"].split(","))


def job_args(objects: list[dict[str, Any]]) -> list[str]:
    [container] = one(objects, "Job")["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args


def test_an_install_registers_every_webhook_fail_open() -> None:
    installed = policies(render())
    assert installed == dict.fromkeys(installed, "Ignore")
    assert policies(render(upgrade=True))[f"validate.{RELEASE}.svc"] == "Fail"


def test_the_install_hook_waits_for_a_round_trip_then_sets_the_configured_policies() -> None:
    objects = render()
    job = one(objects, "Job")
    assert hook_events(job) == {"post-install"}
    assert job_args(objects) == [
        "probe",
        "--name",
        RELEASE,
        "--namespace",
        NAMESPACE,
        "--wait",
        "240",
        "--failure-policy",
        f"validate.{RELEASE}.svc=Fail",
    ]
    spec = job["spec"]
    assert spec["backoffLimit"] == 1
    assert spec["activeDeadlineSeconds"] == 2 * 240 + 60
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == f"{RELEASE}-probe"
    assert pod["restartPolicy"] == "Never"


def test_every_webhook_configured_to_fail_closed_is_switched() -> None:
    values = {
        "webhooks": {
            "perPlugin": True,
            "mutating": {"failurePolicy": "Fail"},
            "nodes": {"enabled": True, "failurePolicy": "Fail"},
        }
    }
    objects = render(values)
    args = job_args(objects)
    switched = {args[i + 1] for i, arg in enumerate(args) if arg == "--failure-policy"}
    configured = policies(render(values, upgrade=True))
    assert switched == {f"{name}={policy}" for name, policy in configured.items()}
    assert set(policies(objects).values()) == {"Ignore"}


@pytest.mark.parametrize(
    "values",
    [
        {"install": {"failOpenUntilReady": False}},
        {"webhooks": {"validating": {"failurePolicy": "Ignore"}}},
    ],
    ids=["fail-open install turned off (GitOps)", "nothing configured to fail closed"],
)
def test_no_install_hook_when_there_is_nothing_to_switch(values: dict[str, Any]) -> None:
    objects = render(values)
    assert of_kind(objects, "Job") == []
    assert policies(objects) == policies(render(values, upgrade=True))


def test_an_upgrade_renders_the_configured_policies_and_no_install_hook() -> None:
    objects = render(upgrade=True)
    assert of_kind(objects, "Job") == []
    role = one([o for o in objects if is_hook(o)], "ClusterRole")
    assert hook_events(role) == {"test"}
    assert role["rules"][0]["verbs"] == ["get"]


def test_the_hooks_can_only_read_and_at_install_patch_the_two_configurations() -> None:
    objects = render()
    role = one([o for o in objects if is_hook(o)], "ClusterRole")
    assert role["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            "resourceNames": [RELEASE],
            "verbs": ["get", "patch"],
        }
    ]
    binding = one([o for o in objects if is_hook(o)], "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": f"{RELEASE}-probe", "namespace": NAMESPACE}
    ]


def test_hook_accounts_exist_before_the_hooks_run_and_go_when_they_succeed() -> None:
    objects = [o for o in render() if is_hook(o)]
    weights = {
        o["kind"]: int(o["metadata"]["annotations"].get("helm.sh/hook-weight", "0"))
        for o in objects
    }
    assert weights["ServiceAccount"] < weights["Job"]
    assert weights["ClusterRole"] < weights["Job"]
    for obj in objects:
        policy = obj["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
        assert "before-hook-creation" in policy
        if obj["kind"] != "Pod":
            assert "hook-succeeded" in policy
    # The test pod stays after it ran, so `helm test --logs` and `kubectl logs` can read it.
    assert (
        "hook-succeeded"
        not in one(objects, "Pod")["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
    )


def test_helm_test_runs_the_probe_without_switching_anything() -> None:
    pod = one(render(), "Pod")
    assert hook_events(pod) == {"test"}
    [container] = pod["spec"]["containers"]
    assert container["args"] == [
        "probe",
        "--name",
        RELEASE,
        "--namespace",
        NAMESPACE,
        "--wait",
        "30",
    ]


def test_the_hooks_commands_are_ones_the_probe_command_takes() -> None:
    objects = render({"webhooks": {"nodes": {"enabled": True, "failurePolicy": "Fail"}}})
    pods = [one(objects, "Pod")["spec"], one(objects, "Job")["spec"]["template"]["spec"]]
    for spec in pods:
        [container] = spec["containers"]
        command, *args = container["args"]
        assert command == "probe"
        context = probe.make_context("probe", list(args))
        assert context.params["name"] == RELEASE


def test_without_tests_and_hook_no_probe_objects_render() -> None:
    objects = render({"tests": {"enabled": False}, "install": {"failOpenUntilReady": False}})
    assert [o for o in objects if is_hook(o)] == []
    assert released(objects) == objects


def test_the_notes_say_what_fail_closed_means_and_give_the_emergency_commands() -> None:
    text = " ".join(notes().split())
    assert "validating fails closed (Fail)" in text
    assert "refuses pod and workload" in text
    assert f"kubectl delete validatingwebhookconfiguration {RELEASE}" in text
    assert f"kubectl delete mutatingwebhookconfiguration {RELEASE}" in text
    assert f"the hook Job {RELEASE}-install sets the configured policies" in text
    assert f"helm test {RELEASE} -n {NAMESPACE}" in text


def test_the_notes_say_nothing_of_a_hook_or_fail_closed_that_is_not_there() -> None:
    text = " ".join(notes({"webhooks": {"validating": {"failurePolicy": "Ignore"}}}).split())
    assert "validating fails open (Ignore)" in text
    assert "Fail-closed means" not in text
    assert "hook Job" not in text
    assert "EMERGENCY" in text
