"""The server's use of the cluster source: config file, readiness, metrics, shutdown."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import dra
from tests.command import invoke_cli
from tests.fakeapi import FakeApiServer, runtime_class
from tests.reviews import pod, review
from tests.waiting import eventually
from webhooks.cluster.api import ApiCluster
from webhooks.configfile import read_config
from webhooks.core.config import ClusterSettings, ConfigError
from webhooks.server.app import ServerState, create_app
from webhooks.server.assemble import build_app, build_state
from webhooks.server.runner import DrainingArbiter, ServeOptions


def write_config(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_config_file_names_the_cluster_source(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / "config.yaml",
        "cluster:\n"
        "  source: kubeconfig\n"
        "  kubeconfig: /etc/placement/kubeconfig\n"
        "  context: staging\n"
        "  lookupTimeoutSeconds: 0.75\n",
    )
    assert read_config(path).cluster == ClusterSettings(
        source="kubeconfig",
        kubeconfig="/etc/placement/kubeconfig",
        context="staging",
        lookup_timeout_seconds=0.75,
    )


def test_a_bad_cluster_setting_names_the_file_and_key(tmp_path: Path) -> None:
    path = write_config(tmp_path / "config.yaml", "cluster:\n  lookupTimeout: 3\n")
    with pytest.raises(ConfigError, match=r"config\.yaml: cluster\.lookupTimeout: unknown key"):
        read_config(path)


def test_readiness_waits_for_the_caches_and_metrics_show_them(
    fake: FakeApiServer, tmp_path: Path, cert_dir: Path, states: list[ServerState]
) -> None:
    fake.put(runtime_class("gvisor"))
    fake.fail_lists.add("runtimeclasses")
    config = str(fake.cluster_config(tmp_path, lookupTimeoutSeconds=1))
    state = build_state(ServeOptions(cert_dir=cert_dir, config_path=config))
    states.append(state)
    cluster = state.admission.cluster
    assert isinstance(cluster, ApiCluster)
    client = create_app(state).test_client()

    eventually(lambda: cluster.informers["runtimeclasses"].last_error, "a failed list")
    eventually(lambda: cluster.informers["namespaces"].synced, "the Namespace list")
    not_ready = client.get("/readyz")
    assert not_ready.status_code == 503
    assert not_ready.text == (
        "not ready: cluster cache not synced: runtimeclasses "
        "(list runtimeclasses: HTTP 500: Internal error occurred: list unavailable)\n"
    )

    fake.fail_lists.clear()
    eventually(lambda: client.get("/readyz").status_code == 200, "readiness")
    assert cluster.runtime_class("gvisor") is not None

    metrics = client.get("/metrics").text
    assert 'placement_webhooks_cluster_cache_synced{resource="runtimeclasses"} 1' in metrics
    assert 'placement_webhooks_cluster_cache_objects{resource="runtimeclasses"} 1' in metrics
    assert (
        'placement_webhooks_cluster_lookups_total{resource="runtimeclasses",result="hit"} 1'
        in metrics
    )
    assert "# TYPE placement_webhooks_cluster_lists_total counter" in metrics
    failed = 'placement_webhooks_cluster_lists_total{resource="runtimeclasses",result="error"}'
    assert failed in metrics


def test_without_a_cluster_source_nothing_is_started(
    tmp_path: Path, cert_dir: Path, states: list[ServerState]
) -> None:
    config = write_config(tmp_path / "config.yaml", "cluster: {source: none}\n")
    state = build_state(ServeOptions(cert_dir=cert_dir, config_path=config))
    states.append(state)
    assert state.admission.cluster is None
    client = create_app(state).test_client()
    assert client.get("/readyz").status_code == 200
    assert "cluster" not in client.get("/metrics").text


def test_serve_refuses_an_unusable_kubeconfig_before_starting(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    config = write_config(
        tmp_path / "config.yaml", f"cluster: {{source: kubeconfig, kubeconfig: '{missing}'}}\n"
    )
    result = invoke_cli(["serve", "--config", config, "--cert-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.startswith(f"placement-webhooks: cluster: kubeconfig {missing}: ")


def test_a_worker_exit_stops_the_cluster_watches(
    fake: FakeApiServer, tmp_path: Path, cert_dir: Path, states: list[ServerState]
) -> None:
    config = str(fake.cluster_config(tmp_path))
    built = build_app(ServeOptions(cert_dir=cert_dir, config_path=config))
    cluster = built.app.extensions["placement-webhooks"].admission.cluster
    assert isinstance(cluster, ApiCluster)
    eventually(lambda: all(i.alive for i in cluster.informers.values()), "the watches")
    built.close()
    assert not any(i.alive for i in cluster.informers.values())


def test_a_reload_with_an_unusable_kubeconfig_keeps_the_workers(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    config = write_config(
        tmp_path / "config.yaml", f"cluster: {{source: kubeconfig, kubeconfig: '{missing}'}}\n"
    )
    errors: list[str] = []
    log = SimpleNamespace(error=lambda fmt, *args: errors.append(fmt % args))
    options = ServeOptions(cert_dir=tmp_path, config_path=config)
    outcomes: list[str] = []
    arbiter = SimpleNamespace(
        app=SimpleNamespace(options=options),
        log=log,
        reloads=SimpleNamespace(count=outcomes.append),
    )
    DrainingArbiter.handle_hup(arbiter)  # type: ignore[arg-type]
    assert len(errors) == 1
    assert errors[0].startswith(
        "SIGHUP: config reload refused, keeping the running workers: "
        f"{config}: cluster: kubeconfig {missing}: "
    )
    assert outcomes == ["refused"]


def test_device_claims_make_the_server_cache_and_resolve_claims(
    fake: FakeApiServer, tmp_path: Path, cert_dir: Path, states: list[ServerState]
) -> None:
    fake.put(dra.device_class(extended=dra.GPU))
    fake.put(dra.claim_template("one-gpu", namespace="default"))
    path = fake.cluster_config(tmp_path)
    settings = {"plugins": {"extended-resource-toleration": {"deviceClaims": True}}}
    text = path.read_text(encoding="utf-8")
    path.write_text(text[:-1] + ", " + json.dumps(settings)[1:], encoding="utf-8")
    state = build_state(ServeOptions(cert_dir=cert_dir, config_path=str(path)))
    states.append(state)
    cluster = state.admission.cluster
    assert isinstance(cluster, ApiCluster)
    assert {"deviceclasses", "resourceclaims", "resourceclaimtemplates"} <= set(cluster.informers)
    client = create_app(state).test_client()
    eventually(lambda: client.get("/readyz").status_code == 200, "readiness")
    obj = pod(resourceClaims=dra.pod_claims(("gpu", "template", "one-gpu")))
    answer = client.post("/mutate", json=review(obj)).get_json()["response"]
    assert answer["allowed"]
    patch = json.loads(base64.b64decode(answer["patch"]))
    added = [op["value"] for op in patch if op["path"].startswith("/spec/tolerations/")]
    assert {"key": dra.GPU, "operator": "Exists", "effect": "NoSchedule"} in added
    metrics = client.get("/metrics").text
    assert 'placement_webhooks_cluster_cache_objects{resource="deviceclasses"} 1' in metrics
