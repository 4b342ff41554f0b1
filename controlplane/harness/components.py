"""How each control-plane program is started and when it counts as ready.

One function per program builds its command line from a few options and starts it; readiness
is a separate probe, so the caller can start several programs and then wait for them
together (the API server retries etcd by itself, the scheduler and the controller-manager
start side by side). Flags are upstream's, for the release in :mod:`controlplane.release`.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.harness import auditlog, pki
from controlplane.harness.admission import AdmissionSetup
from controlplane.harness.binaries import Binaries
from controlplane.harness.process import Component, free_port
from controlplane.release import apiserver_flags

SERVICE_CIDR = "10.0.0.0/24"
#: The address the API server writes into the ``kubernetes`` Service's endpoints. It is never
#: dialled; upstream refuses a loopback address there, so a TEST-NET-1 address stands in.
ADVERTISE_ADDRESS = "192.0.2.1"

#: Controllers the suite relies on: service accounts for pods, namespace deletion, garbage
#: collection, the workload controllers, and node lifecycle with taint-based eviction.
DEFAULT_CONTROLLERS = (
    "serviceaccount-controller",
    "namespace-controller",
    "garbage-collector-controller",
    "daemonset-controller",
    "replicaset-controller",
    "deployment-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "pod-garbage-collector-controller",
)

#: Those, plus what DRA needs without a driver: claims made from ResourceClaimTemplates for
#: pods, and pods evicted for NoExecute device taints.
DRA_CONTROLLERS = (
    *DEFAULT_CONTROLLERS,
    "resourceclaim-controller",
    "device-taint-eviction-controller",
)


@dataclass(frozen=True, slots=True)
class ApiServerOptions:
    """One API server: its name (and etcd prefix), admission set-up and extra flags.

    ``webhooks``: run ``serve`` with ``webhook_config`` (``None``: the built-in defaults)
    for this API server and register it, as modes ``webhooks`` and ``managed`` do;
    ``webhook_args`` are more ``webhook-config`` options for that registration.
    """

    name: str = "main"
    admission: AdmissionSetup = field(default_factory=AdmissionSetup)
    webhooks: bool = False
    webhook_config: Path | None = None
    extra_args: tuple[str, ...] = ()
    #: Extra ``webhook-config`` options for the registration (``--nodes``, ``--timeout=2``).
    webhook_args: tuple[str, ...] = ()
    #: Extra ``serve`` options (``--native``, beside ``webhook-config --native``).
    serve_args: tuple[str, ...] = ()
    #: Write an audit log (:mod:`.auditlog`): how a test sees audit annotations.
    audit: bool = False


@dataclass(frozen=True, slots=True)
class ControllerManagerOptions:
    """The controller-manager's node monitoring and controllers.

    Short periods by default (1 s / 10 s rather than upstream's 5 s / 50 s) so failover
    tests take seconds; set upstream's values to reproduce a stock cluster's timing.
    """

    node_monitor_period: str = "1s"
    node_monitor_grace_period: str = "10s"
    controllers: tuple[str, ...] = DEFAULT_CONTROLLERS
    extra_args: tuple[str, ...] = ()


@dataclass(slots=True)
class Etcd:
    """A running etcd and the URL clients use."""

    component: Component
    url: str


@dataclass(slots=True)
class ApiServer:
    """A running (or starting) API server, its credentials and its kubeconfigs."""

    options: ApiServerOptions
    component: Component
    url: str
    credentials: pki.Credentials
    kubeconfigs: dict[str, Path]

    @property
    def name(self) -> str:
        """The name given in its options; also its etcd prefix ``/registry-<name>``."""
        return self.options.name

    @property
    def audit_log(self) -> Path:
        """Where the audit log is written when the options ask for one."""
        return auditlog.path(self.component.log.parent)

    @property
    def kubeconfig(self) -> Path:
        """The admin (``system:masters``) kubeconfig."""
        return self.kubeconfigs["admin"]

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """Send a request as admin with the standard library: probes need no client.

        The body is sent as JSON under ``content_type`` (``application/apply-patch+yaml``
        for a server-side apply: JSON is YAML). Returns the status code (0 when nothing
        answered) and the decoded JSON body (``None`` when not JSON).
        """
        context = ssl.create_default_context(cafile=str(self.credentials.serving.ca))
        headers = {"Authorization": f"Bearer {self.credentials.tokens['admin']}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        return fetch(request, context)

    def get(self, path: str) -> tuple[int, Any]:
        """GET ``path`` as admin (see :meth:`request`)."""
        return self.request("GET", path)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        who: str = "admin",
        content_type: str = "application/json",
        timeout: float = 60,
    ) -> Response:
        """Send a request as ``who`` (a token of :data:`pki.IDENTITIES`); the whole answer.

        Why beside :meth:`request`: tests of admission read what a client sees, and that
        includes the ``Warning`` headers, the status code of a refusal and the time taken.
        """
        context = ssl.create_default_context(cafile=str(self.credentials.serving.ca))
        headers = {"Authorization": f"Bearer {self.credentials.tokens[who]}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        began = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
                status, raw, received = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as exc:
            status, raw, received = exc.code, exc.read(), exc.headers
        seconds = time.monotonic() - began
        try:
            decoded = json.loads(raw)
        except ValueError:
            decoded = None
        return Response(status, decoded, tuple(received.get_all("Warning") or ()), seconds)

    def client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))


@dataclass(frozen=True, slots=True)
class Response:
    """What a client got: status, decoded JSON body, ``Warning`` headers, seconds taken."""

    status: int
    body: Any
    warnings: tuple[str, ...]
    seconds: float

    @property
    def message(self) -> str:
        """The ``Status`` message of a refusal (``""`` for an object)."""
        if isinstance(self.body, Mapping) and self.body.get("kind") == "Status":
            return str(self.body.get("message", ""))
        return ""


def fetch(request: urllib.request.Request, context: ssl.SSLContext | None) -> tuple[int, Any]:
    """Send ``request``; the status (0 when nothing answered) and the JSON body or ``None``.

    Probes poll servers that are still starting, so a refused connection is an answer
    ("not yet"), never an exception.
    """
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    except (OSError, ssl.SSLError):
        return 0, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def healthz(port: int) -> bool:
    """Whether the scheduler or controller-manager on ``port`` answers ``/healthz`` with ok.

    Their serving certificate is self-signed and made at start-up, and ``/healthz`` reveals
    nothing, so the probe does not verify it.
    """
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{port}/healthz")
    status, _ = fetch(request, context)
    return status == 200


def start_etcd(binaries: Binaries, directory: Path) -> Etcd:
    """etcd on two free ports with its data in ``directory``.

    ``--unsafe-no-fsync``: the data dies with the run, and fsync is what makes etcd slow
    on a loaded CI disk.
    """
    client, peer = free_port(), free_port()
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    args = [
        str(binaries.etcd),
        "--name=default",
        f"--data-dir={directory / 'data'}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=default={peer_url}",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]
    return Etcd(Component("etcd", args, directory / "etcd.log"), client_url)


def etcd_ready(etcd: Etcd) -> bool:
    """Whether etcd reports itself healthy."""
    status, body = fetch(urllib.request.Request(etcd.url + "/health"), None)
    return status == 200 and isinstance(body, Mapping) and body.get("health") == "true"


def start_apiserver(
    binaries: Binaries, directory: Path, etcd: Etcd, options: ApiServerOptions
) -> ApiServer:
    """kube-apiserver on a free port, its own etcd prefix, credentials and admission set-up."""
    credentials = pki.create(directory / "pki")
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    admission = options.admission
    args = [
        str(binaries.kube_apiserver),
        f"--etcd-servers={etcd.url}",
        f"--etcd-prefix=/registry-{options.name}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--advertise-address={ADVERTISE_ADDRESS}",
        f"--cert-dir={directory / 'certs'}",
        f"--tls-cert-file={credentials.serving.cert}",
        f"--tls-private-key-file={credentials.serving.key}",
        f"--token-auth-file={credentials.token_file}",
        "--authorization-mode=Node,RBAC",
        f"--service-account-key-file={credentials.service_account_public_key}",
        f"--service-account-signing-key-file={credentials.service_account_key}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--profiling=false",
    ]
    if admission.enable:
        args.append(f"--enable-admission-plugins={','.join(admission.enable)}")
    if admission.disable:
        args.append(f"--disable-admission-plugins={','.join(admission.disable)}")
    if admission.configuration is not None:
        config_file = directory / "admission-configuration.yaml"
        config_file.write_text(yaml.safe_dump(admission.configuration, sort_keys=False))
        args.append(f"--admission-control-config-file={config_file}")
    if options.audit:
        args += auditlog.flags(directory)
    args += [*apiserver_flags(), *admission.flags, *options.extra_args]
    kubeconfigs = {
        who: pki.write_kubeconfig(
            directory / f"{who}.kubeconfig",
            server=url,
            ca=credentials.serving.ca,
            token=token,
            name=options.name,
        )
        for who, token in credentials.tokens.items()
    }
    component = Component(f"kube-apiserver[{options.name}]", args, directory / "apiserver.log")
    return ApiServer(options, component, url, credentials, kubeconfigs)


def apiserver_ready(server: ApiServer) -> bool:
    """``/readyz`` is ok and the ``default`` namespace exists (bootstrap has finished)."""
    status, _ = server.get("/readyz")
    if status != 200:
        return False
    status, _ = server.get("/api/v1/namespaces/default")
    return status == 200


def _controller_args(binary: Path, kubeconfig: Path, directory: Path) -> tuple[list[str], int]:
    """The flags kube-scheduler and kube-controller-manager share: one kubeconfig for every
    client, a secure port on loopback, certificates in ``directory``, no leader election;
    returns them (the binary first) and the port.

    Why shared: both run the same generic controller server, and a flag fixed for one (a
    port, an address) must not be missed in the other.
    """
    port = free_port()
    args = [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={directory / 'certs'}",
        "--leader-elect=false",
    ]
    return args, port


def start_scheduler(
    binaries: Binaries, directory: Path, server: ApiServer, extra_args: tuple[str, ...] = ()
) -> tuple[Component, int]:
    """kube-scheduler for ``server`` with leader election off and ``extra_args`` (a client
    rate, say); returns it and its port."""
    args, port = _controller_args(
        binaries.kube_scheduler, server.kubeconfigs["scheduler"], directory
    )
    return Component("kube-scheduler", [*args, *extra_args], directory / "scheduler.log"), port


def start_controller_manager(
    binaries: Binaries, directory: Path, server: ApiServer, options: ControllerManagerOptions
) -> tuple[Component, int]:
    """kube-controller-manager for ``server``; returns it and its port."""
    args, port = _controller_args(
        binaries.kube_controller_manager, server.kubeconfigs["controller-manager"], directory
    )
    args += [
        "--use-service-account-credentials=false",
        f"--controllers={','.join(options.controllers)}",
        f"--node-monitor-period={options.node_monitor_period}",
        f"--node-monitor-grace-period={options.node_monitor_grace_period}",
        f"--service-account-private-key-file={server.credentials.service_account_key}",
        f"--root-ca-file={server.credentials.serving.ca}",
        *options.extra_args,
    ]
    component = Component("kube-controller-manager", args, directory / "controller-manager.log")
    return component, port


def manager_ready(port: int, server: ApiServer) -> bool:
    """The controller-manager answers ``/healthz`` and has made ``default/default``.

    The service account is the proof that its controllers run, not merely its HTTP server,
    and the ServiceAccount admission plugin refuses pods in ``default`` until it exists.
    """
    if not healthz(port):
        return False
    status, _ = server.get("/api/v1/namespaces/default/serviceaccounts/default")
    return status == 200
