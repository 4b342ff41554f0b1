"""Several ``serve`` replicas behind one Service, registered as ``webhook-config`` prints.

A Deployment's replicas run the same command with the same config and mount the same TLS
Secret; the API server reaches them through their Service and trusts the CA in the
configurations' ``caBundle``. Here the Service is real (``placement-webhooks`` in namespace
``placement-webhooks``, what ``webhook-config`` refers to by default) and its ClusterIP is a
loopback address (:mod:`.servicenet`: the API server must run with
:func:`~.servicenet.loopback_service_range`), so kube-apiserver resolves and dials it exactly
as in a cluster; what listens on ClusterIP:443 is the modelled kube-proxy (:mod:`.endpoints`).
Every replica reads one cert directory whose CA key is kept in memory, so a fault can rotate
the serving certificate (a new key and leaf from the same CA, as cert-manager renews one)
under the running replicas. Each replica can
be killed, stopped, started again, stalled (SIGSTOP) and resumed, one at a time or all.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from controlplane.harness.cli import REPO, run
from controlplane.harness.components import ApiServer, fetch
from controlplane.harness.endpoints import Backend, ServiceAddress
from controlplane.harness.objects import create_namespace
from controlplane.harness.pki import HOSTS
from controlplane.harness.process import Component, free_port, wait_until
from controlplane.harness.webhookserver import register, serve_args
from webhooks.certs.pki import (
    CA_FILE,
    CERT_FILE,
    KEY_FILE,
    issue_leaf,
    new_ca,
    service_hosts,
    write_files,
)

#: The Service ``webhook-config`` refers to by default, and its port.
SERVICE = NAMESPACE = "placement-webhooks"
SERVICE_PORT = 443


def _create_service(server: ApiServer) -> str:
    """The namespace and the selector-less Service of the replicas; returns its ClusterIP.

    Selector-less because no pod objects exist: the endpoints are the forwarder's to know.
    """
    from controlplane.harness.servicenet import cluster_ip

    with server.client() as api_client:
        create_namespace(api_client, NAMESPACE)
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE},
            "spec": {"ports": [{"name": "https", "port": SERVICE_PORT, "targetPort": 8443}]},
        }
        status, body = server.request("POST", f"/api/v1/namespaces/{NAMESPACE}/services", service)
        if status != 201:
            raise RuntimeError(f"creating the Service: HTTP {status} {body}")
        ip, _ = cluster_ip(api_client, NAMESPACE, SERVICE)
    if not ip.startswith("127."):
        raise RuntimeError(
            f"ClusterIP {ip} is not loopback: start the API server with a "
            "--service-cluster-ip-range from servicenet.loopback_service_range()"
        )
    return str(ip)


class Replica:
    """One ``serve`` (gunicorn master and workers, one process group) on its own ports."""

    def __init__(self, name: str, directory: Path, args: list[str], port: int, metrics: int):
        self.name = name
        self.directory = directory
        self.args = args
        self.port = port
        self.metrics_port = metrics
        self.component: Component | None = None

    def start(self) -> None:
        """Start the process (again): same ports, same config, same cert dir."""
        self.component = Component(
            f"placement-webhooks[{self.name}]", self.args, self.directory / "serve.log", cwd=REPO
        )

    @property
    def running(self) -> bool:
        return self.component is not None and self.component.alive()

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the whole process group (master and workers, as a container)."""
        assert self.component is not None
        os.killpg(self.component.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL the container: no shutdown, in-flight requests die with it."""
        assert self.component is not None
        self.signal(signal.SIGKILL)
        self.component.proc.wait()

    def stop(self) -> None:
        """A graceful stop (SIGTERM, then SIGKILL after the grace period)."""
        if self.component is not None:
            self.component.stop()

    def ready(self) -> bool:
        status, _ = fetch(
            urllib.request.Request(f"http://127.0.0.1:{self.metrics_port}/readyz"), None
        )
        return status == 200

    def metrics(self) -> str:
        """serve's ``/metrics`` text ("" when it does not answer)."""
        try:
            url = f"http://127.0.0.1:{self.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as response:
                text: str = response.read().decode()
        except OSError:
            return ""
        return text

    def backend(self) -> Backend:
        assert self.component is not None
        return Backend(self.name, self.port, self.metrics_port, self.component.proc.pid)


class WebhookService:
    """``replicas`` of ``serve`` for ``server``, the Service address in front of them, the CA."""

    def __init__(
        self, directory: Path, server: ApiServer, config: Path | None, replicas: int = 2
    ) -> None:
        self.directory = directory
        self.server = server
        self.config = config
        self.cert_dir = directory / "certs"
        self._ca = new_ca("placement-webhooks CA", days=30)
        self.ca_file = self.cert_dir / CA_FILE
        self.rotations = 0
        self._write_leaf()
        ip = _create_service(server)
        self.address = ServiceAddress(directory / "service", host=ip, port=SERVICE_PORT)
        self.replicas: list[Replica] = []
        for index in range(replicas):
            name = f"serve-{index}"
            port = free_port()
            args, _, metrics = serve_args(
                directory / name,
                server,
                config,
                bind=f"127.0.0.1:{port}",
                cert_dir=self.cert_dir,
            )
            self.replicas.append(Replica(name, directory / name, args, port, metrics))

    def _write_leaf(self) -> None:
        hosts = [*service_hosts(SERVICE, NAMESPACE), *HOSTS]
        leaf = issue_leaf(self._ca, hosts=hosts, days=30)
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        write_files(
            [
                (self.ca_file, self._ca.cert, False),
                (self.cert_dir / KEY_FILE, leaf.key, True),
                (self.cert_dir / CERT_FILE, leaf.cert, False),
            ]
        )

    def rotate_certificate(self) -> None:
        """A new key and serving certificate from the same CA, written over the old pair."""
        self._write_leaf()
        self.rotations += 1

    def serving_certificate(self, replica: Replica) -> bytes:
        """The DER certificate ``replica`` presents in a handshake now."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        with (
            socket.create_connection(("127.0.0.1", replica.port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return der

    def start(self, timeout: float = 60.0) -> None:
        """Start every replica and the Service address; wait until all are in rotation."""
        for replica in self.replicas:
            replica.start()
        self.publish()
        components = [r.component for r in self.replicas if r.component is not None]
        wait_until(
            lambda: self.address.ready() == {r.name for r in self.replicas},
            timeout=timeout,
            components=[*components, self.address.component],
            what="in the Service's rotation",
            interval=0.2,
        )

    def publish(self) -> None:
        """Tell the Service which replicas run (their process ids), as EndpointSlices do."""
        self.address.publish([r.backend() for r in self.replicas if r.component is not None])

    def restart(self, replica: Replica) -> None:
        """Start ``replica`` again (the kubelet's restart of its container) and publish it."""
        replica.start()
        self.publish()

    def configurations(self, extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """What ``webhook-config --ca-file <CA>`` prints: the default Service reference."""
        args = ["webhook-config", f"--ca-file={self.ca_file}"]
        if self.config is not None:
            args.append(f"--config={self.config}")
        done = run(*args, *extra)
        if done.code != 0:
            raise RuntimeError(f"webhook-config failed ({done.code}): {done.stderr}")
        return [doc for doc in yaml.safe_load_all(done.stdout) if doc]

    def register(self, extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """Create the configurations in the API server; returns them."""
        objects = self.configurations(extra)
        register(self.server, objects)
        return objects

    def stop(self) -> None:
        """Stop every replica (resumed first, if stalled) and the Service address."""
        for replica in self.replicas:
            if replica.running:
                replica.signal(signal.SIGCONT)
            replica.stop()
        self.address.stop()
