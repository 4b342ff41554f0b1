"""Sending a corpus to one API server: its namespaces and cluster objects, then every request.

Why raw HTTP (:meth:`ApiServer.call`) and a thread pool: the corpus is hundreds of requests
per server, and the Python client's model objects would both slow them down and drop what
the comparison reads; the API server and ``serve`` answer requests in parallel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from controlplane.harness.components import ApiServer
from tests.controlplane.differential.corpus import Case, Observed, observe, updated

WORKERS = 8


def _ensure(api: ApiServer, path: str, body: dict[str, Any]) -> None:
    answer = api.call("POST", path, body)
    if answer.status not in (201, 409):
        raise RuntimeError(f"{api.name}: POST {path}: {answer.status} {answer.message}")


def prepare(api: ApiServer, corpus: Sequence[Case]) -> None:
    """Create every Namespace (with its ``default`` ServiceAccount) and cluster object once."""
    namespaces = {c.namespace["metadata"]["name"]: c.namespace for c in corpus}
    cluster = {(o["kind"], o["metadata"]["name"]): o for c in corpus for o in c.cluster}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}

    def namespace(obj: dict[str, Any]) -> None:
        _ensure(api, "/api/v1/namespaces", obj)
        _ensure(api, f"/api/v1/namespaces/{obj['metadata']['name']}/serviceaccounts", account)

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(namespace, namespaces.values()))
        list(pool.map(lambda o: _ensure(api, _cluster_path(o), o), cluster.values()))


def _cluster_path(obj: dict[str, Any]) -> str:
    if obj["kind"] == "RuntimeClass":
        return "/apis/node.k8s.io/v1/runtimeclasses"
    raise ValueError(f"no path known for cluster object kind {obj['kind']}")


def run_case(api: ApiServer, case: Case) -> Observed:
    """Send one case: the CREATE, then the UPDATE of what was stored (when it was)."""
    namespace = case.namespace["metadata"]["name"]
    pods = f"/api/v1/namespaces/{namespace}/pods"
    generate = case.request.pod["metadata"].get("generateName", "")
    created = api.call("POST", pods, case.request.pod)
    seen = observe("create", created.status, created.body, generate)
    if case.request.update is None or not seen.allowed:
        return seen
    stored = created.body
    answer = api.call(
        "PUT", f"{pods}/{stored['metadata']['name']}", updated(stored, case.request.update)
    )
    return observe("update", answer.status, answer.body, generate)


def run(api: ApiServer, corpus: Iterable[Case]) -> dict[str, Observed]:
    """Every case of ``corpus`` sent to ``api``; the observations by case id."""
    cases = list(corpus)
    prepare(api, cases)
    with ThreadPoolExecutor(WORKERS) as pool:
        observed = list(pool.map(lambda c: run_case(api, c), cases))
    return {case.id: seen for case, seen in zip(cases, observed, strict=True)}
