"""Fixtures of the real-control-plane suite (``make e2e``; ``make test`` never loads this).

One control plane per session (etcd, an API server with upstream's default admission, the
scheduler and the controller-manager with short node monitoring): starting one costs
seconds, and tests keep apart by namespace and node names. Suites that need other API
servers start their own with :func:`controlplane.harness.running`.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    LeaseRenewer,
    NotBuilt,
    create_namespace,
    running,
)
from controlplane.release import KUBERNETES_VERSION

_names = itertools.count()
#: (what, seconds) of every control plane the session's fixtures started, for the summary.
STARTS: list[tuple[str, float]] = []
#: Lines a test wants in the summary: corpus sizes, agreement counts, measured times.
FIGURES: list[str] = []


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # pytest then runs every finalizer: the components are stopped


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (a CI timeout, ``kill``) tears down like Ctrl-C instead of orphaning servers."""
    signal.signal(signal.SIGTERM, _interrupt)


def pytest_report_header() -> str:
    """Which release this run proves: the matrix runs the same suite on several."""
    return f"Kubernetes {KUBERNETES_VERSION} (KUBERNETES_VERSION picks another supported release)"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print each start-up time (the 15 s target is watched on every run, not once) and the
    figures tests measured."""
    for what, seconds in STARTS:
        terminalreporter.write_line(f"control plane start-up ({what}): {seconds:.1f} s")
    for line in FIGURES:
        terminalreporter.write_line(line)


@contextlib.contextmanager
def started_plane(options: ControlPlaneOptions, what: str) -> Iterator[ControlPlane]:
    """A control plane of ``options``, stopped when the block ends, its start-up time kept
    as ``what`` for the summary.

    Why one helper: every suite that starts its own control plane wants that time watched,
    and a control plane that is not built is a failure that says how to build it, not an
    error with a traceback.
    """
    try:
        with running(options) as plane:
            STARTS.append((what, plane.started_in or 0))
            yield plane
    except NotBuilt as exc:
        pytest.fail(str(exc), pytrace=False)


def check_alive(request: pytest.FixtureRequest, fixture: str) -> None:
    """If the test used the control plane of ``fixture``: fail it if a component died.

    Why after each test: a component that died mid-test explains the failures that follow,
    and is told at the test that saw it happen.
    """
    if fixture in request.fixturenames:
        request.getfixturevalue(fixture).check()


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """The session's control plane, stopped (and its temp dir removed) at the end."""
    with started_plane(
        ControlPlaneOptions(), "etcd, API server, scheduler, controller-manager"
    ) as plane:
        yield plane


@pytest.fixture(autouse=True)
def _components_alive(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used the shared control plane: did a component die meanwhile?"""
    yield
    check_alive(request, "control_plane")


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[Any]:
    """A ``kubernetes`` ApiClient for the shared API server, as admin."""
    with control_plane.api.client() as client:
        yield client


@pytest.fixture
def namespace(api_client: Any) -> str:
    """A fresh namespace (with its ``default`` ServiceAccount) for one test."""
    name = f"t{next(_names)}"
    create_namespace(api_client, name)
    return name


@pytest.fixture(scope="session")
def lease_renewer(api_client: Any) -> Iterator[LeaseRenewer]:
    """The heartbeat of every written Node of the session."""
    renewer = LeaseRenewer(api_client, interval=1.0)
    yield renewer
    renewer.close()
