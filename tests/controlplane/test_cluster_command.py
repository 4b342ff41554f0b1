"""``make cluster`` as a person runs it: two lines on stdout, a usable kubeconfig, a clean stop."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.controlplane.harness import create_namespace, pod_manifest

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).parent / "configs" / "pod-node-selector.yaml"


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
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.controlplane.harness",
            f"--mode={mode}",
            f"--config={CONFIG}",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
