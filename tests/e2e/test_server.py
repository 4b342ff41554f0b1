"""The real server: gunicorn gthread workers over TLS, real AdmissionReview v1 bytes."""

from __future__ import annotations

import base64
import socket
import ssl
import warnings
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.command import run_cli
from tests.e2e.serving import Server, serving
from tests.reviews import container, pod, review

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("serve")
    with serving(workdir) as running:
        yield running


def test_serve_with_no_arguments_generates_dev_certificates(server: Server) -> None:
    certs = server.ca.parent
    assert {p.name for p in certs.iterdir()} >= {"ca.crt", "tls.crt", "tls.key"}
    assert (certs / "tls.key").stat().st_mode & 0o077 == 0


def test_the_served_certificate_verifies_against_the_generated_ca(server: Server) -> None:
    ctx = server.context()
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
        assert tls.getpeercert() is not None


def test_tls_below_1_2_is_refused_by_the_server(server: Server) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(str(server.ca))
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        ctx.minimum_version = ssl.TLSVersion.TLSv1
        ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        pytest.raises(ssl.SSLError) as info,
    ):
        ctx.wrap_socket(raw, server_hostname="localhost")
    # The refusal must come from the server's protocol-version alert, not from this client.
    assert "PROTOCOL_VERSION" in str(info.value) or "VERSION" in (info.value.reason or "")


def test_health_endpoints_answer(server: Server) -> None:
    assert server.request("GET", "/healthz")[0] == 200
    assert server.request("GET", "/readyz")[0] == 200


def test_a_pod_review_gets_the_default_tolerations_and_its_uid_back(server: Server) -> None:
    status, body = server.request("POST", "/mutate", review(pod(), uid="e2e-uid-1"))
    assert status == 200
    out = orjson.loads(body)
    assert out["response"]["uid"] == "e2e-uid-1"
    patch = orjson.loads(base64.b64decode(out["response"]["patch"]))
    added = patch[0]["value"]
    assert [(t["key"], t["effect"], t["tolerationSeconds"]) for t in added] == [
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    ]


def test_a_keep_alive_connection_serves_many_reviews(server: Server) -> None:
    conn = server.connect()
    try:
        for i in range(20):
            obj = pod(containers=[container(requests={"nvidia.com/gpu": "1"})])
            status, body = server.request("POST", "/mutate", review(obj, uid=f"k{i}"), conn=conn)
            assert status == 200
            assert orjson.loads(body)["response"]["uid"] == f"k{i}"
    finally:
        conn.close()


def test_bad_input_gets_400_and_413_and_the_server_keeps_serving(server: Server) -> None:
    status, body = server.request("POST", "/mutate", b"this is not json")
    assert status == 400 and b"not valid JSON" in body
    status, body = server.request("POST", "/mutate", b"{" + b" " * (7 * 1024 * 1024) + b"}")
    assert status == 413
    assert server.request("POST", "/mutate", review(pod()))[0] == 200


def test_metrics_count_the_reviews(server: Server) -> None:
    import time

    server.request("POST", "/validate", review(pod()))
    # A scrape may land on the other worker, which sees this one's counters once its
    # snapshot is written (about once a second): poll for a little longer than that.
    deadline = time.monotonic() + 5
    while True:
        status, body = server.request("GET", "/metrics")
        assert status == 200
        if b"placement_webhooks_requests_total" in body or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert b"placement_webhooks_requests_total" in body


def test_an_unusable_config_stops_startup_with_the_key_named(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("plugins:\n  default-toleration-seconds:\n    notReadySeconds: soon\n")
    run = run_cli("serve", "--config", str(cfg), cwd=tmp_path)
    assert run.returncode == 2
    assert "plugins.default-toleration-seconds.notReadySeconds" in run.stderr


def test_metrics_add_up_across_workers(server: Server) -> None:
    import re
    import time

    def total() -> float:
        _, body = server.request("GET", "/metrics")
        pattern = (
            r"placement_webhooks_requests_total"
            r'\{endpoint="/validate/anti-affinity-topology",outcome="allowed"\} (\d+)'
        )
        match = re.search(pattern, body.decode())
        return float(match.group(1)) if match else 0.0

    start = total()
    for i in range(40):  # fresh connections spread over both workers
        assert (
            server.request("POST", "/validate/anti-affinity-topology", review(pod(), uid=f"m{i}"))[
                0
            ]
            == 200
        )
    time.sleep(1.5)  # each worker snapshots its counters about once a second
    assert total() - start == 40


def test_the_plain_port_serves_metrics_summed_across_workers_and_the_probes(
    server: Server,
) -> None:
    import re

    def total() -> float:
        status, body = server.plain("GET", "/metrics")
        assert status == 200
        pattern = (
            r'placement_webhooks_requests_total\{endpoint="/validate",outcome="allowed"\} (\S+)'
        )
        match = re.search(pattern, body.decode())
        return float(match.group(1)) if match else 0.0

    start = total()
    for i in range(20):  # fresh connections, spread over both workers
        assert server.request("POST", "/validate", review(pod(), uid=f"p{i}"))[0] == 200
    # Multiprocess mode: every worker's series are in the shared files at once.
    assert total() - start == 20
    assert server.plain("GET", "/healthz") == (200, b"ok\n")
    assert server.plain("GET", "/readyz") == (200, b"ok\n")
    assert b"\nplacement_webhooks_certificate_expiry_seconds " in server.plain("GET", "/metrics")[1]


PLAIN_REFUSALS = [
    ("an admission review over plain HTTP is refused", "POST", "/mutate"),
    ("a per-plugin path over plain HTTP is refused", "POST", "/validate/runtime-class"),
    ("an unknown path over plain HTTP is refused", "GET", "/debug"),
]


@pytest.mark.parametrize(
    ("method", "path"), [r[1:] for r in PLAIN_REFUSALS], ids=[r[0] for r in PLAIN_REFUSALS]
)
def test_admission_paths_stay_tls_only(server: Server, method: str, path: str) -> None:
    body = orjson.dumps(review(pod())) if method == "POST" else None
    status, text = server.plain(method, path, body)
    assert status == 404 and b"this port serves /metrics" in text
