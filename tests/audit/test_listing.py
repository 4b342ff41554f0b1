"""Paged lists, retries and report writes through the real kubernetes client, on the fake."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import stored as cluster
from tests.fakeapi import FakeApiServer, Request, refused_port, write_kubeconfig
from webhooks.audit.reports import OPENREPORTS
from webhooks.cluster.kubeconfig import load_configuration
from webhooks.cluster.listing import KINDS, ApiError, ClusterError, Lister, Paging, connect

PODS = KINDS["Pod"]


@pytest.fixture
def naps() -> list[float]:
    """The pauses a lister took between attempts (it never really sleeps in these tests)."""
    return []


@pytest.fixture
def lister(fake: FakeApiServer, tmp_path: Path, naps: list[float]) -> Iterator[Lister]:
    configuration = load_configuration("kubeconfig", str(fake.kubeconfig(tmp_path / "kc")))
    with Lister(configuration, Paging(page_size=2, read=5.0), sleep=naps.append) as made:
        yield made


def put_pods(fake: FakeApiServer, count: int, namespace: str = "shop") -> None:
    for i in range(count):
        fake.put(cluster.pod(f"p{i}", namespace))


def lists(fake: FakeApiServer) -> list[dict[str, str]]:
    return fake.queries("list", "pods")


def test_a_collection_is_read_page_by_page_with_kind_and_api_version(
    fake: FakeApiServer, lister: Lister
) -> None:
    put_pods(fake, 5)
    pages = list(lister.pages(PODS))
    assert [len(page) for page in pages] == [2, 2, 1]
    assert {(p["kind"], p["apiVersion"]) for page in pages for p in page} == {("Pod", "v1")}
    assert [q.get("limit") for q in lists(fake)] == ["2", "2", "2"]
    assert [q.get("continue") for q in lists(fake)] == [None, "shop/p1", "shop/p3"]


def test_one_namespace_is_listed_at_its_own_path(fake: FakeApiServer, lister: Lister) -> None:
    put_pods(fake, 2, "shop")
    put_pods(fake, 3, "other")
    names = [p["metadata"]["name"] for p in lister.items(PODS, "other")]
    assert names == ["p0", "p1", "p2"]
    assert {r.path for r in fake.requests} == {"/api/v1/namespaces/other/pods"}


def failing(times: int, answer: int | str, page: int = 2) -> Callable[[Request], Any]:
    """A fault: the ``page``-th page (1-based) of a pod list fails ``times`` times."""
    tokens: list[str] = []
    failed = [0]

    def fault(request: Request) -> Any:
        if request.kind != "list" or request.plural != "pods":
            return None
        token = request.query.get("continue", [""])[-1]
        if token not in tokens:
            tokens.append(token)
        if tokens.index(token) == page - 1 and failed[0] < times:
            failed[0] += 1
            return answer
        return None

    return fault


@pytest.mark.parametrize(
    "answer",
    [500, 503, 429, "drop"],
    ids=[
        "an internal error",
        "an unavailable server",
        "too many requests",
        "a connection closed without an answer",
    ],
)
def test_a_page_that_fails_for_a_moment_is_asked_again_with_the_same_token(
    fake: FakeApiServer, lister: Lister, naps: list[float], answer: int | str
) -> None:
    put_pods(fake, 5)
    fake.fault = failing(2, answer)
    assert len(list(lister.items(PODS))) == 5
    assert [q.get("continue") for q in lists(fake)] == [None, *["shop/p1"] * 3, "shop/p3"]
    assert naps == [0.5, 1.0], "the pause doubles"


def test_a_page_that_keeps_failing_ends_the_list_naming_the_resource(
    fake: FakeApiServer, lister: Lister, naps: list[float]
) -> None:
    put_pods(fake, 5)
    fake.fault = failing(99, 500)
    with pytest.raises(ApiError) as info:
        list(lister.items(PODS))
    assert str(info.value) == (
        "list pods: HTTP 500: Internal error occurred: etcdserver: leader changed (4 attempts)"
    )
    assert len(lists(fake)) == 1 + 4
    assert naps == [0.5, 1.0, 2.0]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (403, "list pods in namespace shop: HTTP 403: refused (403)"),
        (404, "list pods in namespace shop: HTTP 404: refused (404)"),
        (401, "list pods in namespace shop: HTTP 401: refused (401)"),
    ],
    ids=["forbidden", "not found", "unauthorized"],
)
def test_a_refusal_is_an_answer_and_is_not_asked_again(
    fake: FakeApiServer, lister: Lister, code: int, message: str
) -> None:
    put_pods(fake, 1)
    fake.fault = failing(99, code, page=1)
    with pytest.raises(ApiError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        list(lister.items(PODS, "shop"))
    assert len(lists(fake)) == 1


def test_an_expired_continue_token_goes_on_with_the_one_the_server_sends(
    fake: FakeApiServer, lister: Lister, naps: list[float]
) -> None:
    put_pods(fake, 5)
    fake.fault = failing(1, 410)
    assert [p["metadata"]["name"] for p in lister.items(PODS)] == ["p0", "p1", "p2", "p3", "p4"]
    assert naps == []


def test_an_expired_continue_without_a_new_token_ends_the_list(
    fake: FakeApiServer, lister: Lister
) -> None:
    put_pods(fake, 5)
    fake.fault = failing(1, 410)
    fake.fault_status = lambda code, token: {"kind": "Status", "code": 410}  # type: ignore[method-assign]
    with pytest.raises(ApiError, match="changed too much to continue"):
        list(lister.items(PODS))


def test_a_server_that_goes_away_mid_list_ends_it_with_the_resource_named(
    fake: FakeApiServer, lister: Lister
) -> None:
    put_pods(fake, 5)
    pages = lister.pages(PODS)
    next(pages)
    fake.stop()
    with pytest.raises(ApiError) as info:
        next(pages)
    assert str(info.value).startswith("list pods: cannot connect: ")
    assert str(info.value).endswith("(4 attempts)")


def test_an_unreachable_api_server_is_one_line(tmp_path: Path, naps: list[float]) -> None:
    with refused_port() as port:
        kubeconfig = write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}")
        lister = Lister(load_configuration("kubeconfig", str(kubeconfig)), sleep=naps.append)
        with lister, pytest.raises(ApiError) as info:
            list(lister.items(KINDS["Namespace"]))
    assert str(info.value).startswith("list namespaces: cannot connect: ")
    assert "\n" not in str(info.value)


def test_a_label_selector_is_sent_and_honoured(fake: FakeApiServer, lister: Lister) -> None:
    fake.put(cluster.pod("a", "shop", labels={"app": "web"}))
    fake.put(cluster.pod("b", "shop", labels={"app": "db"}))
    names = [p["metadata"]["name"] for p in lister.items(PODS, None, "app=web")]
    assert names == ["a"]
    assert lists(fake)[0]["labelSelector"] == "app=web"


def test_a_report_is_applied_server_side_and_deleted(fake: FakeApiServer, lister: Lister) -> None:
    body = {
        "apiVersion": "openreports.io/v1alpha1",
        "kind": "Report",
        "metadata": {"name": "placement-webhooks", "namespace": "shop"},
        "summary": {"fail": 0},
        "results": [],
    }
    lister.apply(OPENREPORTS.namespaced, "placement-webhooks", body, "placement-webhooks", "shop")
    (patch,) = [r for r in fake.requests if r.kind == "patch"]
    assert patch.path == "/apis/openreports.io/v1alpha1/namespaces/shop/reports/placement-webhooks"
    assert patch.headers["content-type"] == "application/apply-patch+yaml"
    assert {k: v[-1] for k, v in patch.query.items()} == {
        "fieldManager": "placement-webhooks",
        "force": "true",
        "fieldValidation": "Strict",
    }
    assert [r["metadata"]["name"] for r in fake.stored("reports", "shop")] == ["placement-webhooks"]
    lister.delete(OPENREPORTS.namespaced, "placement-webhooks", "shop")
    assert fake.stored("reports") == []
    lister.delete(OPENREPORTS.namespaced, "placement-webhooks", "shop")  # gone: still fine


def test_a_report_the_crd_refuses_is_one_line_naming_it(
    fake: FakeApiServer, lister: Lister
) -> None:
    body = {
        "apiVersion": "openreports.io/v1alpha1",
        "kind": "ClusterReport",
        "metadata": {"name": "placement-webhooks"},
        "results": [{"policy": "p", "result": "bad"}],
    }
    with pytest.raises(ApiError) as info:
        lister.apply(OPENREPORTS.cluster, "placement-webhooks", body, "placement-webhooks")
    assert str(info.value).startswith(
        "apply clusterreports.openreports.io placement-webhooks: HTTP 422: "
    )


def test_a_report_naming_a_field_its_crd_lacks_is_refused_once_not_retried(
    fake: FakeApiServer, lister: Lister
) -> None:
    body = {
        "apiVersion": "openreports.io/v1alpha1",
        "kind": "Report",
        "metadata": {"name": "placement-webhooks", "namespace": "shop"},
        "results": [{"policy": "p", "result": "fail", "colour": "red"}],
    }
    with pytest.raises(ApiError) as info:
        lister.apply(
            OPENREPORTS.namespaced, "placement-webhooks", body, "placement-webhooks", "shop"
        )
    assert str(info.value) == (
        "apply reports.openreports.io shop/placement-webhooks: HTTP 500: failed to create typed "
        "patch object (shop/placement-webhooks; openreports.io/v1alpha1, Kind=Report): "
        ".results[0].colour: field not declared in schema"
    ), "one line, and no '(4 attempts)': the body is at fault"
    assert len([r for r in fake.requests if r.kind == "patch"]) == 1


# -- connecting -------------------------------------------------------------------------------


def test_without_flags_outside_a_pod_kubectls_kubeconfig_is_used(
    fake: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(fake.kubeconfig(tmp_path / "kc")))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    fake.put(cluster.namespace("shop"))
    with connect() as lister:
        assert [n["metadata"]["name"] for n in lister.items(KINDS["Namespace"])] == ["shop"]


def test_inside_a_pod_without_flags_the_service_account_is_used(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t")
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ClusterError, match=r"^in-cluster config: "):
        connect(environ=env, token_path=str(token))  # this test runs in no pod: no CA file


def test_a_missing_kubeconfig_is_a_cluster_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match=f"^kubeconfig {tmp_path}/none: "):
        connect(str(tmp_path / "none"))


def test_an_unknown_context_is_a_cluster_error(fake: FakeApiServer, tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="prod"):
        connect(str(fake.kubeconfig(tmp_path / "kc")), "prod")
