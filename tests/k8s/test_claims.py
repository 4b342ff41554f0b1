"""DRA claims and classes as placement reads them (``k8s.io/api/resource/v1``, KEP-5004)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import dra
from webhooks.k8s.claims import (
    ALL,
    PodClaim,
    claim_spec,
    class_names,
    constraints_of,
    implicit_class,
    pod_claims,
    requests_of,
    serving_class,
    unresolved,
    unresolved_subject,
)

CLASSES = [
    dra.device_class("old.example.com", extended=dra.GPU, created="2026-01-01T00:00:00Z"),
    dra.device_class("new.example.com", extended=dra.GPU, created="2026-06-01T00:00:00Z"),
    dra.device_class("b.example.com", extended="example.com/tie", created="2026-06-01T00:00:00Z"),
    dra.device_class("a.example.com", extended="example.com/tie", created="2026-06-01T00:00:00Z"),
    dra.device_class("unstamped.example.com", extended="example.com/stamp"),
    dra.device_class(
        "stamped.example.com", extended="example.com/stamp", created="2020-01-01T00:00:00Z"
    ),
    dra.device_class("plain.example.com"),
]

SERVING: list[tuple[str, str, str | None]] = [
    ("the newest class wins a shared extendedResourceName", dra.GPU, "new.example.com"),
    ("equal creation times go to the lowest name", "example.com/tie", "a.example.com"),
    ("a class without a creation time is the oldest", "example.com/stamp", "stamped.example.com"),
    (
        "the implicit name picks its class by name",
        "deviceclass.resource.kubernetes.io/plain.example.com",
        "plain.example.com",
    ),
    (
        "an implicit name of no class is served by none",
        "deviceclass.resource.kubernetes.io/x",
        None,
    ),
    ("a name no class declares is served by none", "example.com/other", None),
]


@pytest.mark.parametrize(
    ("resource", "winner"), [c[1:] for c in SERVING], ids=[c[0] for c in SERVING]
)
def test_which_class_serves_an_extended_resource(resource: str, winner: str | None) -> None:
    found = serving_class(CLASSES, resource)
    assert (found["metadata"]["name"] if found is not None else None) == winner


def test_the_order_classes_are_given_in_does_not_change_the_winner() -> None:
    assert serving_class(reversed(CLASSES), dra.GPU)["metadata"]["name"] == "new.example.com"  # type: ignore[index]


def test_pod_claims_name_a_claim_or_a_template_and_skip_the_rest() -> None:
    spec: dict[str, Any] = {
        "resourceClaims": [
            {"name": "a", "resourceClaimName": "shared"},
            {"name": "b", "resourceClaimTemplateName": "per-pod"},
            {"name": "c"},
            "junk",
        ]
    }
    assert pod_claims(spec) == [PodClaim("a", claim="shared"), PodClaim("b", template="per-pod")]


def test_requests_read_exactly_first_available_and_the_v1beta1_shape() -> None:
    spec = dra.claim_spec(
        dra.exactly("one", count=2, selectors=['device.driver == "x"']),
        dra.first_available("alt", ("big", "big.example.com"), ("small", "small.example.com")),
        dra.exactly("every", mode=ALL),
    )
    spec["devices"]["requests"].append({"name": "flat", "deviceClassName": "old.example.com"})
    one, alt, every, flat = requests_of(spec)
    assert one.alternatives[0].count == 2
    assert one.alternatives[0].selectors == ('device.driver == "x"',)
    assert [a.name for a in alt.alternatives] == ["alt/big", "alt/small"]
    assert every.alternatives[0].mode == ALL
    assert flat.alternatives[0].device_class == "old.example.com"
    assert flat.alternatives[0].count == 1
    assert class_names(spec) == [
        dra.GPU_CLASS,
        "big.example.com",
        "small.example.com",
        "old.example.com",
    ]


def test_a_template_holds_its_claim_spec_one_level_down() -> None:
    template = dra.claim_template("t", dra.exactly("x", "t.example.com"))
    assert class_names(claim_spec(template)) == ["t.example.com"]
    assert class_names(claim_spec(dra.resource_claim("c"))) == [dra.GPU_CLASS]


def test_match_attribute_constraints_are_read() -> None:
    spec = dra.claim_spec(
        dra.exactly("a"),
        constraints=[{"requests": ["a"], "matchAttribute": "gpu.example.com/numa"}],
    )
    assert [(c.requests, c.attribute) for c in constraints_of(spec)] == [
        (("a",), "gpu.example.com/numa")
    ]


def test_implicit_names_name_their_class() -> None:
    assert implicit_class("deviceclass.resource.kubernetes.io/gpu.example.com") == "gpu.example.com"
    assert implicit_class("example.com/gpu") == ""


@pytest.mark.parametrize(
    ("message", "subject"),
    [
        pytest.param(
            unresolved("DeviceClass gpu.example.com") + ": no toleration is added",
            "DeviceClass gpu.example.com",
            id="a class that is not found",
        ),
        pytest.param(
            unresolved("ResourceClaimTemplate t in namespace ns", "cannot be looked up (x: y)"),
            "ResourceClaimTemplate t in namespace ns",
            id="a template whose lookup failed, the reason holding a colon",
        ),
        pytest.param(
            unresolved("ResourceClaim c in namespace "),
            "ResourceClaim c in namespace ",
            id="a claim of a pod with no namespace",
        ),
        pytest.param(
            "added toleration example.com/gpu:NoSchedule (Exists)", None, id="a warning about a pod"
        ),
        pytest.param(
            "RuntimeClass gvisor not found: refused",
            None,
            id="an object admission does not resolve",
        ),
        pytest.param(
            "DeviceClass gpu.example.com not foundling",
            None,
            id="a spelling that only starts alike",
        ),
    ],
)
def test_a_message_about_an_unresolved_object_names_it(message: str, subject: str | None) -> None:
    assert unresolved_subject(message) == subject
