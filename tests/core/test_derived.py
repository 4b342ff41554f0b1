"""The derived cache: once per object version, failures kept, bounded, and through a chain."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.reviews import namespace, pod, request, tol
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.core.derived import Derived
from webhooks.plugins import REGISTRY

NODE_SELECTOR = "scheduler.alpha.kubernetes.io/node-selector"
DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"


def versioned(name: str, rv: str, uid: str = "uid-1", **annotations: str) -> dict[str, Any]:
    """A Namespace as the API server serves it: uid and resourceVersion set."""
    obj = namespace(name, annotations=annotations)
    obj["metadata"].update(uid=uid, resourceVersion=rv)
    return obj


class Counting:
    """A derive function that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, obj: Any) -> Any:
        self.calls += 1
        return ("derived", self.calls)


KEYS: list[tuple[str, bool, Any, Any, int]] = [
    (
        "versioned: the same uid and resourceVersion in another dict is the same version",
        True,
        versioned("a", "5"),
        versioned("a", "5"),
        1,
    ),
    (
        "versioned: a new resourceVersion is derived afresh and replaces the old one",
        True,
        versioned("a", "5"),
        versioned("a", "6"),
        4,
    ),
    (
        "versioned: another uid (the Namespace deleted and made again) is another object",
        True,
        versioned("a", "5", uid="uid-1"),
        versioned("a", "5", uid="uid-2"),
        2,
    ),
    (
        "versioned: an object without a resourceVersion is keyed by identity",
        True,
        namespace("a"),
        namespace("a"),
        2,
    ),
    (
        "offline: equal metadata in two objects is not trusted, identity decides",
        False,
        versioned("a", "5"),
        versioned("a", "5"),
        2,
    ),
]


@pytest.mark.parametrize(
    ("versioned_keys", "first", "second", "calls"), [k[1:] for k in KEYS], ids=[k[0] for k in KEYS]
)
def test_keys(versioned_keys: bool, first: Any, second: Any, calls: int) -> None:
    cache = Derived(versioned=versioned_keys)
    derive = Counting()
    for obj in (first, second, first, second):
        cache.of("Namespace", obj, "what", derive)
    assert derive.calls == calls


def test_the_same_object_is_derived_once_per_value_name() -> None:
    cache = Derived()
    obj = namespace("a")
    one, two = Counting(), Counting()
    for _ in range(3):
        cache.of("Namespace", obj, "one", one)
        cache.of("Namespace", obj, "two", two)
    assert (one.calls, two.calls, len(cache)) == (1, 1, 1)


def test_the_bound_drops_the_least_recently_used_object() -> None:
    cache = Derived(size=2)
    derive = Counting()
    a, b, c = namespace("a"), namespace("b"), namespace("c")
    cache.of("Namespace", a, "v", derive)
    cache.of("Namespace", b, "v", derive)
    cache.of("Namespace", a, "v", derive)  # a is now the most recent
    cache.of("Namespace", c, "v", derive)  # so b goes
    assert len(cache) == 2
    cache.of("Namespace", a, "v", derive)
    assert derive.calls == 3
    cache.of("Namespace", b, "v", derive)
    assert derive.calls == 4


def test_many_objects_stay_within_the_bound() -> None:
    cache = Derived(versioned=True, size=100)
    for i in range(1000):
        cache.of("Namespace", versioned(f"n{i}", "1", uid=f"uid-{i}"), "v", Counting())
    assert len(cache) == 100


# -------------------------------------------------------------------- through one chain

FULL = {
    "plugins": {
        "pod-node-selector": {"enabled": True},
        "pod-toleration-restriction": {"enabled": True},
    }
}


def admit(admission: Admission, obj: dict[str, Any]) -> Any:
    return admission.decide(request(obj, namespace="web"), ("mutate", "validate"))


class Cluster:
    """One Namespace, replaceable, and a count of lookups."""

    versioned = True

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    def namespace(self, name: str) -> dict[str, Any] | None:
        # A fresh dict each time, as a live GET returns: only the version can match.
        return copy.deepcopy(self.obj) if name == "web" else None

    def runtime_class(self, name: str) -> None:
        return None


ERRORS: list[tuple[str, str, str, str]] = [
    (
        "a node selector that does not parse refuses every pod, not only the first",
        NODE_SELECTOR,
        "a=b=c",
        "invalid selector",
    ),
    (
        "default tolerations that do not parse refuse every pod, not only the first",
        DEFAULTS,
        "[{",
        "not valid JSON",
    ),
]


@pytest.mark.parametrize(
    ("annotation", "text", "words"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_a_failure_is_kept_and_given_on_every_review(
    annotation: str, text: str, words: str
) -> None:
    cluster = Cluster(versioned("web", "1", **{annotation: text}))
    admission = Admission(REGISTRY, load_config(FULL, REGISTRY), cluster)
    messages = [admit(admission, pod()).message for _ in range(3)]
    assert messages[0] == messages[1] == messages[2]
    assert "namespace 'web' annotation" in messages[0] and words in messages[0]


def test_a_changed_namespace_is_read_again_and_its_old_version_not_used() -> None:
    cluster = Cluster(versioned("web", "1", **{NODE_SELECTOR: "env=a"}))
    admission = Admission(REGISTRY, load_config(FULL, REGISTRY), cluster)
    first = admit(admission, pod())
    cluster.obj = versioned("web", "2", **{NODE_SELECTOR: "env=b", DEFAULTS: "[]"})
    second = admit(admission, pod(tolerations=[tol("x", "Exists")]))
    assert first.obj["spec"]["nodeSelector"] == {"env": "a"}
    assert second.obj["spec"]["nodeSelector"] == {"env": "b"}


def test_a_new_version_replaces_the_one_before_it() -> None:
    cache = Derived(versioned=True)
    for rv in range(100):
        cache.of("Namespace", versioned("a", str(rv)), "v", Counting())
        cache.of("Namespace", versioned("b", str(rv), uid="uid-2"), "v", Counting())
    assert len(cache) == 2
