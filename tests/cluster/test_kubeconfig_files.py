"""Which kubeconfig files, context and namespace kubectl would use, and the client with them.

kubectl reads ``--kubeconfig`` alone, else every file ``$KUBECONFIG`` lists (missing ones
skipped), else ``~/.kube/config``; merged, the first file to set the current context, or
to define a context of a name, wins. The ``kubernetes`` client merges the list too but
takes the last file's current context: :func:`load_configuration` names the first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhooks.cluster.kubeconfig import (
    ClusterError,
    context_namespace,
    current_context,
    kubeconfig_files,
    load_configuration,
)


def _kubeconfig(path: Path, current: str | None, **contexts: str | None) -> str:
    """A kubeconfig at ``path`` with one cluster per context (``https://<context>.test``),
    each context's namespace as given (``None``: none)."""
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": c, "cluster": {"server": f"https://{c}.test"}} for c in contexts],
        "users": [{"name": c, "user": {"token": "t"}} for c in contexts],
        "contexts": [
            {
                "name": c,
                "context": {"cluster": c, "user": c, **({"namespace": ns} if ns else {})},
            }
            for c, ns in contexts.items()
        ],
    }
    if current:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.fixture
def two(tmp_path: Path) -> tuple[str, str]:
    """Two kubeconfigs that both set a current context and both define ``shared``."""
    first = _kubeconfig(tmp_path / "first", "alpha", alpha="alpha-ns", shared="from-first")
    second = _kubeconfig(tmp_path / "second", "beta", beta="beta-ns", shared="from-second")
    return first, second


@pytest.mark.parametrize(
    ("kubeconfig", "listed", "expected"),
    [
        pytest.param(
            "/k/one", "/a:/b", ["/k/one"], id="--kubeconfig alone is read, not $KUBECONFIG"
        ),
        pytest.param("", "/a:/b", ["/a", "/b"], id="$KUBECONFIG's list is read in its order"),
        pytest.param("", "/a::/b:", ["/a", "/b"], id="empty entries of the list are skipped"),
        pytest.param("", "", ["HOME/.kube/config"], id="without either ~/.kube/config is read"),
    ],
)
def test_the_files_kubectl_reads(
    kubeconfig: str, listed: str, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    environ = {"KUBECONFIG": listed.replace(":", os.pathsep)} if listed else {}
    found = kubeconfig_files(kubeconfig, environ)
    assert found == [e.replace("HOME", "/home/me") for e in expected]


@pytest.mark.parametrize(
    ("order", "context", "expected"),
    [
        pytest.param((0, 1), "", "alpha-ns", id="the first file's current context wins"),
        pytest.param((1, 0), "", "beta-ns", id="listed the other way round the other one wins"),
        pytest.param((0, 1), "shared", "from-first", id="a context both define is the first's"),
        pytest.param((1, 0), "shared", "from-second", id="whichever file comes first"),
        pytest.param((0, 1), "beta", "beta-ns", id="a context of the second file is found"),
    ],
)
def test_the_namespace_of_a_merged_kubeconfig_list(
    two: tuple[str, str], order: tuple[int, int], context: str, expected: str
) -> None:
    environ = {"KUBECONFIG": os.pathsep.join(two[i] for i in order)}
    assert context_namespace("", context, environ, token_path="/nonexistent") == expected


def test_missing_files_in_the_list_are_skipped(two: tuple[str, str], tmp_path: Path) -> None:
    environ = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "gone"), two[1]])}
    assert current_context(kubeconfig_files("", environ)) == "beta"
    assert context_namespace("", "", environ, token_path="/nonexistent") == "beta-ns"


@pytest.mark.parametrize(
    ("current", "namespace", "expected"),
    [
        pytest.param("alpha", "team-a", "team-a", id="the current context's namespace"),
        pytest.param("alpha", None, None, id="a context without a namespace sets none"),
        pytest.param(None, None, None, id="no current context sets none"),
    ],
)
def test_a_single_file(
    tmp_path: Path, current: str | None, namespace: str | None, expected: str | None
) -> None:
    path = _kubeconfig(tmp_path / "config", current, alpha=namespace)
    assert context_namespace(path, "", {}, token_path="/nonexistent") == expected


def test_no_kubeconfig_at_all_sets_no_namespace(tmp_path: Path) -> None:
    environ = {"KUBECONFIG": str(tmp_path / "nothing-here")}
    assert context_namespace("", "", environ, token_path="/nonexistent") is None


@pytest.mark.parametrize(
    ("content", "context", "message"),
    [
        pytest.param(None, "prod", "no context named 'prod'", id="an unknown context is an error"),
        pytest.param("[a, b]", "", "not a mapping", id="a file that is not a mapping is an error"),
        pytest.param("a: [", "", "kubeconfig ", id="a file that is not YAML is an error"),
    ],
)
def test_unusable_kubeconfigs_are_one_line_errors(
    tmp_path: Path, content: str | None, context: str, message: str
) -> None:
    path = tmp_path / "config"
    if content is None:
        _kubeconfig(path, "alpha", alpha="a")
    else:
        path.write_text(content)
    with pytest.raises(ClusterError, match=message) as info:
        context_namespace(str(path), context, {}, token_path="/nonexistent")
    assert "\n" not in str(info.value)


def test_inside_a_pod_the_service_accounts_namespace(tmp_path: Path) -> None:
    token, namespace = tmp_path / "token", tmp_path / "namespace"
    token.write_text("t")
    namespace.write_text("placement-webhooks\n")
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    found = context_namespace("", "", environ, token_path=str(token), namespace_path=str(namespace))
    assert found == "placement-webhooks"


def test_the_client_talks_to_the_first_files_current_context(
    two: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(two))
    assert load_configuration("kubeconfig").host == "https://alpha.test"
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(reversed(two)))
    assert load_configuration("kubeconfig").host == "https://beta.test"
    assert load_configuration("kubeconfig", context="alpha").host == "https://alpha.test"
