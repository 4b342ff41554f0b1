"""``serve`` as a real subprocess (gunicorn over TLS) with its cluster objects from a fake
API server: readiness follows the caches, RuntimeClasses come from the cache or a live GET,
and once the API server is gone reviews are still answered within the lookup bound."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.serving import Server, serving
from tests.fakeapi import FakeApiServer, runtime_class
from tests.reviews import pod, review
from webhooks.certs.pki import generate
from webhooks.core.review import decode_patch

pytestmark = pytest.mark.e2e

LOOKUP_TIMEOUT = 1.0


def wait_for(server: Server, predicate: Callable[[], Any], what: str, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for: {what}\n--- server log ---\n{server.output()}")
        time.sleep(0.1)


def admit(server: Server, runtime_class_name: str) -> dict[str, Any]:
    """POST a Pod naming ``runtime_class_name`` to /mutate/runtime-class; the response."""
    status, body = server.request(
        "POST", "/mutate/runtime-class", review(pod(runtimeClassName=runtime_class_name))
    )
    assert status == 200
    response: dict[str, Any] = orjson.loads(body)["response"]
    return response


def overhead(response: dict[str, Any]) -> Any:
    ops = {op["path"]: op["value"] for op in decode_patch({"response": response})}
    return ops["/spec/overhead"]


def test_readiness_follows_the_caches_and_reviews_survive_the_api_server(
    fake: FakeApiServer, tmp_path: Path
) -> None:
    fake.put(runtime_class("gvisor", "runsc", overhead={"podFixed": {"memory": "120Mi"}}))
    fake.fail_lists.update({"runtimeclasses", "namespaces"})
    certs = generate(tmp_path / "certs", hosts=["localhost", "127.0.0.1"])
    config = fake.cluster_config(tmp_path, lookupTimeoutSeconds=LOOKUP_TIMEOUT)
    # One worker, so every request is answered by the same caches.
    args = ("--config", str(config), "--workers", "1")
    with serving(tmp_path, *args, cert_dir=certs.cert.parent) as server:
        wait_for(server, lambda: fake.count("list", "runtimeclasses") >= 2, "list attempts")
        status, body = server.request("GET", "/readyz")
        assert status == 503
        assert body.startswith(b"not ready: cluster cache not synced: runtimeclasses")

        fake.fail_lists.clear()
        wait_for(server, lambda: server.request("GET", "/readyz")[0] == 200, "readiness")

        assert overhead(admit(server, "gvisor")) == {"memory": "120Mi"}
        assert fake.count("get", "runtimeclasses") == 0

        fake.put(
            runtime_class("kata", "kata", overhead={"podFixed": {"cpu": "250m"}}), announce=False
        )
        assert overhead(admit(server, "kata")) == {"cpu": "250m"}
        assert fake.count("get", "runtimeclasses") == 1

        missing = admit(server, "missing")
        assert (missing["allowed"], missing["status"]["code"]) == (False, 403)
        assert 'RuntimeClass "missing" not found' in missing["status"]["message"]

        fake.stop()
        assert overhead(admit(server, "gvisor")) == {"memory": "120Mi"}
        started = time.monotonic()
        failed = admit(server, "unknown")
        assert time.monotonic() - started < 3 * LOOKUP_TIMEOUT
        assert failed["allowed"] is False
        assert (failed["status"]["code"], failed["status"]["reason"]) == (500, "InternalError")
        assert "cluster lookup failed: get runtimeclasses/unknown: " in failed["status"]["message"]
        assert server.request("GET", "/readyz")[0] == 200
        metrics = server.request("GET", "/metrics")[1].decode()
        assert (
            'placement_webhooks_cluster_lookups_total{resource="runtimeclasses",result="error"} 1'
            in metrics
        )
