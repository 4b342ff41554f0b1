"""``kubectl placement``: kubectl's flags in either position reach each command as its own.

The group is built over the main group's commands with their callbacks replaced by a
recorder, so what kubectl's ``--kubeconfig``, ``--context`` and ``-n`` become is read off
each command's own parameters without a cluster. The real commands run as the real console
script in the last tests and against the real control plane in
``tests/controlplane/test_kubectl_plugin.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner

from tests.command import ROOT
from webhooks.cli import kubectl
from webhooks.cli import main as root

K = "/k/config"


def _kubeconfig(path: Path, namespace: str) -> Path:
    """One context, ``here``, current, whose namespace is ``namespace``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "here", "cluster": {"server": "https://here.test"}}],
        "users": [{"name": "here", "user": {"token": "t"}}],
        "contexts": [
            {
                "name": "here",
                "context": {
                    "cluster": "here",
                    "user": "here",
                    **({"namespace": namespace} if namespace else {}),
                },
            }
        ],
        "current-context": "here",
    }
    path.write_text(yaml.safe_dump(config))
    return path


class Recorded(Exception):
    """What reached a command: its parameters as its callback received them."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        self.params = params


def _recording(command: click.Command) -> click.Command:
    """``command`` with its parameters and a callback that records and stops."""

    def record(**params: Any) -> None:
        raise Recorded(params)

    return click.Command(command.name, params=command.params, callback=record)


def _invoke(args: list[str], kubeconfig: Path) -> dict[str, Any]:
    group = kubectl.plugin_group({n: _recording(c) for n, c in root.commands.items()})
    env = {"KUBECONFIG": str(kubeconfig), "KUBERNETES_SERVICE_HOST": None}
    result = CliRunner().invoke(group, args, env=env)
    assert isinstance(result.exception, Recorded), result.output
    return result.exception.params


#: (arguments, the command's parameters expected among what reached it). ``CTX`` stands for
#: the context's namespace (``ctx-ns``), ``LIST`` for $KUBECONFIG.
CASES = [
    pytest.param(["-n", "team-a", "audit"], {"namespaces": ("team-a",)}, id="-n before audit"),
    pytest.param(["audit", "-n", "team-a"], {"namespaces": ("team-a",)}, id="-n after audit"),
    pytest.param(
        ["audit", "--namespace", "a", "-n", "b"],
        {"namespaces": ("a", "b")},
        id="audit's -n stays repeatable after the command",
    ),
    pytest.param(
        ["-n", "a", "audit", "-n", "b"], {"namespaces": ("b",)}, id="-n after the command wins"
    ),
    pytest.param(
        ["audit"],
        {"namespaces": (), "kubeconfig": None, "kube_context": None},
        id="audit without -n covers the cluster, not the context's namespace",
    ),
    pytest.param(
        ["--kubeconfig", K, "--context", "c", "audit"],
        {"kubeconfig": K, "kube_context": "c"},
        id="--kubeconfig and --context before audit",
    ),
    pytest.param(
        ["audit", "--kubeconfig", K, "--context", "c"],
        {"kubeconfig": K, "kube_context": "c"},
        id="--kubeconfig and --context after audit",
    ),
    pytest.param(
        ["--kubeconfig", "/k/before", "audit", "--kubeconfig", K],
        {"kubeconfig": K},
        id="--kubeconfig after the command wins",
    ),
    pytest.param(
        ["check", "x.yaml"],
        {"namespace": "CTX", "paths": ("x.yaml",)},
        id="check puts objects without a namespace in the context's, as kubectl apply",
    ),
    pytest.param(
        ["-n", "a", "check", "x.yaml"], {"namespace": "a"}, id="-n before check is its namespace"
    ),
    pytest.param(
        ["check", "x.yaml", "-n", "a"], {"namespace": "a"}, id="-n after check is its namespace"
    ),
    pytest.param(
        ["explain"],
        {"kubeconfig": "", "kube_context": None, "namespace": "CTX"},
        id="explain reads the current context's cluster and places its namespace's pods",
    ),
    pytest.param(
        ["explain", "--context", "here", "-n", "a"],
        {"kubeconfig": "LIST", "kube_context": "here", "namespace": "a"},
        id="explain --context reads that context of $KUBECONFIG's files",
    ),
    pytest.param(
        ["explain", "--nodes", "nodes.yaml"],
        {"kubeconfig": None, "kube_context": None, "node_paths": ("nodes.yaml",)},
        id="explain --nodes reads no cluster",
    ),
    pytest.param(
        ["export"],
        {"namespace": "placement-webhooks", "kubeconfig": None},
        id="export without flags keeps its defaults and reads no cluster",
    ),
    pytest.param(
        ["-n", "pw", "export"], {"namespace": "pw"}, id="-n before export names the suite's"
    ),
    pytest.param(
        ["export", "--context", "here"],
        {"kubeconfig": "LIST", "kube_context": "here"},
        id="export --context reads the release from that context of $KUBECONFIG's files",
    ),
]


@pytest.mark.parametrize(("args", "expected"), CASES)
def test_kubectls_flags_reach_the_command(
    tmp_path: Path, args: list[str], expected: dict[str, Any]
) -> None:
    config = _kubeconfig(tmp_path / "config", "ctx-ns")
    got = _invoke(args, config)
    names = {"CTX": "ctx-ns", "LIST": str(config)}
    assert {k: got[k] for k in expected} == {
        k: names.get(v, v) if isinstance(v, str) else v for k, v in expected.items()
    }
    assert not {k for k in got if k.startswith("kubectl_")}


def test_check_without_any_kubeconfig_keeps_its_own_default(tmp_path: Path) -> None:
    got = _invoke(["check", "x.yaml"], tmp_path / "no-such-file")
    assert got["namespace"] is None


def test_an_unknown_context_exits_2_in_one_line(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path / "config", "ctx-ns")
    result = CliRunner().invoke(
        kubectl.main, ["check", "--context", "prod", "x.yaml"], env={"KUBECONFIG": str(config)}
    )
    assert result.exit_code == 2
    assert result.output.strip().endswith("no context named 'prod'")


def test_the_plugin_offers_the_main_groups_commands_by_name() -> None:
    offered = set(kubectl.main.commands)
    assert offered == kubectl.COMMANDS & set(root.commands)
    assert {"check", "explain", "audit", "export"} <= offered
    for name in offered:  # the main group's commands themselves are left as they were
        assert root.commands[name] is not kubectl.main.commands[name]
        assert "kubectl_kubeconfig" not in {p.name for p in root.commands[name].params}


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        pytest.param(["--help"], "kubectl placement [OPTIONS] COMMAND [ARGS]...", id="the group"),
        pytest.param(["audit", "--help"], "kubectl placement audit [OPTIONS]", id="audit"),
        pytest.param(
            ["check", "--help"], "kubectl placement check [OPTIONS] PATH... | -", id="check"
        ),
        pytest.param(
            ["explain", "--help"], "kubectl placement explain [OPTIONS] [PATH... | -]", id="explain"
        ),
        pytest.param(["export", "--help"], "kubectl placement export [OPTIONS]", id="export"),
    ],
)
def test_help_reads_as_a_kubectl_plugin(args: list[str], usage: str) -> None:
    result = CliRunner().invoke(kubectl.main, args, prog_name="kubectl placement")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"Usage: {usage}"
    for flag in ("--kubeconfig PATH", "--context NAME", "-n, --namespace NS"):
        assert flag in result.output


def _kubectl_entry(cwd: Path, *path: Path) -> subprocess.CompletedProcess[str]:
    """``placement_webhooks.kubectl()`` with ``--help``, run with ``path`` on PYTHONPATH."""
    code = "import placement_webhooks; placement_webhooks.kubectl()"
    return subprocess.run(
        [sys.executable, "-c", code, "--help"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_console_script_is_kubectl_placement_with_the_shadow_check_first(
    tmp_path: Path,
) -> None:
    """The entry point as kubectl starts it; a shadowing ``webhooks`` is named in one line."""
    proc = _kubectl_entry(tmp_path, ROOT)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("Usage: kubectl placement [OPTIONS] COMMAND [ARGS]...\n")
    (tmp_path / "webhooks.py").write_text("VERSION = 1\n")
    proc = _kubectl_entry(tmp_path, tmp_path, ROOT)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert "is not placement-webhooks's and hides it" in line


KUBECTL_SPELLINGS = {"--kubeconfig", "--context", "-n", "--namespace"}


@pytest.mark.parametrize("name", sorted(kubectl.COMMANDS & set(root.commands)))
def test_each_command_spells_kubectls_flags_only_on_the_parameters_the_table_maps(
    name: str,
) -> None:
    """A command (doctor, when it arrives) whose own option is spelled like one of kubectl's
    flags must give it the parameter name the plugin maps, or the two would collide."""
    mapped = {kubectl.KUBECONFIG_PARAM, kubectl.CONTEXT_PARAM, *kubectl.NAMESPACE_PARAMS}
    for param in root.commands[name].params:
        if isinstance(param, click.Option) and KUBECTL_SPELLINGS & {*param.opts}:
            assert param.name in mapped, (name, param.opts, param.name)


def test_a_doctor_command_of_the_main_group_joins_the_plugin_by_name() -> None:
    @click.command()
    @click.option("--kubeconfig")
    @click.option("--context", "kube_context")
    @click.option("--namespace", default="placement-webhooks")
    def doctor(kubeconfig: str | None, kube_context: str | None, namespace: str) -> None:
        raise Recorded({"kubeconfig": kubeconfig, "context": kube_context, "ns": namespace})

    group = kubectl.plugin_group({**root.commands, "doctor": doctor})
    assert "doctor" in group.commands
    env = {"KUBECONFIG": "/nonexistent", "KUBERNETES_SERVICE_HOST": None}
    result = CliRunner().invoke(group, ["-n", "pw", "doctor", "--kubeconfig", K], env=env)
    assert isinstance(result.exception, Recorded), result.output
    assert result.exception.params == {"kubeconfig": K, "context": None, "ns": "pw"}
    result = CliRunner().invoke(group, ["doctor"], env=env)
    assert isinstance(result.exception, Recorded), result.output
    assert result.exception.params["ns"] == "placement-webhooks"
