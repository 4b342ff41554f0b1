"""The krew manifest (``krew/placement.yaml``), its archive and its launcher.

krew refuses a manifest that breaks its structural rules (its ``ValidatePlugin``): the
apiVersion and kind, a safe name equal to the file's, a short description, a semantic
version with a leading ``v``, and per platform a uri, a lower-case hex sha256, a ``bin``,
at least one file operation and a selector on ``os`` and ``arch`` only. :func:`krew_problems`
states those rules; the committed manifest (placeholders included) and the one ``make
krew-manifest`` fills in must both pass, and each rule is shown to refuse what it should.
The fast tests also read the archive (every ``from`` matches a member, ``bin`` is an
executable launcher); the slow one runs the launcher as krew lays it out, through the real
``kubectl``, which installs the wheel into a fresh virtualenv from the lock's pins.
"""

from __future__ import annotations

import copy
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

import webhooks
from tests import krewbuild
from tests.distbuild import Dist, build

API_VERSION = "krew.googlecontainertools.github.com/v1alpha2"
SAFE_NAME = re.compile(r"^[\w-]+$")
SHA256 = re.compile(r"^[a-f0-9]{64}$")
SEMVER = re.compile(r"^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def krew_problems(name: str, plugin: dict[str, Any]) -> list[str]:
    """What krew's validation would refuse in the manifest file ``<name>.yaml``."""
    problems = []
    spec = plugin.get("spec") or {}
    if plugin.get("apiVersion") != API_VERSION:
        problems.append("apiVersion")
    if plugin.get("kind") != "Plugin":
        problems.append("kind")
    if not SAFE_NAME.match(name) or (plugin.get("metadata") or {}).get("name") != name:
        problems.append("name")
    if not spec.get("shortDescription"):
        problems.append("shortDescription")
    if not SEMVER.match(str(spec.get("version", ""))):
        problems.append("version")
    if not spec.get("platforms"):
        problems.append("platforms")
    for platform in spec.get("platforms") or ():
        for key in ("uri", "bin", "files"):
            if not platform.get(key):
                problems.append(key)
        if not SHA256.match(str(platform.get("sha256", ""))):
            problems.append("sha256")
        selector = platform.get("selector") or {}
        labels, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
        keys = [*(labels or {}), *(e.get("key") for e in expressions or ())]
        if not keys or any(k not in {"os", "arch"} for k in keys):
            problems.append("selector")
    return problems


def _manifest() -> dict[str, Any]:
    data = yaml.safe_load(krewbuild.MANIFEST.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return build(tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("unpacked"))


@pytest.fixture(scope="module")
def release(dist: Dist) -> tuple[Path, Path]:
    """What ``make krew-manifest`` writes: the archive and the filled manifest."""
    return krewbuild.main(dist.wheel.parent, "https://example.com/releases/v1/")


def test_the_committed_manifest_passes_krews_validation() -> None:
    assert krew_problems(krewbuild.MANIFEST.stem, _manifest()) == []


def test_the_manifest_is_for_the_one_version_string() -> None:
    assert _manifest()["spec"]["version"] == f"v{webhooks.__version__}"
    platform = _manifest()["spec"]["platforms"][0]
    assert platform["uri"].endswith("/" + krewbuild.archive_name(webhooks.__version__))


def _set(path: str, value: Any) -> Any:
    def change(plugin: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = plugin
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[last] = value

    return change


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        pytest.param(_set("apiVersion", "krew/v1"), "apiVersion", id="another apiVersion"),
        pytest.param(_set("metadata.name", "placement-webhooks"), "name", id="another name"),
        pytest.param(_set("spec.version", "0.1.0"), "version", id="a version without v"),
        pytest.param(_set("spec.shortDescription", ""), "shortDescription", id="no description"),
        pytest.param(_set("spec.platforms.0.sha256", "A" * 64), "sha256", id="an upper-case sha"),
        pytest.param(_set("spec.platforms.0.files", []), "files", id="no file operations"),
        pytest.param(_set("spec.platforms.0.bin", ""), "bin", id="no bin"),
        pytest.param(
            _set("spec.platforms.0.selector", {"matchLabels": {"distro": "debian"}}),
            "selector",
            id="a selector on a key krew does not know",
        ),
        pytest.param(_set("spec.platforms", []), "platforms", id="no platform"),
    ],
)
def test_each_rule_refuses_what_krew_refuses(change: Any, problem: str) -> None:
    plugin = copy.deepcopy(_manifest())
    change(plugin)
    assert problem in krew_problems("placement", plugin)


def test_make_krew_manifest_fills_in_the_archives_uri_and_sha256(
    release: tuple[Path, Path],
) -> None:
    archive, written = release
    plugin = yaml.safe_load(written.read_text(encoding="utf-8"))
    assert krew_problems("placement", plugin) == []
    [platform] = plugin["spec"]["platforms"]
    assert platform["uri"] == f"https://example.com/releases/v1/{archive.name}"
    assert platform["sha256"] == krewbuild.sha256(archive)
    unfilled = copy.deepcopy(_manifest())
    for key in ("uri", "sha256"):
        del unfilled["spec"]["platforms"][0][key], platform[key]
    assert plugin == unfilled


def test_the_archive_holds_what_the_manifest_installs(release: tuple[Path, Path]) -> None:
    archive, _ = release
    [platform] = _manifest()["spec"]["platforms"]
    with tarfile.open(archive) as opened:
        files = {m.name: m for m in opened.getmembers()}
    assert len(files) == 4
    for operation in platform["files"]:
        assert fnmatch.filter(files, operation["from"]), operation
    launcher = files[platform["bin"]]
    assert launcher.mode & 0o111 == 0o111
    assert f"placement_webhooks-{webhooks.__version__}-py3-none-any.whl" in files


def test_the_archive_is_the_same_bytes_for_the_same_wheel(dist: Dist, tmp_path: Path) -> None:
    first = krewbuild.build_archive(dist.wheel, tmp_path)
    digest = krewbuild.sha256(first)
    first.unlink()
    assert krewbuild.sha256(krewbuild.build_archive(dist.wheel, tmp_path)) == digest


def test_the_launcher_without_python_3_11_says_so_in_one_line(tmp_path: Path) -> None:
    launcher = tmp_path / "kubectl-placement"
    shutil.copy(krewbuild.LAUNCHER, launcher)
    env = {**os.environ, "PLACEMENT_PYTHON": "false"}
    proc = subprocess.run(
        [str(launcher), "--help"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "kubectl placement: needs Python 3.11 or later as python3 (or PLACEMENT_PYTHON)\n"
    )
    assert not (tmp_path / "venv").exists()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_runs_the_plugin_as_krew_lays_it_out(
    release: tuple[Path, Path], tmp_path: Path
) -> None:
    """krew unpacks the archive into its store and links ``bin`` into a directory on PATH;
    the first run installs into a virtualenv beside the launcher, the next one reuses it."""
    archive, _ = release
    store, bin_dir = tmp_path / "store" / "placement" / "v1", tmp_path / "bin"
    store.mkdir(parents=True)
    bin_dir.mkdir()
    with tarfile.open(archive) as opened:
        opened.extractall(store, filter="data")
    (bin_dir / "kubectl-placement").symlink_to(store / "kubectl-placement")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"])
    env["PLACEMENT_PYTHON"] = sys.executable  # a Python 3.11+, wherever python3 points
    for first in (True, False):
        proc = subprocess.run(
            ["kubectl", "placement", "--version"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == f"placement-webhooks, version {webhooks.__version__}\n"
        assert ("first run" in proc.stderr) is first
    assert (store / "venv" / "bin" / "kubectl-placement").is_file()
