"""The DRA objects in the API-backed cluster view: cached only when a setting needs them,
namespaced claims keyed ``namespace/name``, kept in a compact form, read back as objects."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests import dra
from tests.cluster.conftest import FAST, OpenApi
from tests.fakeapi import FakeApiServer
from tests.waiting import eventually
from webhooks.cluster.api import ApiCluster
from webhooks.cluster.files import StaticCluster
from webhooks.cluster.informer import Timing, load_claim, store_claim

DRA_CACHES = ("deviceclasses", "resourceclaims", "resourceclaimtemplates")


@pytest.fixture
def open_api(open_api: OpenApi) -> OpenApi:
    """The cluster fixture with the DRA resources cached unless a test names others."""

    def make(cached: tuple[str, ...] = DRA_CACHES, timing: Timing = FAST) -> ApiCluster:
        return open_api(timing, cached=cached)

    return make


def test_only_the_resources_a_setting_needs_are_watched(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    assert sorted(open_api(()).informers) == ["namespaces", "runtimeclasses"]
    assert sorted(open_api().informers) == sorted(["namespaces", "runtimeclasses", *DRA_CACHES])
    assert fake.count("list", "resourceclaims") == 1


def test_claims_are_cached_by_namespace_and_name_and_hits_need_no_request(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.put(dra.resource_claim("gpu", namespace="team-a"))
    fake.put(dra.resource_claim("gpu", dra.exactly("x", "fpga.example.com"), namespace="team-b"))
    fake.put(dra.claim_template("one-gpu", namespace="team-a"))
    fake.put(dra.device_class(extended=dra.GPU))
    cluster = open_api()
    gets = fake.count("get", "resourceclaims")
    a = cluster.resource_claim("team-a", "gpu")
    b = cluster.resource_claim("team-b", "gpu")
    assert a is not None and b is not None
    assert a["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == dra.GPU_CLASS
    assert b["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "fpga.example.com"
    template = cluster.resource_claim_template("team-a", "one-gpu")
    assert template is not None and template["kind"] == "ResourceClaimTemplate"
    device_class = cluster.device_class(dra.GPU_CLASS)
    assert device_class is not None
    assert device_class["spec"] == {"extendedResourceName": dra.GPU}
    assert fake.count("get", "resourceclaims") == gets


def test_a_claim_created_after_the_list_arrives_by_watch(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    cluster = open_api()
    fake.put(dra.resource_claim("late", namespace="team-a"))
    eventually(
        lambda: cluster.informers["resourceclaims"].get("team-a/late") is not None, "the event"
    )


def test_a_miss_is_a_live_get_and_not_found_is_none(fake: FakeApiServer, open_api: OpenApi) -> None:
    cluster = open_api(())
    fake.put(dra.claim_template("one-gpu", namespace="team-a"), announce=False)
    found = cluster.resource_claim_template("team-a", "one-gpu")
    assert found is not None and found["metadata"] == {"name": "one-gpu", "namespace": "team-a"}
    assert cluster.resource_claim("team-a", "nope") is None
    assert fake.count("get", "resourceclaimtemplates") == 1


def test_a_resource_the_server_does_not_serve_is_synced_and_empty(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.unserved.update(DRA_CACHES)
    cluster = open_api()
    assert cluster.synced()
    assert cluster.device_class(dra.GPU_CLASS) is None
    assert cluster.resource_claim("team-a", "gpu") is None
    assert fake.count("get", "deviceclasses") == 0


STORED: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("an exact request keeps its class", dra.resource_claim("c"), (dra.GPU_CLASS,)),
    (
        "firstAvailable alternatives keep every class once",
        dra.resource_claim(
            "c",
            dra.first_available("a", ("x", "big.example.com"), ("y", "small.example.com")),
            dra.exactly("b", "big.example.com"),
        ),
        ("big.example.com", "small.example.com"),
    ),
    (
        "the v1beta1 shape is read too",
        {"spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "old.example.com"}]}}},
        ("old.example.com",),
    ),
    ("a claim without requests keeps nothing", {"spec": {}}, ()),
]


@pytest.mark.parametrize(("claim", "classes"), [c[1:] for c in STORED], ids=[c[0] for c in STORED])
def test_the_cache_keeps_a_claims_device_classes_only(
    claim: dict[str, Any], classes: tuple[str, ...]
) -> None:
    kept = store_claim(claim)
    assert kept == classes
    read = load_claim("team-a/c", kept)
    assert read["metadata"] == {"name": "c", "namespace": "team-a"}
    names = [r["exactly"]["deviceClassName"] for r in read["spec"]["devices"]["requests"]]
    assert tuple(names) == classes


def test_files_find_a_claim_template_without_a_namespace_in_any_namespace() -> None:
    files = StaticCluster(
        [
            dra.claim_template("t"),
            dra.claim_template("t", dra.exactly("x", "own.example.com"), namespace="team-b"),
            dra.device_class(),
            {"apiVersion": "example.com/v1", "kind": "DeviceClass", "metadata": {"name": "crd"}},
        ]
    )
    anywhere = files.resource_claim_template("team-a", "t")
    own = files.resource_claim_template("team-b", "t")
    assert anywhere is not None and own is not None
    assert own["metadata"]["namespace"] == "team-b"
    assert "namespace" not in anywhere["metadata"]
    assert files.device_class(dra.GPU_CLASS) is not None
    assert files.device_class("crd") is None


def test_a_resource_the_server_does_not_serve_is_listed_once_then_left_alone(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.unserved.update(DRA_CACHES)
    cluster = open_api(timing=dataclasses.replace(FAST, backoff_cap=60.0))
    assert cluster.synced()
    for plural in DRA_CACHES:
        informer = cluster.informers[plural]
        assert (informer.served, informer.last_error) == (False, "")
        # No watch of what is not there, and the next list waits for the longest backoff.
        assert (fake.count("list", plural), fake.count("watch", plural)) == (1, 0)
