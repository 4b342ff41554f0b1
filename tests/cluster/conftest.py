"""The API-backed cluster view against the fake API server: fast timings and one fixture that
opens views and stops them after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakeapi import FakeApiServer
from tests.waiting import eventually
from webhooks.cluster.api import ApiCluster
from webhooks.cluster.informer import Timing
from webhooks.cluster.kubeconfig import client_configuration
from webhooks.core.config import ClusterSettings

#: Small timeouts and backoff so failures and recoveries happen within a test. A lookup that
#: should be answered gets seconds (a loaded machine can take longer than the stall tests'
#: bound to answer a first GET); the stall tests ask for a shorter one explicitly.
FAST = Timing(
    lookup=5.0,
    connect=1.0,
    list_read=5.0,
    watch_seconds=30,
    watch_slack=5.0,
    backoff_base=0.05,
    backoff_cap=0.2,
)

OpenApi = Callable[..., ApiCluster]


@pytest.fixture
def kubeconfig(fake: FakeApiServer, tmp_path: Path) -> Path:
    """A kubeconfig for the fake API server."""
    return fake.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def open_api(kubeconfig: Path) -> Iterator[OpenApi]:
    """Opens an :class:`ApiCluster` on the fake API server (``timing``, the optional
    resources ``cached``), by default once its first lists are in; every one is stopped
    after the test."""
    started: list[ApiCluster] = []

    def make(timing: Timing = FAST, wait: bool = True, cached: tuple[str, ...] = ()) -> ApiCluster:
        settings = ClusterSettings(source="kubeconfig", kubeconfig=str(kubeconfig))
        cluster = ApiCluster(client_configuration(settings, "kubeconfig"), timing, cached).start()
        started.append(cluster)
        if wait:
            eventually(cluster.synced, "the first lists")
        return cluster

    try:
        yield make
    finally:
        for cluster in started:
            cluster.stop()
