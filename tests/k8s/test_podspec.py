"""The one table of built-in template kinds: a kind is its (API group, kind) pair."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.k8s.podspec import (
    POD_SPEC_PATHS,
    TEMPLATE_KINDS,
    TEMPLATE_RESOURCES,
    foreign,
    group_kind,
    kind_label,
    pod_spec_path,
)


@pytest.mark.parametrize(
    ("obj", "key", "path", "label"),
    [
        pytest.param(
            {"apiVersion": "v1", "kind": "Pod"},
            ("", "Pod"),
            ("spec",),
            "Pod",
            id="a core v1 Pod is the built-in Pod, its own spec the pod spec",
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "DaemonSet"},
            ("apps", "DaemonSet"),
            ("spec", "template", "spec"),
            "DaemonSet",
            id="an apps/v1 DaemonSet is the built-in",
        ),
        pytest.param(
            {"apiVersion": "batch/v1", "kind": "CronJob"},
            ("batch", "CronJob"),
            ("spec", "jobTemplate", "spec", "template", "spec"),
            "CronJob",
            id="a CronJob's pod spec is two templates deep",
        ),
        pytest.param(
            {"apiVersion": "extensions/v1beta1", "kind": "DaemonSet"},
            ("apps", "DaemonSet"),
            ("spec", "template", "spec"),
            "DaemonSet",
            id="an extensions/v1beta1 DaemonSet is read as the apps one it was converted to",
        ),
        pytest.param(
            {"apiVersion": "apps/v1beta2", "kind": "Deployment"},
            ("apps", "Deployment"),
            ("spec", "template", "spec"),
            "Deployment",
            id="an apps/v1beta2 Deployment is of the apps group",
        ),
        pytest.param(
            {"apiVersion": "extensions/v1beta1", "kind": "Ingress"},
            ("extensions", "Ingress"),
            None,
            "Ingress",
            id="only the kinds extensions carried for apps are read as apps",
        ),
        pytest.param(
            {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet"},
            ("apps.kruise.io", "DaemonSet"),
            None,
            "DaemonSet.apps.kruise.io",
            id="a DaemonSet of another group has no built-in pod spec and is named with its group",
        ),
        pytest.param(
            {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"},
            ("batch.volcano.sh", "Job"),
            None,
            "Job.batch.volcano.sh",
            id="a Job of another group is not the batch Job",
        ),
        pytest.param(
            {"apiVersion": "sandbox.example.dev/v1", "kind": "Pod"},
            ("sandbox.example.dev", "Pod"),
            None,
            "Pod.sandbox.example.dev",
            id="a kind Pod of another group is not the core Pod",
        ),
        pytest.param(
            {"kind": "Deployment"},
            ("apps", "Deployment"),
            ("spec", "template", "spec"),
            "Deployment",
            id="a fragment with no apiVersion is taken for the built-in of its name",
        ),
        pytest.param(
            {"apiVersion": "cert-manager.io/v1", "kind": "Certificate"},
            ("cert-manager.io", "Certificate"),
            None,
            "Certificate",
            id="a kind that names no built-in keeps its bare name in reports",
        ),
    ],
)
def test_group_kind(
    obj: dict[str, Any], key: tuple[str, str], path: tuple[str, ...] | None, label: str
) -> None:
    assert group_kind(obj) == key
    assert pod_spec_path(key) == path
    assert kind_label(key) == label


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"apiVersion": "v1"}, id="no kind"),
        pytest.param({"apiVersion": "v1", "kind": ""}, id="an empty kind"),
        pytest.param({"apiVersion": "v1", "kind": 7}, id="a kind that is no string"),
    ],
)
def test_an_object_without_a_kind_has_no_group_kind(obj: dict[str, Any]) -> None:
    assert group_kind(obj) is None


def test_every_template_kind_is_found_again_from_its_resource() -> None:
    found = {
        TEMPLATE_RESOURCES[(group, kind.resource)] for (group, _), kind in TEMPLATE_KINDS.items()
    }
    assert found == set(TEMPLATE_KINDS)
    assert set(POD_SPEC_PATHS) == set(TEMPLATE_KINDS)
    assert not any(foreign(key) for key in TEMPLATE_KINDS)
