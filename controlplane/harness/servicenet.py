"""A Service network on loopback: the chart's own Service, reachable from the API server.

The chart registers its webhooks by Service (``clientConfig.service``), and kube-apiserver
dials a Service's ClusterIP (``--enable-aggregator-routing`` is off by default), verifying
the certificate for ``<service>.<namespace>.svc``. No kube-proxy or pod network runs here,
so the harness makes the ClusterIPs themselves local: the API server allocates them from a
``127.x.y.0/24`` range (:func:`loopback_service_range`, a flag of upstream's), and a process
bound to a Service's ClusterIP and port plays the pods behind it. Every byte stays on the
loopback interface, and the registration under test is exactly what the chart rendered.

Also here: the files ``serve`` needs from the cluster (the chart's config, a TLS Secret),
``serve`` itself behind a Service, kubeconfigs for a ServiceAccount's token (TokenRequest),
and the API server's ``/metrics`` as text.
"""

from __future__ import annotations

import base64
import random
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.harness import pki
from controlplane.harness.cli import REPO
from controlplane.harness.components import ApiServer, fetch
from controlplane.harness.process import Component, wait_until
from controlplane.harness.webhookserver import serve_args


def loopback_service_range() -> str:
    """A ``--service-cluster-ip-range`` inside 127/8, random per control plane.

    Why random: control planes of parallel runs on one machine must not hand out the same
    ClusterIP, or one run's ``serve`` would answer another run's API server.
    """
    rng = random.SystemRandom()
    return f"127.{rng.randint(100, 250)}.{rng.randint(0, 255)}.0/24"


def service_flag(cidr: str) -> str:
    """The API server flag that allocates ClusterIPs from ``cidr``."""
    return f"--service-cluster-ip-range={cidr}"


def cluster_ip(api_client: Any, namespace: str, name: str) -> tuple[str, int]:
    """The ClusterIP and first port of a Service."""
    from kubernetes import client

    service = client.CoreV1Api(api_client).read_namespaced_service(name, namespace)
    return service.spec.cluster_ip, service.spec.ports[0].port


def secret_to_dir(api_client: Any, namespace: str, name: str, directory: Path) -> Path:
    """Write a TLS Secret's ``ca.crt``, ``tls.crt`` and ``tls.key`` as a cert dir for serve."""
    from kubernetes import client

    secret = client.CoreV1Api(api_client).read_namespaced_secret(name, namespace)
    directory.mkdir(parents=True, exist_ok=True)
    for key in ("ca.crt", "tls.crt", "tls.key"):
        (directory / key).write_bytes(base64.b64decode(secret.data[key]))
    (directory / "tls.key").chmod(0o600)
    return directory


def chart_config(api_client: Any, namespace: str, name: str, directory: Path) -> Path:
    """The chart's ``config.yaml`` (its ConfigMap), as the pods mount it."""
    from kubernetes import client

    config_map = client.CoreV1Api(api_client).read_namespaced_config_map(name, namespace)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "chart-config.yaml"
    path.write_text(config_map.data["config.yaml"])
    return path


@dataclass(slots=True)
class ServedService:
    """``serve`` bound to a Service's ClusterIP and port, and its plain-HTTP metrics port."""

    component: Component
    address: str
    metrics_port: int
    log: Path

    def ready(self) -> bool:
        """``/readyz`` on the metrics port."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.metrics_port}/readyz")
        status, _ = fetch(request, None)
        return status == 200

    def reviews(self) -> list[dict[str, Any]]:
        """The review log lines so far (one JSON object per review, from stderr)."""
        import json

        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{") and '"endpoint"' in line:
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found


def serve_behind_service(
    server: ApiServer,
    api_client: Any,
    namespace: str,
    service: str,
    cert_dir: Path,
    config: Path,
    directory: Path,
    extra: tuple[str, ...] = (),
) -> ServedService:
    """Start ``serve`` with the chart's config on the Service's ClusterIP; wait until ready.

    The cluster source is pointed at the harness's admin kubeconfig (no in-cluster account
    on this machine); everything else is the config the chart rendered. ``extra``: more
    ``serve`` options (what the chart's Deployment passes, ``--native``).
    """
    ip, port = cluster_ip(api_client, namespace, service)
    args, _, metrics = serve_args(
        directory, server, config, bind=f"{ip}:{port}", cert_dir=cert_dir, extra=extra
    )
    log = directory / "serve.log"
    component = Component(f"placement-webhooks[{service}]", args, log, cwd=REPO)
    running = ServedService(component, f"{ip}:{port}", metrics, log)
    wait_until(running.ready, timeout=60, components=[component])
    return running


def token_kubeconfig(
    server: ApiServer, api_client: Any, namespace: str, account: str, path: Path
) -> Path:
    """A kubeconfig that authenticates as ServiceAccount ``namespace/account``.

    The token comes from the TokenRequest API, as the kubelet gets a pod's projected token,
    so whatever it may do is exactly what RBAC grants that account.
    """
    from kubernetes import client

    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    token = (
        client.CoreV1Api(api_client)
        .create_namespaced_service_account_token(account, namespace, request)
        .status.token
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    return pki.write_kubeconfig(
        path, server=server.url, ca=server.credentials.serving.ca, token=token, name=account
    )


def with_cluster_dns(command: list[str], names: dict[str, str], directory: Path) -> list[str]:
    """``command`` run as inside a pod, where cluster DNS resolves ``names`` (name -> IP).

    Why a private ``/etc/hosts``: a hook or test pod dials ``<service>.<namespace>.svc`` by
    name. The command runs in a mount namespace of its own (``unshare --mount``) in which a
    hosts file with those names is bound over ``/etc/hosts``; the machine's own file and
    every other process are untouched. Needs root (as the API server's loopback ClusterIPs
    do not).
    """
    directory.mkdir(parents=True, exist_ok=True)
    hosts = directory / "hosts"
    lines = ["127.0.0.1 localhost", *(f"{ip} {name}" for name, ip in names.items())]
    hosts.write_text("\n".join(lines) + "\n")
    script = 'mount --bind "$0" /etc/hosts && exec "$@"'
    return ["unshare", "--mount", "--", "sh", "-c", script, str(hosts), *command]


def service_names(api_client: Any, namespace: str, service: str) -> dict[str, str]:
    """The names a pod resolves a Service by, each to its ClusterIP."""
    ip, _ = cluster_ip(api_client, namespace, service)
    base = f"{service}.{namespace}"
    return dict.fromkeys((f"{base}.svc", f"{base}.svc.cluster.local"), ip)
