"""``make cluster`` as a person runs it: two lines on stdout, a usable kubeconfig, a clean stop."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kubernetes import client, config

from controlplane.harness import create_namespace, pod_manifest

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).parent / "configs" / "pod-node-selector.yaml"
REFUSE_ALL = Path(__file__).parent / "configs" / "refuse-every-pod.yaml"


def _start(mode: str, config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "controlplane.harness", f"--mode={mode}", f"--config={config}"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next stdout line, or a failure carrying stderr when none comes in time."""
    line: list[str] = []
    stdout = proc.stdout
    assert stdout is not None
    reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not line or not line[0]:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"no line from `make cluster` within {timeout} s; stderr:\n{err[-3000:]}")
    return line[0].rstrip("\n")


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("in-tree", id="in tree"),
        pytest.param("webhooks", id="webhooks"),
    ],
)
def test_make_cluster_prints_a_kubeconfig_then_ready_and_stops_cleanly_on_sigterm(
    mode: str,
) -> None:
    proc = _start(mode, CONFIG)
    try:
        first = _read_line(proc, 120)
        assert first.startswith("KUBECONFIG=")
        assert _read_line(proc, 60) == "ready"
        kubeconfig = Path(first.removeprefix("KUBECONFIG="))
        with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
            create_namespace(
                api_client,
                "prod",
                annotations={"scheduler.alpha.kubernetes.io/node-selector": "env=prod"},
            )
            core = client.CoreV1Api(api_client)
            core.create_namespaced_pod("prod", pod_manifest("web"))
            assert core.read_namespaced_pod("web", "prod").spec.node_selector == {"env": "prod"}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not kubeconfig.exists()  # the whole run directory is gone


def test_make_cluster_becomes_ready_with_a_policy_that_refuses_every_pod() -> None:
    """Readiness asks whether the API server loaded the configurations, not whether the
    policy admits a probe pod: here the mutating webhook refuses every pod, so the API server
    never calls the validating one, and the cluster must be ready all the same."""
    proc = _start("webhooks", REFUSE_ALL)
    try:
        first = _read_line(proc, 120)
        assert _read_line(proc, 60) == "ready"
        kubeconfig = Path(first.removeprefix("KUBECONFIG="))
        with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
            create_namespace(api_client, "apps")
            core = client.CoreV1Api(api_client)
            with pytest.raises(client.ApiException) as refused:
                core.create_namespaced_pod("apps", pod_manifest("web"))
            assert refused.value.status == 403
            assert "conflict with its cluster whitelist" in str(refused.value.body)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
