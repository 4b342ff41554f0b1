"""``serve --native``: in a hybrid installation ``/mutate`` and ``/validate`` run just the plugin
halves that ``webhook-config --native`` registers (the rest are native admission policies),
as one chain; without the flag nothing changes."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path
from typing import Any

import jsonpatch
import orjson
import pytest

from tests.command import invoke_cli
from tests.reviews import pod, review
from webhooks.configfile import read_config
from webhooks.core.admission import Admission
from webhooks.export import webhook_halves
from webhooks.plugins import REGISTRY
from webhooks.server import runner
from webhooks.server.app import ServerState, create_app
from webhooks.server.assemble import build_state
from webhooks.server.runner import ServeOptions

OFFLINE = "cluster: {source: none}\n"
PTR_ON = OFFLINE + "plugins:\n  pod-toleration-restriction: {enabled: true}\n"
GPU = {"limits": {"example.com/gpu": "1"}}


def _served(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cert_dir: Path, text: str, *flags: str
) -> ServeOptions:
    """The options ``serve`` hands the server (which is not started)."""
    config = tmp_path / "config.yaml"
    config.write_text(text)
    handed: list[ServeOptions] = []

    class Server:
        def __init__(self, options: ServeOptions, factory: Any) -> None:
            handed.append(options)

        def run(self) -> None:
            pass

    monkeypatch.setattr(runner, "WebhookServer", Server)
    args = ["serve", f"--config={config}", f"--cert-dir={cert_dir}", *flags]
    result = invoke_cli(args)
    assert result.exit_code == 0, result.output
    [options] = handed
    return options


NATIVE_ROWS = {
    "the defaults: runtime-class's refusal of a missing class alone": (
        OFFLINE,
        [],
        ["runtime-class"],
    ),
    "pod-toleration-restriction on: its halves and the mutations after it": (
        PTR_ON,
        ["pod-toleration-restriction", "extended-resource-toleration", "runtime-class"],
        ["pod-toleration-restriction", "runtime-class"],
    ),
}


@pytest.mark.parametrize(
    ("text", "mutators", "validators"), NATIVE_ROWS.values(), ids=NATIVE_ROWS.keys()
)
def test_native_runs_the_halves_webhook_config_native_registers_in_chain_order(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cert_dir: Path,
    states: list[ServerState],
    text: str,
    mutators: list[str],
    validators: list[str],
) -> None:
    options = _served(monkeypatch, tmp_path, cert_dir, text, "--native")
    state = build_state(options)
    states.append(state)
    admission = state.admission
    assert admission.kept == webhook_halves(admission.config, REGISTRY)
    assert [p.name for p in admission.plugins("mutate")] == mutators
    assert [p.name for p in admission.plugins("validate")] == validators


def test_without_native_every_enabled_half_runs_as_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cert_dir: Path, states: list[ServerState]
) -> None:
    options = _served(monkeypatch, tmp_path, cert_dir, PTR_ON)
    assert options.kept is None
    state = build_state(options)
    states.append(state)
    whole = Admission(REGISTRY, state.admission.config)
    assert state.admission.kept is None
    for phase in ("mutate", "validate"):
        assert state.admission.plugins(phase) == whole.plugins(phase)


def test_a_config_reloaded_on_sighup_is_narrowed_the_same_way(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cert_dir: Path, states: list[ServerState]
) -> None:
    """The server is handed a function of the config, so a reload (which replaces the
    options' config in the master) gives the workers the new config's kept halves."""
    options = _served(monkeypatch, tmp_path, cert_dir, OFFLINE, "--native")
    (tmp_path / "config.yaml").write_text(PTR_ON)
    reloaded = dataclasses.replace(options, config=read_config(str(tmp_path / "config.yaml")))
    state = build_state(reloaded)
    states.append(state)
    assert ("pod-toleration-restriction", "mutate") in (state.admission.kept or ())


def _tolerations(client: Any, obj: dict[str, Any]) -> list[str]:
    """The keys of the tolerations ``/mutate``'s patch writes."""
    answer = client.post("/mutate", data=orjson.dumps(review(obj)), content_type="application/json")
    assert answer.status_code == 200
    patch = orjson.loads(base64.b64decode(orjson.loads(answer.data)["response"]["patch"]))
    return [t["key"] for t in jsonpatch.apply_patch(obj, patch)["spec"].get("tolerations", [])]


def test_mutate_leaves_to_native_policies_what_they_do_and_keeps_its_metric_label(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cert_dir: Path, states: list[ServerState]
) -> None:
    """With pod-toleration-restriction on, the default tolerations are a native policy's
    (it runs first); the webhook adds the extended resource's. ``/mutate`` keeps its label."""
    native = build_state(_served(monkeypatch, tmp_path, cert_dir, PTR_ON, "--native"))
    whole = build_state(_served(monkeypatch, tmp_path, cert_dir, PTR_ON))
    states += [native, whole]
    obj = pod(containers=[{"name": "app", "image": "nginx:1.27", "resources": GPU}])
    assert _tolerations(create_app(native).test_client(), obj) == ["example.com/gpu"]
    assert _tolerations(create_app(whole).test_client(), obj) == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "example.com/gpu",
    ]
    metrics = create_app(native).test_client().get("/metrics").text
    assert 'endpoint="/mutate"' in metrics
    assert 'endpoint="/mutate/' not in metrics
