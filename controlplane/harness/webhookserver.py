"""``placement-webhooks serve`` beside an API server, registered as a user would register it.

The suite runs the product as it ships: the real ``serve`` command under gunicorn with its
own certificates, and the Mutating-/ValidatingWebhookConfiguration exactly as
``placement-webhooks webhook-config --url ... --ca-file ...`` prints them. A test that
hand-wrote the configurations would test our guess of them instead.
"""

from __future__ import annotations

import os
import signal
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controlplane.harness.admission import webhook_serving_config
from controlplane.harness.cli import REPO, run
from controlplane.harness.components import ApiServer, fetch
from controlplane.harness.metrics import apiserver_metrics, metric_sum
from controlplane.harness.pki import HOSTS
from controlplane.harness.process import Component, free_port, wait_until
from webhooks.certs.pki import generate


@dataclass(slots=True)
class WebhookServer:
    """A running ``serve``: where it listens, its CA, and its plain-HTTP probe port."""

    component: Component
    url: str
    ca: Path
    metrics_port: int
    config: Path


def serve_args(
    directory: Path,
    server: ApiServer,
    config: Path | None,
    *,
    bind: str,
    cert_dir: Path,
    extra: tuple[str, ...] = (),
) -> tuple[list[str], Path, int]:
    """The ``serve`` command line for ``config`` with its cluster source pointed at
    ``server``, bound at ``bind``, with ``extra`` options; returns it, the config file
    written into ``directory``, and the metrics port.

    Why one helper: the harness runs ``serve`` on loopback and behind a Service, and both
    must run the same command with the same config as the product ships it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    served = directory / "config.yaml"
    served.write_text(yaml.safe_dump(webhook_serving_config(config, server.kubeconfig)))
    metrics = free_port()
    args = [
        sys.executable,
        "-m",
        "webhooks",
        "serve",
        f"--config={served}",
        f"--bind={bind}",
        f"--cert-dir={cert_dir}",
        f"--metrics-bind=127.0.0.1:{metrics}",
        "--shutdown-delay=0",
        *extra,
    ]
    return args, served, metrics


def start(
    directory: Path, server: ApiServer, config: Path | None, extra: tuple[str, ...] = ()
) -> WebhookServer:
    """Start ``serve`` with ``config`` (its cluster source pointed at ``server``) and
    ``extra`` options.

    ``--shutdown-delay 0``: there is no Service whose endpoints need time to drain, and a
    test run should not wait five seconds per server at teardown.
    """
    certs = generate(directory / "certs", hosts=HOSTS)
    port = free_port()
    args, served, metrics = serve_args(
        directory,
        server,
        config,
        bind=f"127.0.0.1:{port}",
        cert_dir=certs.cert.parent,
        extra=extra,
    )
    component = Component(
        f"placement-webhooks[{server.name}]", args, directory / "serve.log", cwd=REPO
    )
    return WebhookServer(component, f"https://127.0.0.1:{port}", certs.ca, metrics, served)


def pause(webhook: WebhookServer) -> None:
    """SIGSTOP ``serve`` and its workers: connections are accepted by the kernel, never answered.

    Why: a stalled server (a stop-the-world pause, a hung node) is the case a timeout is for;
    a stopped one refuses connections at once.
    """
    os.killpg(webhook.component.proc.pid, signal.SIGSTOP)


def resume(webhook: WebhookServer) -> None:
    """SIGCONT what :func:`pause` stopped."""
    os.killpg(webhook.component.proc.pid, signal.SIGCONT)


def calls(webhook: WebhookServer) -> dict[str, int]:
    """How many reviews ``serve`` has answered, per endpoint (``/mutate``, ``/validate``).

    Why: whether the API server called the webhook at all (a match condition, a namespace
    selector) shows only here; tests read it before and after a request.
    """
    request = urllib.request.Request(f"http://127.0.0.1:{webhook.metrics_port}/metrics")
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read().decode()
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("placement_webhooks_requests_total{"):
            labels, _, value = line.rpartition(" ")
            endpoint = labels.split('endpoint="', 1)[1].split('"', 1)[0]
            counts[endpoint] = counts.get(endpoint, 0) + int(float(value))
    return counts


def ready(webhook: WebhookServer) -> bool:
    """``/readyz`` on the metrics port: config and certificates loaded, caches synced."""
    status, _ = fetch(
        urllib.request.Request(f"http://127.0.0.1:{webhook.metrics_port}/readyz"), None
    )
    return status == 200


def configurations(
    webhook: WebhookServer, config: Path | None, extra: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """What ``webhook-config`` prints for ``webhook`` (with ``extra`` options): what to register."""
    args = ["webhook-config", f"--url={webhook.url}", f"--ca-file={webhook.ca}"]
    if config is not None:
        args.append(f"--config={config}")
    args += extra
    done = run(*args)
    if done.code != 0:
        raise RuntimeError(f"webhook-config failed ({done.code}): {done.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def register(server: ApiServer, objects: list[dict[str, Any]]) -> None:
    """Create the webhook configurations in ``server``."""
    from kubernetes import client

    with server.client() as api_client:
        api = client.AdmissionregistrationV1Api(api_client)
        for obj in objects:
            if obj["kind"] == "MutatingWebhookConfiguration":
                api.create_mutating_webhook_configuration(obj)
            elif obj["kind"] == "ValidatingWebhookConfiguration":
                api.create_validating_webhook_configuration(obj)
            else:
                raise RuntimeError(f"webhook-config printed an unexpected {obj['kind']}")


#: The label that makes a ConfigMap a sentinel's probe; nothing else carries it.
SENTINEL_LABEL = "placement-webhooks.test/sentinel"


def _sentinel(kind: str, port: int) -> dict[str, Any]:
    """A configuration of ``kind`` whose one webhook only the sentinel ConfigMap reaches.

    It points at a closed loopback port with ``failurePolicy: Ignore``: every call fails
    open, and the API server counts that in ``apiserver_admission_webhook_fail_open_count``
    under the webhook's name. A count above zero says the API server has loaded it.
    """
    webhook = {
        "name": f"{kind.lower()}.sentinel.placement-webhooks.test",
        "clientConfig": {"url": f"https://127.0.0.1:{port}/sentinel"},
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["configmaps"],
            }
        ],
        "objectSelector": {"matchLabels": {SENTINEL_LABEL: "true"}},
        "failurePolicy": "Ignore",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 1,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "zz-placement-webhooks-sentinel"},
        "webhooks": [webhook],
    }


def wait_active(server: ApiServer, webhook: WebhookServer, objects: list[dict[str, Any]]) -> None:
    """Return once the API server has loaded every configuration in ``objects``.

    Why: the API server learns of new webhook configurations through an informer, a moment
    after they are created; a test that ran in that moment would bypass the webhooks and
    pass or fail for the wrong reason.

    Why a sentinel and not a probe pod through our webhooks: whether a pod reaches the
    validating webhooks depends on the policy (a mutating refusal ends admission before
    them), so a config that refuses every pod would never look ready. Instead one more
    configuration of each kind is created after ours and waited for: one informer per kind
    delivers its events in the order they were written, so once the API server calls the
    sentinel it holds ours too. The sentinels are then deleted. ``webhook`` is checked for
    being alive while waiting.
    """
    kinds = sorted({obj["kind"] for obj in objects if obj.get("webhooks")})
    sentinels = [_sentinel(kind, free_port()) for kind in kinds]
    register(server, sentinels)
    probe = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "placement-webhooks-sentinel", "labels": {SENTINEL_LABEL: "true"}},
    }

    def loaded() -> bool:
        server.request("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", probe)
        text = apiserver_metrics(server)
        return all(
            metric_sum(
                text,
                "apiserver_admission_webhook_fail_open_count",
                name=sentinel["webhooks"][0]["name"],
            )
            > 0
            for sentinel in sentinels
        )

    try:
        wait_until(
            loaded,
            timeout=30,
            components=[webhook.component],
            what="loaded by the API server",
            interval=0.2,
        )
    finally:
        for sentinel in sentinels:
            plural = sentinel["kind"].lower() + "s"
            server.request(
                "DELETE",
                f"/apis/admissionregistration.k8s.io/v1/{plural}/{sentinel['metadata']['name']}",
            )
