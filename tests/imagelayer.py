"""The image's only layer of its own, made without a Docker engine, as the Dockerfile makes it.

Shared by ``tests/test_image.py`` (which runs it) and ``tests/imagesize.py`` (which measures
it).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], cwd: Path, timeout: float) -> None:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")


#: Debian 12's own interpreter: the one the distroless runtime ships (python3.11 3.11.2).
DEBIAN_PYTHON_BIN = Path("/usr/bin/python3.11")


def build_layer(
    tmp_path: Path,
    python: Path = DEBIAN_PYTHON_BIN,
    site: str = "usr/local/lib/python3.11/dist-packages",
) -> Path:
    """What the build stage lays out under /rootfs, made the way the Dockerfile makes it.

    The wheels come from the lock (hashes checked) and the project's own files; the layer
    is installed by the locked pip for Debian's /usr/bin/python3.11, so the script's "#!"
    line names that interpreter, exactly as in the image.

    ``python`` and ``site`` make the layer of another image's Python instead: the serving
    set's wheels are then chosen for that interpreter (pip runs as it) and installed where
    it looks (the image before the distroless runtime: CPython 3.12's
    ``/usr/local/lib/python3.12/site-packages``). The project's wheel is pure Python and
    built once, by this interpreter.
    """
    context = tmp_path / "context"
    context.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "placement_webhooks.py"):
        shutil.copy(ROOT / name, context / name)
    shutil.copytree(
        ROOT / "webhooks", context / "webhooks", ignore=shutil.ignore_patterns("__pycache__")
    )
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    target = ["--python", str(python)]
    serve = str(ROOT / "requirements" / "serve.txt")
    locked = ["wheel", "--require-hashes", "--wheel-dir", str(wheels), "-r", serve]
    _run([*pip, *target, *locked], context, 600)
    wheel = ["wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels), "."]
    _run([*pip, *wheel], context, 300)
    root = tmp_path / "rootfs"
    packages = root / site
    install = [*target, "install", "--no-index", "--no-deps"]
    _run([*pip, *install, "--target", str(packages), *map(str, wheels.glob("*.whl"))], context, 300)
    (packages / "bin").rename(root / "usr" / "local" / "bin")
    return root
