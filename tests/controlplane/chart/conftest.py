"""Fixtures of the chart proofs: a control plane per module, with a Service network on loopback.

Each module gets its own control plane (a few seconds to start) because these tests register
fail-closed webhook configurations, stop their servers and fail Nodes: state no other test
should ever meet. The API server allocates ClusterIPs inside 127/8
(:mod:`controlplane.harness.servicenet`), so the chart's own Service-registered
webhooks reach a ``serve`` bound to that ClusterIP, and the controller-manager also runs the
resource quota controller, without which the API server refuses every pod of a
quota-limited priority class ("status unknown for quota").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.harness import (
    ApiServerOptions,
    ControllerManagerOptions,
    ControlPlane,
    ControlPlaneOptions,
    LeaseRenewer,
    NotBuilt,
)
from controlplane.harness.components import DEFAULT_CONTROLLERS
from controlplane.harness.helm import Helm, locate_helm
from controlplane.harness.process import Component
from controlplane.harness.servicenet import loopback_service_range, service_flag
from tests.controlplane.conftest import check_alive, started_plane

#: (what, figure) measured by the proofs, printed at the end of the run.
FIGURES: list[tuple[str, str]] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print what the proofs measured (taint times, window lengths): watched on every run."""
    for what, figure in FIGURES:
        terminalreporter.write_line(f"chart proof: {what}: {figure}")


def chart_plane_options() -> ControlPlaneOptions:
    """The control plane of one module of chart proofs."""
    return ControlPlaneOptions(
        apiservers=(
            ApiServerOptions(name="chart", extra_args=(service_flag(loopback_service_range()),)),
        ),
        controller_manager=ControllerManagerOptions(
            controllers=(*DEFAULT_CONTROLLERS, "resourcequota-controller")
        ),
    )


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """This module's control plane, stopped at the end of the module."""
    with started_plane(chart_plane_options(), "chart proofs") as started:
        yield started


@pytest.fixture(autouse=True)
def _plane_alive(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used this module's plane: did a component die meanwhile?"""
    yield
    check_alive(request, "plane")


@pytest.fixture(scope="module")
def admin(plane: ControlPlane) -> Iterator[Any]:
    """A ``kubernetes`` ApiClient for the module's API server, as admin."""
    with plane.api.client() as client:
        yield client


@pytest.fixture(scope="module")
def renewer(admin: Any) -> Iterator[LeaseRenewer]:
    """The heartbeat of the module's Nodes."""
    beat = LeaseRenewer(admin, interval=1.0)
    yield beat
    beat.close()


@pytest.fixture
def helm(plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Helm]:
    """The real ``helm`` as admin of the module's API server, with a home of its own.

    Every release is uninstalled when the test ends, pass or fail: a release left with a
    fail-closed webhook and no server would refuse the next test's Deployments.
    """
    try:
        binary = locate_helm()
    except NotBuilt as exc:
        pytest.fail(str(exc), pytrace=False)
    tool = Helm(binary, plane.api.kubeconfig, tmp_path_factory.mktemp("helm-home"))
    yield tool
    listed = tool.run("list", "--all-namespaces", "--output", "json", check=False).stdout
    for release in json.loads(listed or "[]"):
        tool.run("uninstall", release["name"], "--namespace", release["namespace"], check=False)


@pytest.fixture
def processes() -> Iterator[list[Component]]:
    """Processes a test starts (``serve``, ``certs manage``), stopped when it ends, pass or fail."""
    started: list[Component] = []
    yield started
    for component in reversed(started):
        component.stop()
