"""Settings the cluster's release does not serve: said once in the log, on /readyz and as a
gauge, while the pod stays ready."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakeapi import FakeApiServer
from tests.waiting import eventually
from webhooks.cluster.version import server_release
from webhooks.configfile import read_config
from webhooks.k8s.releases import NEWEST, judge
from webhooks.server.app import ServerState, create_app
from webhooks.server.assemble import build_state
from webhooks.server.runner import ServeOptions
from webhooks.server.unavailable import start_lines

DEVICE_CLAIMS = {"plugins": {"extended-resource-toleration": {"deviceClaims": True}}}
LINE = (
    "plugins.extended-resource-toleration.deviceClaims: needs DeviceClass "
    "spec.extendedResourceName (gate DRAExtendedResource, alpha, off by default on Kubernetes "
    "1.34); a claim of a DeviceClass not named in deviceClassTaints gives its pod no toleration"
)
SERIES = (
    'placement_webhooks_unavailable_settings{missing="DRAExtendedResource",'
    'setting="plugins.extended-resource-toleration.deviceClaims"} 1.0'
)


def _config(fake: FakeApiServer, tmp_path: Path, **settings: object) -> Path:
    path = fake.cluster_config(tmp_path, lookupTimeoutSeconds=1)
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, **settings}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("version", "detail", "series"),
    [
        pytest.param(
            "v1.34.4",
            "ok\n1 setting cannot work on Kubernetes 1.34; ready all the same, as the rest of "
            f"the policy is served:\n- {LINE}\n",
            True,
            id="on 1.34 the pod is ready and says which setting cannot work",
        ),
        pytest.param("v1.37.2", "ok\n", False, id="on 1.37 the setting works and nothing is said"),
    ],
)
def test_readyz_and_the_gauge_say_what_the_release_does_not_serve(
    fake: FakeApiServer,
    tmp_path: Path,
    cert_dir: Path,
    states: list[ServerState],
    version: str,
    detail: str,
    series: bool,
) -> None:
    fake.version = version
    path = _config(fake, tmp_path, **DEVICE_CLAIMS)
    found = server_release(read_config(str(path)).cluster)
    assert found is not None and found.reported == version
    state = build_state(
        ServeOptions(cert_dir=cert_dir, config_path=str(path), server_release=found)
    )
    states.append(state)
    client = create_app(state).test_client()
    eventually(lambda: client.get("/readyz").status_code == 200, "readiness")
    assert client.get("/readyz").text == detail
    assert (SERIES in client.get("/metrics").text) is series


def test_the_master_says_the_release_then_one_line_per_setting(
    fake: FakeApiServer, tmp_path: Path
) -> None:
    fake.version = "v1.34.4"
    config = read_config(str(_config(fake, tmp_path, **DEVICE_CLAIMS)))
    assert start_lines(config, server_release(config.cluster)) == [
        ("info", "cluster: Kubernetes 1.34 (v1.34.4)"),
        ("warning", LINE),
    ]


def test_no_cluster_means_nothing_to_say(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({"cluster": {"source": "none"}, **DEVICE_CLAIMS}), encoding="utf-8")
    config = read_config(str(path))
    assert server_release(config.cluster) is None
    assert start_lines(config, None) == []


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        pytest.param(
            lambda fake: setattr(fake, "version", None),
            "GET /version: HTTP 404: the server could not find it",
            id="a server without /version",
        ),
        pytest.param(
            lambda fake: fake.stall.set(),
            "GET /version: no answer within 1s",
            id="a server that never answers, within the lookup bound",
        ),
        pytest.param(
            lambda fake: setattr(fake, "version", "v1.34.4" + " " * 70_000),
            "the answer is over 65536 bytes",
            id="an answer past the size bound is not read further",
        ),
    ],
)
def test_a_server_that_cannot_tell_its_version_is_assumed_the_newest_and_said(
    fake: FakeApiServer, tmp_path: Path, setup: object, reason: str
) -> None:
    config = read_config(str(_config(fake, tmp_path, **DEVICE_CLAIMS)))
    setup(fake)  # type: ignore[operator]
    found = server_release(config.cluster)
    assert found == judge(None, reason)
    assert found.release == NEWEST
    lines = start_lines(config, found)
    assert lines[0] == ("warning", f"cluster: {found.note}")
    assert len(lines) == 1  # the newest serves the setting: nothing more is said
