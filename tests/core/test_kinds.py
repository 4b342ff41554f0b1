"""A request is for a built-in kind only when its group is the built-in's (spec §0).

The API server sends the resource, ``request.kind`` and the object in that kind's version;
a custom resource named like a built-in kind (an ``apps.kruise.io`` DaemonSet) that a too
wide rule sends to the webhook must be allowed untouched, whichever of them says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.reviews import daemonset, pod, review, tol
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.plugin import PHASES
from webhooks.core.review import parse_review, request_dict
from webhooks.plugins import REGISTRY

KRUISE = "apps.kruise.io"


def _as(api_version: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "apiVersion": api_version}

    return change


def _kind_group(group: str) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        for key in ("kind", "requestKind"):
            body["request"][key]["group"] = group

    return change


def _both_groups(group: str) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        for key in ("kind", "requestKind", "resource", "requestResource"):
            body["request"][key]["group"] = group

    return change


def _nothing(body: dict[str, Any]) -> None:
    return None


def _same(obj: dict[str, Any]) -> dict[str, Any]:
    return obj


BAD_TOLERATION = [tol("bad^key", "Exists")]


@pytest.mark.parametrize(
    ("obj", "edit_object", "edit_review", "changed", "allowed"),
    [
        pytest.param(
            daemonset(),
            _same,
            _nothing,
            True,
            True,
            id="an apps DaemonSet gets the DaemonSet defaults",
        ),
        pytest.param(
            daemonset(),
            _as(f"{KRUISE}/v1alpha1"),
            _both_groups(KRUISE),
            False,
            True,
            id="a DaemonSet of another group, sent as that group's resource, is left alone",
        ),
        pytest.param(
            daemonset(),
            _same,
            _kind_group(KRUISE),
            False,
            True,
            id="a review whose request.kind is another group's DaemonSet is left alone",
        ),
        pytest.param(
            daemonset(),
            _as(f"{KRUISE}/v1alpha1"),
            _nothing,
            False,
            True,
            id="an apps daemonsets review carrying another group's DaemonSet is left alone",
        ),
        pytest.param(
            daemonset(),
            _as("extensions/v1beta1"),
            _nothing,
            True,
            True,
            id="an extensions DaemonSet object is the apps one it was converted to",
        ),
        pytest.param(
            pod(tolerations=BAD_TOLERATION),
            _same,
            _nothing,
            True,
            False,
            id="a core Pod with an invalid toleration key is refused",
        ),
        pytest.param(
            pod(tolerations=BAD_TOLERATION),
            _as("sandbox.example.dev/v1"),
            _kind_group("sandbox.example.dev"),
            False,
            True,
            id="a kind Pod of another group is neither validated nor mutated",
        ),
    ],
)
def test_only_the_built_in_of_a_group_is_admitted_as_one(
    obj: dict[str, Any],
    edit_object: Callable[[dict[str, Any]], dict[str, Any]],
    edit_review: Callable[[dict[str, Any]], None],
    changed: bool,
    allowed: bool,
) -> None:
    obj = edit_object(obj)
    body = review(obj)
    edit_review(body)
    admission = Admission(REGISTRY, load_config({}, REGISTRY))
    outcome = admission.decide(parse_review(body), PHASES)
    assert outcome.allowed is allowed
    assert bool(outcome.patch) is changed
    if not changed:
        assert outcome.changed_by == ()


def test_the_kind_group_is_read_from_the_review_and_written_back() -> None:
    body = review(daemonset())
    _kind_group(KRUISE)(body)
    request = parse_review(body)
    assert (request.group, request.kind_group, request.kind) == ("apps", KRUISE, "DaemonSet")
    assert request_dict(request)["request"]["kind"]["group"] == KRUISE
