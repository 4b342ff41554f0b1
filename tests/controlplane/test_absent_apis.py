"""``serve`` with a setting the release may not serve: ready, said once, and no hot loop.

The config turns on ``extended-resource-toleration``'s ``deviceClaims``, which reads a
DeviceClass's ``spec.extendedResourceName`` (KEP-5004, gate DRAExtendedResource: alpha and
off by default on 1.34 and 1.35, on from 1.36). What the server must say is taken from
the release table for the release under test (``KUBERNETES_VERSION``), so the same test
proves the warning on 1.34/1.35 and its absence on 1.36/1.37, never skipping either.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.harness import (
    ApiServerOptions,
    ControlPlane,
    ControlPlaneOptions,
    node_manifest,
    webhookserver,
)
from controlplane.harness.metrics import apiserver_metrics, metric_sum
from controlplane.harness.modes import apiserver_options
from controlplane.release import RELEASE
from tests.command import run_cli
from tests.controlplane.conftest import FIGURES, started_plane
from tests.dra import device, device_taint_rule, resource_slice
from tests.waiting import eventually
from webhooks.core.availability import Unavailable, unavailable
from webhooks.core.config import load_config
from webhooks.k8s.releases import DRA_DEVICE_TAINTS, DRA_EXTENDED_RESOURCE
from webhooks.plugins import REGISTRY

SETTINGS = {"extended-resource-toleration": {"deviceClaims": True}}
CONFIG = "plugins:\n  extended-resource-toleration:\n    deviceClaims: true\n"
#: What the release under test cannot serve of the config, from the table alone.
EXPECTED: tuple[Unavailable, ...] = unavailable(
    load_config({"plugins": SETTINGS}, REGISTRY), REGISTRY, RELEASE
)
#: Seconds over which the watched DRA resources' lists are counted once the server is ready.
QUIET = 6.0
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """MODE=webhooks with ``deviceClaims`` on; nothing else runs."""
    config = tmp_path_factory.mktemp("absent") / "config.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    api = dataclasses.replace(apiserver_options("webhooks"), webhook_config=config)
    options = ControlPlaneOptions(apiservers=(api,), scheduler=False, controller_manager=None)
    with started_plane(options, f"webhooks mode, deviceClaims on {RELEASE.name}") as started:
        yield started


def _plain(webhook: webhookserver.WebhookServer, path: str) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{webhook.metrics_port}{path}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _lists(plane: ControlPlane) -> float:
    """LIST requests the API server counted for the DRA resources ``serve`` watches."""
    text = apiserver_metrics(plane.api)
    return sum(
        metric_sum(text, "apiserver_request_total", verb="LIST", resource=plural)
        for plural in ("deviceclasses", "resourceclaims", "resourceclaimtemplates")
    )


def test_serve_is_ready_and_says_once_which_setting_the_release_lacks(
    plane: ControlPlane,
) -> None:
    webhook = plane.webhooks[plane.api.name]
    status, body = _plain(webhook, "/readyz")
    assert status == 200, body
    head = f"{len(EXPECTED)} setting" if EXPECTED else ""
    if EXPECTED:
        assert body.startswith(f"ok\n{head} cannot work on Kubernetes {RELEASE.name}; ready")
        assert [line[2:] for line in body.splitlines()[2:]] == [u.line for u in EXPECTED]
    else:
        assert body == "ok\n"

    log = webhook.component.log.read_text(errors="replace")
    assert f"cluster: Kubernetes {RELEASE.name} ({RELEASE.proven})" in log
    for item in EXPECTED:
        assert log.count(item.line) == 1, log  # once, by the master, not once per worker

    metrics = _plain(webhook, "/metrics")[1]
    shown = metric_sum(metrics, "placement_webhooks_unavailable_settings")
    assert shown == len(EXPECTED)
    for item in EXPECTED:
        assert (
            metric_sum(
                metrics,
                "placement_webhooks_unavailable_settings",
                setting=item.setting,
                missing=item.missing,
            )
            == 1
        )


def test_the_watched_dra_resources_are_not_listed_again_and_again(plane: ControlPlane) -> None:
    webhook = plane.webhooks[plane.api.name]
    eventually(lambda: webhookserver.ready(webhook), "serve ready")
    before = _lists(plane)
    time.sleep(QUIET)
    grown = _lists(plane) - before
    FIGURES.append(
        f"absent APIs on {RELEASE.name}: {grown:.0f} DRA lists in {QUIET:.0f} s after ready "
        f"({before:.0f} before)"
    )
    # Each worker lists each resource once and then watches; a watch ends after 60-120 s.
    assert grown <= 2, f"{grown} LIST requests in {QUIET} s"
    assert before >= 3  # the caches did list them: the count is of the right series


def test_explain_reads_device_taint_rules_where_served_and_says_so_where_not(
    plane: ControlPlane,
) -> None:
    answer = plane.api.call("POST", "/api/v1/nodes", node_manifest("absent-apis-1"))
    assert answer.status in (201, 409), answer.body
    proc = run_cli("explain", f"--kubeconfig={plane.api.kubeconfig}")
    assert proc.returncode == 0, proc.stderr
    notes = proc.stderr.splitlines()
    if RELEASE.device_taint_rules_by_default:
        assert notes == []
    else:
        api = RELEASE.device_taint_rule_api
        assert notes == [
            f"explain: this cluster does not serve DeviceTaintRules ({api} on Kubernetes "
            f"{RELEASE.name} needs gate {RELEASE.device_taint_rule_gate}, "
            f"{RELEASE.gate_state(RELEASE.device_taint_rule_gate)}, and "
            f"--runtime-config={api}=true): taints from such rules are not considered"
        ]


def test_the_api_server_keeps_extended_resource_name_only_where_the_table_says(
    plane: ControlPlane,
) -> None:
    """What the line claims, asked of the API server itself: a DeviceClass written with
    ``extendedResourceName`` keeps it only where the gate is on by default."""
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "absent-apis.example.com"},
        "spec": {"extendedResourceName": "example.com/absent-apis"},
    }
    answer = plane.api.call("POST", "/apis/resource.k8s.io/v1/deviceclasses", body)
    assert answer.status == 201, answer.body
    kept = "extendedResourceName" in (answer.body.get("spec") or {})
    assert kept is RELEASE.gate_on(DRA_EXTENDED_RESOURCE)
    assert kept is not any(u.missing == DRA_EXTENDED_RESOURCE for u in EXPECTED)


def test_a_reload_says_it_again_once(plane: ControlPlane) -> None:
    webhook = plane.webhooks[plane.api.name]
    os.kill(webhook.component.proc.pid, signal.SIGHUP)
    said = f"cluster: Kubernetes {RELEASE.name} ({RELEASE.proven})"
    last = EXPECTED[-1].line if EXPECTED else said  # the master writes the lines in order

    def text() -> str:
        return webhook.component.log.read_text(errors="replace")

    eventually(lambda: text().count(last) >= 2, "the reload's lines")
    eventually(lambda: webhookserver.ready(webhook), "serve ready after the reload")
    log = text()
    assert log.count(said) == 2
    for item in EXPECTED:
        assert log.count(item.line) == 2, log


def _rule_flags() -> tuple[str, ...]:
    """What the API server needs to serve DeviceTaintRules (and device taints) on the
    release under test, from the table: nothing where they are GA and on."""
    gates = sorted(
        {DRA_DEVICE_TAINTS, RELEASE.device_taint_rule_gate}
        & {g for g in RELEASE.gates if not RELEASE.gate_on(g)}
    )
    flags = [f"--feature-gates={','.join(f'{g}=true' for g in gates)}"] if gates else []
    if not RELEASE.device_taint_rules_by_default:
        flags.append(f"--runtime-config={RELEASE.device_taint_rule_api}=true")
    return tuple(flags)


@pytest.fixture(scope="module")
def gated() -> Iterator[ControlPlane]:
    """An API server that serves DeviceTaintRules at the release's version (gates on)."""
    api = ApiServerOptions(name="rules", extra_args=_rule_flags())
    options = ControlPlaneOptions(apiservers=(api,), scheduler=False, controller_manager=None)
    with started_plane(options, f"DeviceTaintRules served on {RELEASE.name}") as started:
        yield started


def test_explain_reads_device_taint_rules_at_the_version_the_release_serves(
    gated: ControlPlane, tmp_path: Path
) -> None:
    rule = device_taint_rule("gpu-0-ecc", "gpu.example.com/ecc", "NoSchedule", device="gpu-0")
    rule["apiVersion"] = RELEASE.device_taint_rule_api
    created = [
        ("/api/v1/nodes", node_manifest("gpu-1")),
        (
            "/apis/resource.k8s.io/v1/resourceslices",
            resource_slice("gpu-1-gpus", device("gpu-0"), node="gpu-1"),
        ),
        (f"/apis/{RELEASE.device_taint_rule_api}/devicetaintrules", rule),
    ]
    for path, body in created:
        answer = gated.api.call("POST", path, body)
        assert answer.status == 201, (path, answer.body)
    job = tmp_path / "job.yaml"
    job.write_text((REPO / "tests" / "fixtures" / "dra" / "training-job.yaml").read_text())
    proc = run_cli("explain", f"--kubeconfig={gated.api.kubeconfig}", "-o", "json", str(job))
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr.splitlines() == []  # served: nothing to say
    pod = json.loads(proc.stdout)["pods"][0]
    node = next(n for n in pod["nodes"] if n["node"] == "gpu-1")
    assert any("gpu.example.com/ecc" in u["message"] for u in node["unmet"]), node
