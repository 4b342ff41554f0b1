"""``kubectl placement`` against a real API server, as a kubectl user runs it.

What only a real cluster and the real ``kubectl`` decide: that the console script
``kubectl-placement`` reaches the server through ``--kubeconfig``/``--context`` given before
or after the command; that ``-n`` narrows ``audit`` and picks the pods ``explain`` places;
that a ``KUBECONFIG`` list is merged as kubectl merges it (the first file's current context
wins, its context naming a cluster and user the second file defines) and its context's
namespace is ``explain``'s; and that kubectl itself finds the plugin on PATH, lists it,
and hands it its arguments.

The cluster: one Ready Node, a pod in ``team-a`` that fits it, one in ``team-b`` whose
nodeSelector no node matches.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.harness import (
    ControlPlane,
    ControlPlaneOptions,
    create_namespace,
    create_pods,
    heartbeating,
    node_manifest,
)
from controlplane.release import RELEASE
from tests.controlplane.conftest import FIGURES, started_plane

#: The console scripts of the virtualenv running the tests: where ``kubectl-placement`` is.
VENV_BIN = Path(sys.executable).parent
PLUGIN = VENV_BIN / "kubectl-placement"


@dataclass(frozen=True)
class Cluster:
    """The running control plane and the kubeconfigs a user would have for it."""

    plane: ControlPlane
    admin: Path
    admin_context: str
    #: Contexts ``in-a`` and ``in-b`` (current) with namespaces team-a and team-b, naming the
    #: cluster and user that only ``admin`` defines: usable only merged after it.
    contexts: Path

    def kubeconfig_list(self) -> str:
        return os.pathsep.join([str(self.contexts), str(self.admin)])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not PLUGIN.is_file():
        pytest.fail(f"{PLUGIN} is not installed: make .venv/.test-installed", pytrace=False)
    options = ControlPlaneOptions(scheduler=False)
    with (
        started_plane(options, "kubectl plugin") as plane,
        plane.api.client() as api,
        heartbeating(api, [node_manifest("node-a")]),
    ):
        create_namespace(api, "team-a")
        create_namespace(api, "team-b")
        create_pods(api, "team-a", [_pod("a-web")])
        create_pods(api, "team-b", [_pod("b-web", nodeSelector={"pool": "nowhere"})])
        admin = plane.api.kubeconfig
        stored = yaml.safe_load(admin.read_text())
        current = stored["current-context"]
        [entry] = [c for c in stored["contexts"] if c["name"] == current]
        body = entry["context"]
        contexts = tmp_path_factory.mktemp("kubeconfigs") / "contexts"
        contexts.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "in-b",
                    "contexts": [
                        {"name": f"in-{team}", "context": {**body, "namespace": f"team-{team}"}}
                        for team in ("a", "b")
                    ],
                }
            )
        )
        yield Cluster(plane, admin, current, contexts)


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}], **spec},
    }
    return pod


def _run(argv: list[str], env: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "KUBECONFIG"}}
    environ.pop("KUBERNETES_SERVICE_HOST", None)
    for key, value in env.items():
        if value is not None:
            environ[key] = value
    return subprocess.run(
        argv, env=environ, capture_output=True, text=True, timeout=300, check=False
    )


def _args(cluster: Cluster, spec: list[str]) -> list[str]:
    names = {"ADMIN": str(cluster.admin), "CTX": cluster.admin_context}
    return [names.get(a, a) for a in spec]


#: (arguments, KUBECONFIG: "list" for the merged pair or None, what answers).
AUDITS = [
    pytest.param(
        ["--kubeconfig", "ADMIN", "--context", "CTX", "-n", "team-a", "audit", "-o", "json"],
        None,
        ["team-a"],
        id="kubectl's flags before audit connect and narrow it to the namespace",
    ),
    pytest.param(
        ["audit", "-o", "json", "--kubeconfig", "ADMIN", "--context", "CTX", "-n", "team-b"],
        None,
        ["team-b"],
        id="the same flags after audit do the same",
    ),
    pytest.param(
        ["audit", "-o", "json"],
        "list",
        None,
        id="audit through a merged KUBECONFIG list covers the whole cluster",
    ),
]


@pytest.mark.parametrize(("spec", "kubeconfig", "namespaces"), AUDITS)
def test_audit_through_the_plugin(
    cluster: Cluster, spec: list[str], kubeconfig: str | None, namespaces: list[str] | None
) -> None:
    env = {"KUBECONFIG": cluster.kubeconfig_list() if kubeconfig else None}
    done = _run([str(PLUGIN), *_args(cluster, spec)], env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert summary["namespaces"] == namespaces
    if namespaces:
        assert summary["objects"].get("Pod") == 1
    FIGURES.append(
        f"kubectl-placement {' '.join(spec)} on {RELEASE.name}: namespaces "
        f"{summary['namespaces']}, objects {summary['objects']}"
    )


EXPLAINS = [
    pytest.param(
        ["--kubeconfig", "ADMIN", "--context", "CTX", "-n", "team-a", "explain", "-o", "json"],
        None,
        ("team-a/a-web", ["node-a"], 0),
        id="explain reads the nodes and the pods of -n from the cluster the flags name",
    ),
    pytest.param(
        ["explain", "-o", "json"],
        "list",
        ("team-b/b-web", [], 1),
        id="explain without flags uses the first file's current context and its namespace",
    ),
    pytest.param(
        ["--context", "in-a", "explain", "-o", "json"],
        "list",
        ("team-a/a-web", ["node-a"], 0),
        id="--context picks another context of the merged list, and its namespace",
    ),
]


@pytest.mark.parametrize(("spec", "kubeconfig", "expected"), EXPLAINS)
def test_explain_through_the_plugin(
    cluster: Cluster,
    spec: list[str],
    kubeconfig: str | None,
    expected: tuple[str, list[str], int],
) -> None:
    env = {"KUBECONFIG": cluster.kubeconfig_list() if kubeconfig else None}
    done = _run([str(PLUGIN), *_args(cluster, spec)], env)
    pod, fits, code = expected
    assert done.returncode == code, done.stderr
    report = json.loads(done.stdout)
    assert [n["name"] for n in report["nodes"]] == ["node-a"]
    [answer] = report["pods"]
    assert answer["pod"].endswith(pod)
    assert answer["fits"] == fits


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_finds_the_plugin_on_path_and_passes_it_the_flags(cluster: Cluster) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    path = os.pathsep.join([str(VENV_BIN), "/usr/local/bin", "/usr/bin", "/bin"])
    env: dict[str, str | None] = {"PATH": path}
    listed = _run([kubectl, "plugin", "list"], env)
    assert str(PLUGIN) in listed.stdout.splitlines(), listed.stdout + listed.stderr
    helped = _run([kubectl, "placement", "--help"], env)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Usage: kubectl placement [OPTIONS] COMMAND [ARGS]...\n")
    flags = ["--kubeconfig", str(cluster.admin), "-n", "team-a"]
    audited = _run([kubectl, "placement", *flags, "audit", "-o", "json"], env)
    assert audited.returncode == 0, audited.stderr
    assert json.loads(audited.stdout)["summary"]["namespaces"] == ["team-a"]
    version = _run([kubectl, "version", "--client"], env).stdout.splitlines()[0]
    FIGURES.append(f"kubectl plugin found and run by {version}")
