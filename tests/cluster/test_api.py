"""The API-backed cluster view against a fake API server, through the real kubernetes client.

Waits poll for a condition with a generous limit; nothing asserts how fast something
happened. A bounded lookup is shown to end on its timeout path by what it says (``no answer
within``), and the body deadline by a clock the test controls.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import FAST, OpenApi
from tests.fakeapi import FakeApiServer, namespace, runtime_class, status
from tests.waiting import eventually
from webhooks.cluster.api import ApiCluster, open_cluster, read_within
from webhooks.cluster.kubeconfig import ClusterError, client_configuration, resolve_source
from webhooks.core.config import ClusterSettings
from webhooks.core.plugin import LookupFailure

#: The bound the stall tests wait out: short, since nothing will answer.
STALL = replace(FAST, lookup=0.5)


def cached(cluster: ApiCluster, plural: str, name: str) -> dict[str, Any] | None:
    return cluster.informers[plural].get(name)


# -- choosing the source ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "env", "token", "expected"),
    [
        ("auto", {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, True, "in-cluster"),
        ("auto", {}, True, "none"),
        ("auto", {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, False, "none"),
        ("in-cluster", {}, False, "in-cluster"),
        ("none", {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, True, "none"),
    ],
    ids=[
        "auto uses the service account inside a pod",
        "auto asks no cluster outside a pod",
        "auto asks no cluster when the pod mounts no token",
        "in-cluster is taken as configured",
        "none never asks a cluster",
    ],
)
def test_the_source_follows_the_settings_and_environment(
    tmp_path: Path, source: Any, env: dict[str, str], token: bool, expected: str
) -> None:
    token_path = tmp_path / "token"
    if token:
        token_path.write_text("t")
    kwargs: dict[str, Any] = {"kubeconfig": "x"} if source == "kubeconfig" else {}
    settings = ClusterSettings(source=source, **kwargs)
    assert resolve_source(settings, env, str(token_path)) == expected


def test_no_source_starts_nothing() -> None:
    assert open_cluster(ClusterSettings(source="none")) is None


@pytest.mark.parametrize(
    ("settings", "source", "expected"),
    [
        (
            ClusterSettings(source="kubeconfig", kubeconfig="/nonexistent/kubeconfig"),
            "kubeconfig",
            "kubeconfig /nonexistent/kubeconfig:",
        ),
        (ClusterSettings(source="in-cluster"), "in-cluster", "in-cluster config:"),
    ],
    ids=["a missing kubeconfig file is named", "in-cluster config outside a pod is refused"],
)
def test_an_unusable_source_is_a_cluster_error(
    settings: ClusterSettings, source: Any, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClusterError) as info:
        client_configuration(settings, source)
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


def test_an_unknown_context_is_a_cluster_error(kubeconfig: Path) -> None:
    settings = ClusterSettings(source="kubeconfig", kubeconfig=str(kubeconfig), context="prod")
    with pytest.raises(ClusterError, match="prod"):
        client_configuration(settings, "kubeconfig")


# -- the caches --------------------------------------------------------------------------------


def test_the_list_fills_the_cache_and_hits_need_no_request(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.put(runtime_class("gvisor", "runsc", overhead={"podFixed": {"memory": "120Mi"}}))
    fake.put(namespace("team-a", **{"scheduler.alpha.kubernetes.io/node-selector": "pool=a"}))
    cluster = open_api()
    gvisor = cluster.runtime_class("gvisor")
    team = cluster.namespace("team-a")
    assert gvisor is not None
    assert team is not None
    assert gvisor["handler"] == "runsc"
    assert gvisor["overhead"] == {"podFixed": {"memory": "120Mi"}}
    assert (gvisor["kind"], gvisor["apiVersion"]) == ("RuntimeClass", "node.k8s.io/v1")
    assert team["metadata"]["annotations"] == {
        "scheduler.alpha.kubernetes.io/node-selector": "pool=a"
    }
    assert (team["kind"], team["apiVersion"]) == ("Namespace", "v1")
    assert fake.count("get", "runtimeclasses") == fake.count("get", "namespaces") == 0


def test_lists_are_read_page_by_page(fake: FakeApiServer, open_api: OpenApi) -> None:
    for name in ("a", "b", "c", "d", "e"):
        fake.put(runtime_class(name))
    cluster = open_api(replace(FAST, page_size=2))
    assert cluster.informers["runtimeclasses"].names() == ["a", "b", "c", "d", "e"]
    assert fake.count("list", "runtimeclasses") == 3


@pytest.mark.parametrize(
    ("change", "name", "expected_handler"),
    [
        (lambda f: f.put(runtime_class("kata", "kata-qemu")), "kata", "kata-qemu"),
        (lambda f: f.put(runtime_class("gvisor", "runsc-debug")), "gvisor", "runsc-debug"),
        (lambda f: f.delete("runtimeclasses", "gvisor"), "gvisor", None),
    ],
    ids=[
        "an added RuntimeClass appears in the cache",
        "a modified RuntimeClass is replaced in the cache",
        "a deleted RuntimeClass leaves the cache",
    ],
)
def test_watch_events_update_the_cache(
    fake: FakeApiServer,
    open_api: OpenApi,
    change: Callable[[FakeApiServer], Any],
    name: str,
    expected_handler: str | None,
) -> None:
    fake.put(runtime_class("gvisor", "runsc"))
    cluster = open_api()
    change(fake)

    def handler() -> Any:
        obj = cached(cluster, "runtimeclasses", name)
        return obj["handler"] if obj else None

    eventually(lambda: handler() == expected_handler, f"{name} handler {expected_handler}")
    assert fake.count("list", "runtimeclasses") == 1


def test_namespace_events_update_the_cache(fake: FakeApiServer, open_api: OpenApi) -> None:
    cluster = open_api()
    fake.put(namespace("team-b"))
    eventually(lambda: cached(cluster, "namespaces", "team-b"), "team-b in the cache")
    fake.delete("namespaces", "team-b")
    eventually(lambda: cached(cluster, "namespaces", "team-b") is None, "team-b gone")


def test_a_bookmark_moves_the_resource_version_and_nothing_else(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.put(runtime_class("gvisor"))
    cluster = open_api()
    informer = cluster.informers["runtimeclasses"]
    eventually(lambda: informer.watching, "the watch")
    version = fake.bookmark("runtimeclasses")
    eventually(lambda: informer.resource_version == version, "the bookmark's version")
    assert informer.names() == ["gvisor"]


def test_an_expired_watch_relists_and_catches_up(fake: FakeApiServer, open_api: OpenApi) -> None:
    fake.put(runtime_class("old"))
    cluster = open_api(replace(FAST, watch_seconds=1))
    informer = cluster.informers["runtimeclasses"]
    fake.compact("runtimeclasses")
    fake.put(runtime_class("new"), announce=False)  # only a fresh list can show it
    fake.delete("runtimeclasses", "old")
    fake.compact("runtimeclasses")
    eventually(lambda: informer.names() == ["new"], "the relisted cache")
    assert informer.counts["watch_expired"] >= 1
    assert fake.count("list", "runtimeclasses") >= 2


def test_a_watch_ended_by_the_server_resumes_without_a_relist(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    cluster = open_api(replace(FAST, watch_seconds=1))
    eventually(lambda: fake.count("watch", "runtimeclasses") >= 2, "a second watch")
    fake.put(runtime_class("later"))
    eventually(lambda: cached(cluster, "runtimeclasses", "later"), "the event after re-watching")
    assert fake.count("list", "runtimeclasses") == 1
    watches = fake.queries("watch", "runtimeclasses")
    assert int(watches[-1]["resourceVersion"]) >= int(watches[0]["resourceVersion"])


def test_a_silent_watch_is_abandoned_after_its_read_timeout(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.silent_watches = True
    cluster = open_api(replace(FAST, watch_seconds=1, watch_slack=0.3))
    informer = cluster.informers["runtimeclasses"]
    eventually(lambda: fake.count("list", "runtimeclasses") >= 2, "a relist after the silence")
    assert informer.counts["watch_error"] >= 1


def test_an_error_event_relists_after_a_backoff_and_recovers(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.watch_error = status(500, "InternalError", "Internal error occurred: watch chan error")
    cluster = open_api()
    informer = cluster.informers["runtimeclasses"]
    eventually(lambda: fake.count("list", "runtimeclasses") >= 3, "relists after error events")
    assert informer.counts["watch_error"] >= 2
    fake.watch_error = None
    fake.put(runtime_class("after"))
    eventually(lambda: cached(cluster, "runtimeclasses", "after"), "the cache after recovery")


# -- lookups ---------------------------------------------------------------------------------


LOOKUPS = [
    pytest.param(ApiCluster.runtime_class, runtime_class, "runtimeclasses", id="RuntimeClass"),
    pytest.param(ApiCluster.namespace, namespace, "namespaces", id="Namespace"),
]


@pytest.mark.parametrize(("lookup", "make", "plural"), LOOKUPS)
def test_a_miss_asks_the_api_server_and_finds_a_new_object(
    fake: FakeApiServer, open_api: OpenApi, lookup: Any, make: Any, plural: str
) -> None:
    cluster = open_api()
    fake.put(make("fresh"), announce=False)
    found = lookup(cluster, "fresh")
    assert found is not None
    assert found["metadata"]["name"] == "fresh"
    assert fake.count("get", plural) == 1


@pytest.mark.parametrize(("lookup", "make", "plural"), LOOKUPS)
def test_not_found_is_none(
    fake: FakeApiServer, open_api: OpenApi, lookup: Any, make: Any, plural: str
) -> None:
    cluster = open_api()
    assert lookup(cluster, "missing") is None
    assert fake.count("get", plural) == 1


@pytest.mark.parametrize(("lookup", "make", "plural"), LOOKUPS)
def test_a_server_error_is_a_lookup_failure(
    fake: FakeApiServer, open_api: OpenApi, lookup: Any, make: Any, plural: str
) -> None:
    cluster = open_api()
    fake.fail_gets.add("broken")
    with pytest.raises(LookupFailure) as info:
        lookup(cluster, "broken")
    message = str(info.value)
    assert message == (
        f"get {plural}/broken: HTTP 500: Internal error occurred: etcdserver: request timed out"
    )


def test_a_stalled_server_fails_the_lookup_within_the_bound(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    cluster = open_api(STALL)
    fake.stall.set()
    with pytest.raises(LookupFailure, match=r"^get runtimeclasses/slow: no answer within 0\.5s$"):
        cluster.runtime_class("slow")


def test_a_body_that_stalls_after_the_headers_fails_the_lookup_within_the_bound(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    cluster = open_api(STALL)
    fake.put(runtime_class("slow-body"), announce=False)
    fake.stall_bodies = True
    with pytest.raises(
        LookupFailure, match=r"^get runtimeclasses/slow-body: no answer within 0\.5s$"
    ):
        cluster.runtime_class("slow-body")


class _Trickle:
    """A response whose body never ends: one byte per read, on a socket whose timeouts are
    recorded."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []
        self.closed = False
        self.connection = self
        self.sock = self

    def settimeout(self, seconds: float) -> None:
        self.timeouts.append(seconds)

    def read(self, size: int) -> bytes:
        return b"x"

    def close(self) -> None:
        self.closed = True


def test_a_body_that_keeps_trickling_is_cut_off_at_the_lookups_deadline() -> None:
    ticks = iter(range(100))
    response = _Trickle()
    with pytest.raises(TimeoutError, match="body not received in time"):
        read_within(response, deadline=5.0, clock=lambda: float(next(ticks)))
    assert response.closed
    # Each read may wait only for what is left, so a read that stalls ends at the deadline.
    assert response.timeouts == [5.0, 4.0, 3.0, 2.0, 1.0]


def test_a_stopped_server_leaves_hits_answered_and_misses_failing_fast(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.put(runtime_class("gvisor", "runsc"))
    cluster = open_api()
    fake.stop()
    hit = cluster.runtime_class("gvisor")
    assert hit is not None
    assert hit["handler"] == "runsc"
    with pytest.raises(LookupFailure, match=r"^get runtimeclasses/other: cannot connect: "):
        cluster.runtime_class("other")
    eventually(lambda: cluster.informers["runtimeclasses"].last_error, "the informer's error")
    assert cluster.synced()


def test_the_watch_reconnects_and_the_cache_recovers_when_the_server_is_back(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.put(runtime_class("stays"))
    fake.put(runtime_class("goes"))
    cluster = open_api()
    informer = cluster.informers["runtimeclasses"]
    fake.stop()
    eventually(lambda: informer.counts["list_error"] >= 2, "failed relists while down")
    fake.put(runtime_class("arrived"))
    fake.delete("runtimeclasses", "goes")
    fake.start()
    eventually(lambda: informer.names() == ["arrived", "stays"], "the recovered cache")
    eventually(lambda: informer.watching, "a new watch")
    fake.put(runtime_class("after"))
    eventually(lambda: cached(cluster, "runtimeclasses", "after"), "events after reconnecting")
    assert informer.last_error == ""


def test_synced_waits_for_every_first_list_and_then_stays(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    fake.fail_lists.add("namespaces")
    cluster = open_api(wait=False)
    eventually(lambda: cluster.informers["runtimeclasses"].synced, "the RuntimeClass list")
    eventually(lambda: cluster.informers["namespaces"].counts["list_error"], "a failed list")
    assert not cluster.synced()
    assert cluster.unsynced() == ["namespaces"]
    assert cluster.informers["namespaces"].last_error == (
        "list namespaces: HTTP 500: Internal error occurred: list unavailable"
    )
    fake.fail_lists.clear()
    eventually(cluster.synced, "every list")
    fake.stop()
    eventually(lambda: cluster.informers["namespaces"].last_error, "the outage noticed")
    assert cluster.synced()


def test_stop_ends_the_threads_and_the_watches(fake: FakeApiServer, open_api: OpenApi) -> None:
    cluster = open_api()
    eventually(lambda: all(i.watching for i in cluster.informers.values()), "both watches")
    cluster.stop()
    assert not any(i.alive for i in cluster.informers.values())
    assert not any(i.watching for i in cluster.informers.values())


def test_requests_carry_the_kubeconfig_token(fake: FakeApiServer, open_api: OpenApi) -> None:
    cluster = open_api()
    cluster.namespace("missing")
    assert {auth for *_, auth in fake.requests} == {"Bearer fake-token"}


def test_lookups_are_counted_by_result(fake: FakeApiServer, open_api: OpenApi) -> None:
    fake.put(runtime_class("cached"))
    cluster = open_api()
    fake.put(runtime_class("fresh"), announce=False)
    fake.fail_gets.add("broken")
    cluster.runtime_class("cached")
    cluster.runtime_class("fresh")
    cluster.runtime_class("missing")
    with pytest.raises(LookupFailure):
        cluster.runtime_class("broken")
    assert cluster.lookup_counts() == {
        ("runtimeclasses", "hit"): 1,
        ("runtimeclasses", "found"): 1,
        ("runtimeclasses", "not_found"): 1,
        ("runtimeclasses", "error"): 1,
    }


def test_the_kubernetes_client_is_imported_only_for_a_cluster_source() -> None:
    code = (
        "import sys\n"
        "from webhooks.cli import main\n"
        "from webhooks.cluster.api import open_cluster\n"
        "from webhooks.core.config import ClusterSettings\n"
        "import webhooks.server.assemble\n"
        "assert open_cluster(ClusterSettings(source='none')) is None\n"
        "print('kubernetes' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=root,
        env=env,
    )
    assert result.stdout.strip() == "False"


def test_an_empty_name_is_not_found_without_a_request(
    fake: FakeApiServer, open_api: OpenApi
) -> None:
    cluster = open_api()
    assert cluster.runtime_class("") is None
    assert fake.count("get", "runtimeclasses") == 0
