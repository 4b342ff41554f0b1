"""``export`` for one Kubernetes release: the version it is told or reads, the API version of
its MutatingAdmissionPolicies, and the halves whose CEL the release refuses.

What the API server does with the objects is tests/controlplane/test_native_* on each
release; these tests pin the choices, which need no Go.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from tests.command import invoke_cli
from webhooks.core.config import load_config
from webhooks.export import NOT_EXPORTED, export, webhook_halves
from webhooks.export.cel import library_calls
from webhooks.k8s.releases import (
    CEL_LIBRARIES,
    CEL_LISTS,
    CEL_OPTIONAL,
    CEL_QUANTITY,
    CEL_STRINGS,
    CEL_TWO_VARIABLE,
    NEWEST,
    RELEASES,
    Release,
    release,
)
from webhooks.plugins import REGISTRY

EVERYTHING: dict[str, Any] = {
    "plugins": {
        "pod-node-selector": {"enabled": True, "clusterDefaultNodeSelector": "tier=general"},
        "default-toleration-seconds": {"namespaceOverrides": True},
        "dedicated-nodes": {"enabled": True},
        "anti-affinity-topology": {"enabled": True},
        "extended-resource-toleration": {
            "enforce": {
                "guarded": [
                    {"taintKey": "example.com/gpu", "earnedBy": {"resources": ["example.com/gpu"]}}
                ]
            }
        },
    }
}
MUTATING_KINDS = ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")


def _export(document: Any, row: Release, *, hybrid: bool = False) -> Any:
    return export(load_config(document, REGISTRY), REGISTRY, hybrid=hybrid, release=row)


def _invoke(*args: str) -> Result:
    return invoke_cli(["export", *args])


def _api_versions(result: Result) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for doc in yaml.safe_load_all(result.stdout):
        if doc:
            found.setdefault(doc["kind"], set()).add(doc["apiVersion"])
    return found


# --------------------------------------------------------------------------- the version


@pytest.mark.parametrize(
    ("args", "mutating"),
    [
        pytest.param([], "v1", id="without a version export writes for the newest release"),
        pytest.param(["--kubernetes-version", "1.34"], "v1beta1", id="1.34 gets v1beta1"),
        pytest.param(
            ["--kubernetes-version", "v1.34.4"], "v1beta1", id="a patch release names its minor"
        ),
        pytest.param(
            ["--kubernetes-version", "v1.35.4-eks-4a5b6c"],
            "v1beta1",
            id="a vendor suffix is read past",
        ),
        pytest.param(["--kubernetes-version", "1.36"], "v1", id="1.36 gets v1"),
        pytest.param(["--kubernetes-version", "v1.37.2"], "v1", id="1.37 gets v1"),
        pytest.param(
            ["--kubernetes-version", "1.40"],
            "v1",
            id="a release newer than the table is the newest",
        ),
    ],
)
def test_the_mutating_policies_are_at_the_api_version_the_release_serves(
    args: list[str], mutating: str
) -> None:
    plugins = ("--plugin", "anti-affinity-topology", "--plugin", "default-toleration-seconds")
    result = _invoke(*plugins, *args)
    assert result.exit_code == 0, result.output
    found = _api_versions(result)
    for kind in MUTATING_KINDS:
        assert found[kind] == {f"admissionregistration.k8s.io/{mutating}"}
    assert found["ValidatingAdmissionPolicy"] == {"admissionregistration.k8s.io/v1"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--kubernetes-version", "1.33"],
            "--kubernetes-version: Kubernetes 1.33 is not supported (supported: 1.34, 1.35, "
            "1.36, 1.37)",
            id="a release below the oldest is refused, naming the supported ones",
        ),
        pytest.param(
            ["--kubernetes-version", "latest"],
            "--kubernetes-version: 'latest' is not a Kubernetes version",
            id="a word is not a version",
        ),
        pytest.param(
            ["--kubernetes-version", "1.34", "--kubeconfig", "/nonexistent"],
            "--kubernetes-version and --kubeconfig both say which release",
            id="a version and a kubeconfig together are refused",
        ),
        pytest.param(
            ["--context", "prod"], "--context needs --kubeconfig", id="a context alone is refused"
        ),
    ],
)
def test_an_unusable_version_exits_2_in_one_line(args: list[str], message: str) -> None:
    result = _invoke(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture
def server_at(tmp_path: Path) -> Iterator[Any]:
    """A kubeconfig for a stub API server whose ``/version`` says what the test sets."""
    answer: dict[str, str] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(answer).encode()
            self.send_response(200 if self.path.rstrip("/") == "/version" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )

    def at(git_version: str, raw: dict[str, str] | None = None) -> str:
        """The kubeconfig, for a server at ``git_version`` (or answering ``raw`` as it is)."""
        if raw is not None:
            answer.clear()
            answer.update(raw)
            return str(kubeconfig)
        major, minor = git_version.lstrip("v").split(".")[:2]
        answer.update(
            major=major,
            minor=minor,
            gitVersion=git_version,
            gitCommit="0" * 40,
            gitTreeState="clean",
            buildDate="2026-01-01T00:00:00Z",
            goVersion="go1.26.0",
            compiler="gc",
            platform="linux/amd64",
        )
        return str(kubeconfig)

    yield at
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("git_version", "mutating"),
    [
        pytest.param("v1.34.4-gke.1200", "v1beta1", id="a 1.34 cluster gets v1beta1"),
        pytest.param("v1.36.3", "v1", id="a 1.36 cluster gets v1"),
    ],
)
def test_kubeconfig_reads_the_release_from_the_api_server(
    server_at: Any, git_version: str, mutating: str
) -> None:
    result = _invoke(
        "--plugin", "default-toleration-seconds", "--kubeconfig", server_at(git_version)
    )
    assert result.exit_code == 0, result.output
    assert _api_versions(result)["MutatingAdmissionPolicy"] == {
        f"admissionregistration.k8s.io/{mutating}"
    }


def test_a_cluster_below_the_oldest_release_is_refused_naming_the_supported_ones(
    server_at: Any,
) -> None:
    result = _invoke("--kubeconfig", server_at("v1.33.9"))
    assert result.exit_code == 2
    assert "--kubeconfig: Kubernetes 1.33 is not supported (supported: 1.34" in result.stderr


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        pytest.param(
            {"major": "1"}, "the answer has no gitVersion", id="an answer without gitVersion"
        ),
        pytest.param(
            {"gitVersion": "v1.36.3", "pad": " " * 70_000},
            "the answer is over 65536 bytes",
            id="an answer past the size bound",
        ),
    ],
)
def test_a_version_that_cannot_be_read_is_refused_not_assumed(
    server_at: Any, answer: dict[str, str], reason: str
) -> None:
    result = _invoke("--kubeconfig", server_at("", raw=answer))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"placement-webhooks: --kubeconfig: cannot read the API server's version: {reason}"
    ]


# --------------------------------------------------------------------------- v1beta1


@pytest.mark.parametrize("row", RELEASES, ids=[f"Kubernetes {r.name}" for r in RELEASES])
def test_only_the_api_version_differs_between_releases_where_nothing_is_refused(
    row: Release,
) -> None:
    """The v1beta1 and v1 MutatingAdmissionPolicy have the same fields, spelt the same
    (k8s.io/api v0.34.4 admissionregistration/v1beta1 against v0.37.2's v1)."""
    exported = _export(EVERYTHING, row)
    newest = _export(EVERYTHING, NEWEST)
    if exported.refused:
        pytest.skip(f"{row.name} refuses {sorted(exported.refused)}")
    assert exported.lines == newest.lines
    for mine, theirs in zip(exported.objects, newest.objects, strict=True):
        version = (
            row.mutating_policy_api if mine["kind"] in MUTATING_KINDS else theirs["apiVersion"]
        )
        assert mine == {**theirs, "apiVersion": version}


# --------------------------------------------------------------------------- the CEL


@pytest.mark.parametrize(
    ("expression", "libraries"),
    [
        pytest.param("size(object.spec.tolerations) > 0", {}, id="plain CEL calls no library"),
        pytest.param(
            "lists.range(3).map(i, i)",
            {CEL_LISTS: ["lists.range"]},
            id="lists.range is the lists library",
        ),
        pytest.param(
            "x.filter(n, n != '').distinct().sort()",
            {CEL_LISTS: ["distinct", "sort"]},
            id="distinct and sort are the lists library",
        ),
        pytest.param(
            "m.transformMap(k, v, string(v))",
            {CEL_TWO_VARIABLE: ["transformMap"]},
            id="transformMap is a two-variable comprehension",
        ),
        pytest.param(
            "l.exists(i, v, v > i) && l.exists(v, v > 0)",
            {CEL_TWO_VARIABLE: ["exists"]},
            id="exists with two variables is one, with one it is plain CEL",
        ),
        pytest.param(
            "object.metadata.?labels.orValue({})",
            {CEL_OPTIONAL: [".?labels", "orValue"]},
            id="optional field selection is the optional types",
        ),
        pytest.param(
            "quantity(string(q)).compareTo(quantity('1')) == 0",
            {CEL_QUANTITY: ["quantity"]},
            id="quantity is the quantity library",
        ),
        pytest.param(
            "s.split('/')[0].trim()", {CEL_STRINGS: ["split", "trim"]}, id="split is strings"
        ),
        pytest.param(
            "'call lists.range(3) and .sort()' + \"x.flatten()\"",
            {},
            id="a call named inside a string literal is no call",
        ),
    ],
)
def test_an_expression_s_libraries_are_found_by_their_calls(
    expression: str, libraries: dict[str, list[str]]
) -> None:
    assert library_calls(expression) == libraries


def test_every_library_the_table_names_is_detected() -> None:
    from webhooks.export.cel import LIBRARY_CALLS

    assert set(LIBRARY_CALLS) == set(CEL_LIBRARIES)


@pytest.mark.parametrize(
    ("minor", "environment", "lists"),
    [
        pytest.param((1, 34), (1, 33), False, id="1.34 compiles new expressions as 1.33"),
        pytest.param((1, 35), (1, 34), True, id="1.35 offers the lists library"),
        pytest.param((1, 36), (1, 35), True, id="1.36 offers the lists library"),
        pytest.param((1, 37), (1, 36), True, id="1.37 offers the lists library"),
    ],
)
def test_a_release_compiles_new_expressions_one_minor_below_itself(
    minor: tuple[int, int], environment: tuple[int, int], lists: bool
) -> None:
    row = release(f"{minor[0]}.{minor[1]}")
    assert row.cel_environment == environment
    assert row.cel_offers(CEL_LISTS) is lists
    assert row.cel_offers(CEL_TWO_VARIABLE)


def _expressions(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("expression", "messageExpression") and isinstance(item, str):
                yield item
            else:
                yield from _expressions(item)
    elif isinstance(value, list):
        for item in value:
            yield from _expressions(item)


@pytest.mark.parametrize("row", RELEASES, ids=[f"Kubernetes {r.name}" for r in RELEASES])
@pytest.mark.parametrize("hybrid", [False, True], ids=["whole", "hybrid"])
def test_no_exported_expression_calls_a_library_the_release_refuses(
    row: Release, hybrid: bool
) -> None:
    exported = _export(EVERYTHING, row, hybrid=hybrid)
    for obj in exported.objects:
        for expression in _expressions(obj):
            assert all(row.cel_offers(lib) for lib in library_calls(expression)), expression


@pytest.mark.parametrize(
    ("plugin", "halves"),
    [
        pytest.param(
            "runtime-class",
            {"mutate"},
            id="RuntimeClass's merge (lists.range, sort, distinct) is refused, not its refusal",
        ),
        pytest.param(
            "extended-resource-toleration",
            {"mutate", "validate"},
            id="ExtendedResourceToleration (flatten, distinct, sort) is refused",
        ),
        pytest.param("default-toleration-seconds", set(), id="DefaultTolerationSeconds is not"),
        pytest.param("daemonset-tolerations", set(), id="the DaemonSet defaults are not"),
        pytest.param("taint-toleration-rules", set(), id="the toleration rules are not"),
        pytest.param("pod-node-selector", set(), id="PodNodeSelector is not"),
        pytest.param("dedicated-nodes", set(), id="dedicated-nodes is not"),
        pytest.param("anti-affinity-topology", set(), id="anti-affinity-topology is not"),
    ],
)
def test_on_1_34_a_half_that_needs_the_lists_library_is_refused_naming_it(
    plugin: str, halves: set[str]
) -> None:
    exported = _export(EVERYTHING, release("1.34"))
    assert {phase for name, phase in exported.refused if name == plugin} == halves
    line = next(line for line in exported.lines if line.subject == f"plugins.{plugin}")
    if not halves:
        assert "Kubernetes 1.34" not in line.why
        return
    assert "on Kubernetes 1.34 its " in line.why
    assert f"CEL's {CEL_LISTS} library (" in line.why
    assert "Kubernetes 1.35 offers it" in line.why
    assert "1.33 CEL environment" in line.why
    if halves == {"mutate", "validate"}:
        assert line.verdict == NOT_EXPORTED


@pytest.mark.parametrize("row", RELEASES[1:], ids=[f"Kubernetes {r.name}" for r in RELEASES[1:]])
def test_from_1_35_nothing_is_refused(row: Release) -> None:
    assert _export(EVERYTHING, row).refused == frozenset()


# --------------------------------------------------------------------------- hybrid


@pytest.mark.parametrize("row", RELEASES, ids=[f"Kubernetes {r.name}" for r in RELEASES])
def test_the_webhook_keeps_what_the_release_refuses_and_webhook_config_registers_it(
    row: Release,
) -> None:
    exported = _export(EVERYTHING, row, hybrid=True)
    assert exported.refused <= exported.webhook
    assert webhook_halves(load_config(EVERYTHING, REGISTRY), REGISTRY, row) == exported.webhook
    assert not any(half in exported.native for half in exported.refused)


@pytest.mark.parametrize(
    "version", ["1.34", "1.37"], ids=["webhook-config on 1.34", "webhook-config on 1.37"]
)
def test_webhook_config_native_registers_the_halves_export_hybrid_leaves_to_it(
    tmp_path: Path, version: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(EVERYTHING))
    result = invoke_cli(
        ["webhook-config", "--config", str(config), "--native", "--kubernetes-version", version]
    )
    assert result.exit_code == 0, result.output
    kept = _export(EVERYTHING, release(version), hybrid=True).webhook
    paths = {
        rule_path
        for doc in yaml.safe_load_all(result.stdout)
        if doc
        for hook in doc["webhooks"]
        for rule_path in [hook["clientConfig"]["service"]["path"]]
    }
    phases = {phase for _, phase in kept}
    assert paths == {f"/{phase}" for phase in phases}
    mutating = [d for d in yaml.safe_load_all(result.stdout) if d and "Mutating" in d["kind"]]
    assert bool(mutating) == ("mutate" in phases)
