"""The table of removed API versions: what a release refuses, and what to write instead."""

from __future__ import annotations

import re

import pytest

from webhooks.k8s.removedapis import REMOVALS, Release, removal, removed_message, replacement

MESSAGES = [
    pytest.param(
        "extensions/v1beta1",
        "Deployment",
        (1, 37),
        "extensions/v1beta1 Deployment was removed in Kubernetes 1.16; use apps/v1",
        id="an extensions/v1beta1 Deployment names 1.16 and apps/v1",
    ),
    pytest.param(
        "networking.k8s.io/v1beta1",
        "Ingress",
        (1, 30),
        "networking.k8s.io/v1beta1 Ingress was removed in Kubernetes 1.22;"
        " use networking.k8s.io/v1",
        id="a v1beta1 Ingress names 1.22 and networking.k8s.io/v1",
    ),
    pytest.param(
        "batch/v1beta1",
        "CronJob",
        (1, 25),
        "batch/v1beta1 CronJob was removed in Kubernetes 1.25; use batch/v1",
        id="a batch/v1beta1 CronJob is refused from the very release that removed it",
    ),
    pytest.param(
        "extensions/v1beta1",
        "PodSecurityPolicy",
        (1, 24),
        "extensions/v1beta1 PodSecurityPolicy was removed in Kubernetes 1.16; use policy/v1beta1",
        id="a PodSecurityPolicy moved to policy/v1beta1 while that was served",
    ),
    pytest.param(
        "extensions/v1beta1",
        "PodSecurityPolicy",
        (1, 25),
        "extensions/v1beta1 PodSecurityPolicy was removed in Kubernetes 1.16; no API version"
        " of PodSecurityPolicy is served in 1.25",
        id="a replacement removed in turn is not offered",
    ),
    pytest.param(
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "FlowSchema",
        (1, 27),
        "flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema was removed in Kubernetes 1.26; use"
        " flowcontrol.apiserver.k8s.io/v1beta3",
        id="a FlowSchema before 1.29 is sent to v1beta3, the newest served then",
    ),
    pytest.param(
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "FlowSchema",
        (1, 29),
        "flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema was removed in Kubernetes 1.26; use"
        " flowcontrol.apiserver.k8s.io/v1",
        id="a FlowSchema from 1.29 is sent to v1",
    ),
]


@pytest.mark.parametrize(("api_version", "kind", "release", "message"), MESSAGES)
def test_a_removed_version_names_its_release_and_what_to_write(
    api_version: str, kind: str, release: Release, message: str
) -> None:
    found = removal(api_version, kind, release)
    assert found is not None
    assert removed_message(found, release) == message


NOT_REMOVED = [
    pytest.param("apps/v1", "Deployment", (1, 37), id="a served version"),
    pytest.param("autoscaling/v2beta2", "HorizontalPodAutoscaler", (1, 25), id="before removal"),
    pytest.param("apps.example.com/v1beta1", "Deployment", (1, 37), id="a custom group"),
    pytest.param("extensions/v1beta1", "Widget", (1, 37), id="a kind the guide does not list"),
]


@pytest.mark.parametrize(("api_version", "kind", "release"), NOT_REMOVED)
def test_what_is_still_served_or_unlisted_is_not_a_removal(
    api_version: str, kind: str, release: Release
) -> None:
    assert removal(api_version, kind, release) is None


def test_each_version_and_kind_is_listed_once() -> None:
    keys = [(r.api_version, r.kind) for r in REMOVALS]
    assert len(keys) == len(set(keys))


def test_every_removal_left_something_to_migrate_to_when_it_happened() -> None:
    # Removed APIs are served beside their successor for releases first, so a replacement
    # the table offers was served at the removal; PodSecurityPolicy alone had none.
    for found in REMOVALS:
        if found.kind == "PodSecurityPolicy" and found.api_version == "policy/v1beta1":
            assert found.replacements == ()
            continue
        assert any(since <= found.release for _, since in found.replacements), found


def _version(text: str) -> tuple[int, int]:
    major, minor = re.findall(r"\d+", text)[:2]
    return int(major), int(minor)


def test_the_table_agrees_with_the_schemas_of_every_release_the_package_knows() -> None:
    # Facts checked against a second source: at each release the schema package covers,
    # a removed version has no schema, and the replacement offered has one.
    utils = pytest.importorskip("kubernetes_validate.utils")
    from webhooks.dryrun.schema import KubernetesSchema

    for text in sorted(set(utils.all_versions()), key=_version):
        release = _version(text)
        schema = KubernetesSchema(f"{release[0]}.{release[1]}")
        for found in REMOVALS:
            if found.release <= release:
                assert schema._builtin(found.api_version, found.kind) is None, (found, release)
                instead = replacement(found, release)
                if instead is not None:
                    assert schema._builtin(instead, found.kind) is not None, (found, release)
