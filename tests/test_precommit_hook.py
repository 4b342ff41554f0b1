"""The pre-commit hook this repository defines (``.pre-commit-hooks.yaml``).

The fast tests read the hook as pre-commit reads it (the keys it requires, filters that
compile) and run its entry, through the console script the package installs, on the
files a commit hands it. The slow test is the proof a user would try: the real
``pre-commit`` tool, in a scratch repository outside this tree, installs the hook from
this repository's HEAD and stops a commit that adds a manifest ``check`` refuses. It
needs ``pre-commit`` (not in the lock: ``PRE_COMMIT=/path/to/pre-commit``, or on PATH)
and the network for the hook's own environment, and skips, saying so, without the tool.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.command import ROOT, invoke_cli

HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
(HOOK,) = HOOKS

#: pre-commit's manifest schema: the keys a hook must have, and the type of those we set.
REQUIRED = ("id", "name", "entry", "language")
TYPES: dict[str, type] = {
    "id": str,
    "name": str,
    "description": str,
    "entry": str,
    "language": str,
    "types_or": list,
    "files": str,
    "exclude": str,
    "pass_filenames": bool,
    "require_serial": bool,
    "minimum_pre_commit_version": str,
}

POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
    "spec:\n  containers: [{name: c, image: nginx}]\n"
)
REFUSED = POD + "  tolerations:\n  - {key: 'bad key!', operator: Exists}\n"
#: Why a refused manifest: an invalid toleration key, which taint-toleration-rules enforces.
REFUSAL = "refused.yaml:7: taint-toleration-rules: spec.tolerations[0].key: Invalid value"


def test_the_hook_has_what_pre_commit_requires_and_nothing_it_does_not_know() -> None:
    assert isinstance(HOOKS, list)
    assert all(key in HOOK for key in REQUIRED)
    assert set(HOOK) <= set(TYPES)
    assert all(isinstance(value, TYPES[key]) for key, value in HOOK.items())
    assert HOOK["id"] == "placement-webhooks-check"
    assert HOOK["language"] == "python", "so pre-commit installs the package from the repo"
    assert HOOK["pass_filenames"] is True
    assert HOOK["require_serial"] is True, "cluster objects among the files must be seen whole"


def test_the_entry_is_the_console_script_the_package_installs() -> None:
    command, subcommand, *_ = shlex.split(HOOK["entry"])
    assert command in SCRIPTS
    # The console script starts in the launcher, which names a shadowing ``webhooks``
    # package before importing the CLI.
    assert SCRIPTS[command] == "placement_webhooks:main"
    assert subcommand == "check"


FILTERED = [
    pytest.param("deploy/web.yaml", True, id="a YAML manifest is handed over"),
    pytest.param("deploy/web.yml", True, id="a .yml manifest is handed over"),
    pytest.param("deploy/web.json", True, id="a JSON manifest is handed over"),
    pytest.param("chart/templates/pod.yaml", False, id="a Helm template is left out"),
    pytest.param("templates/pod.yaml", False, id="a templates directory at the root is left out"),
    pytest.param("deploy/templates.yaml", True, id="a file named templates is not left out"),
]


@pytest.mark.parametrize(("path", "checked"), FILTERED)
def test_which_staged_files_the_hook_is_handed(path: str, checked: bool) -> None:
    suffixes = {"yaml": (".yaml", ".yml"), "json": (".json",)}
    typed = path.endswith(tuple(s for t in HOOK["types_or"] for s in suffixes[t]))
    included = re.search(HOOK.get("files", ""), path) is not None
    excluded = re.search(HOOK["exclude"], path) is not None
    assert (typed and included and not excluded) is checked


STAGED: list[Any] = [
    pytest.param({"web.yaml": POD}, 0, "", id="a good manifest passes"),
    pytest.param({"refused.yaml": REFUSED}, 1, REFUSAL, id="a refused manifest fails"),
    pytest.param({"data.json": "[1, 2, 3]\n"}, 0, "", id="a JSON array is not a manifest"),
    pytest.param({"empty.yaml": "# nothing yet\n"}, 0, "", id="an emptied file is not one"),
    pytest.param({"c.yaml": "services: {web: {}}\n"}, 0, "", id="a compose file is skipped"),
    pytest.param({"ci.yaml": "on: [push]\n", "web.yaml": POD}, 0, "", id="beside a manifest"),
    pytest.param(
        {"x.yaml": POD + "---\nplain text\n"},
        2,
        "x.yaml:7: not a Kubernetes object",
        id="a stray scalar in a manifest still fails, as kubectl refuses it",
    ),
    pytest.param({"x.yaml": "a: [\n"}, 2, "x.yaml:", id="a file that does not parse fails"),
]


@pytest.mark.parametrize(("files", "code", "said"), STAGED)
def test_the_entry_on_the_files_a_commit_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], code: int, said: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    result = invoke_cli([*shlex.split(HOOK["entry"])[1:], *files])
    assert result.exit_code == code, result.output
    assert said in result.output


def _readme_yaml(marker: str) -> Any:
    """The README's YAML block that holds ``marker``, parsed."""
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (block,) = [b for b in blocks if marker in b]
    return yaml.safe_load(block)


def test_the_documented_pre_commit_config_names_this_hook() -> None:
    (repo,) = _readme_yaml("placement-webhooks-check")["repos"]
    assert [hook["id"] for hook in repo["hooks"]] == [HOOK["id"]]


def test_the_documented_pipeline_uploads_the_sarif_check_writes() -> None:
    (job,) = _readme_yaml("upload-sarif")["jobs"].values()
    runs = [step["run"] for step in job["steps"] if "run" in step]
    (checks,) = [shlex.split(r) for r in runs if r.startswith("placement-webhooks check")]
    written = [o.partition("=")[2] for o in checks if o.startswith("sarif=")]
    (upload,) = [s for s in job["steps"] if s.get("uses", "").endswith("/upload-sarif@v3")]
    assert written == [upload["with"]["sarif_file"]]
    assert upload["if"] == "always()", "the findings of a failing check are uploaded too"
    assert job["permissions"]["security-events"] == "write"


def _pre_commit() -> str:
    found = os.environ.get("PRE_COMMIT") or shutil.which("pre-commit")
    if not found:
        pytest.skip("pre-commit is not installed: set PRE_COMMIT=/path/to/pre-commit")
    return found


def _run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``args`` run in ``repo`` with pre-commit's cache beside the repository.

    Why a cache of its own: the environment the hook installs is a throwaway, and the
    user's ``~/.cache/pre-commit`` should not collect one per run.
    """
    env = {**os.environ, "PRE_COMMIT_HOME": str(repo.parent / "cache")}
    return subprocess.run(
        args, cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    who = ["-c", "user.name=placement", "-c", "user.email=placement@example.com"]
    return _run(repo, "git", *who, *args)


@pytest.mark.slow
def test_the_real_pre_commit_stops_a_commit_that_adds_a_refused_manifest(tmp_path: Path) -> None:
    pre_commit = _pre_commit()
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    repo = tmp_path / "repo"
    repo.mkdir()
    assert _git(repo, "init", "-q").returncode == 0
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {ROOT}\n  rev: {rev}\n  hooks:\n  - id: {HOOK['id']}\n"
    )
    (repo / "deploy").mkdir()
    (repo / "deploy" / "web.yaml").write_text(POD)
    (repo / "deploy" / "data.json").write_text("[1, 2, 3]\n")
    (repo / "deploy" / "empty.yaml").write_text("")
    (repo / "chart" / "templates").mkdir(parents=True)
    (repo / "chart" / "templates" / "pod.yaml").write_text("name: {{ .Release.Name }\n{{- end")
    manifest = _run(repo, pre_commit, "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml"))
    assert manifest.returncode == 0, manifest.stdout + manifest.stderr
    (tmp_path / "documented.yaml").write_text(yaml.safe_dump(_readme_yaml(HOOK["id"])))
    documented = _run(repo, pre_commit, "validate-config", str(tmp_path / "documented.yaml"))
    assert documented.returncode == 0, documented.stdout + documented.stderr
    assert _run(repo, pre_commit, "install").returncode == 0

    _git(repo, "add", "-A")
    good = _git(repo, "commit", "-m", "a good manifest and files that are not manifests")
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"placement-webhooks check\.+Passed", good.stdout + good.stderr)

    (repo / "deploy" / "refused.yaml").write_text(REFUSED)
    _git(repo, "add", "deploy/refused.yaml")
    refused = _git(repo, "commit", "-m", "a manifest check refuses")
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0, said
    assert re.search(r"placement-webhooks check\.+Failed", said)
    assert "deploy/" + REFUSAL in said
    assert _git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"
