"""The kubectl plugin as krew installs it: the archive unpacked into krew's store, its
launcher linked onto PATH and run by the real ``kubectl``.

Why in this suite and not ``make test``: the launcher's first run installs the wheel and the
lock's pins from the package index into a fresh virtualenv (about half a minute), as an
operator's first ``kubectl placement`` does; the fast checks of the manifest and the archive
are in ``tests/test_krew.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import webhooks
from tests import krewbuild
from tests.distbuild import build


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """What ``make krew-manifest`` writes: the archive and the filled manifest."""
    dist = build(tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("unpacked"))
    return krewbuild.main(dist.wheel.parent, "https://example.com/releases/v1/")


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
