"""The sdist and the wheel, built as a release builds them, with the locked build backend.

Shared by ``make dist`` (``python -m tests.distbuild DIR``) and ``tests/test_dist.py``. The
sdist comes from the tree; the wheel from the sdist unpacked, so a wheel that builds proves
the sdist holds what a rebuild needs. Both through setuptools' PEP 517 hooks
(``setuptools.build_meta``), run by this interpreter without build isolation: the backend is
the one ``requirements/build.txt`` pins, and nothing is fetched.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Dist:
    """What a build wrote: the sdist and the wheel."""

    sdist: Path
    wheel: Path


def _hook(hook: str, source: Path, out: Path) -> Path:
    """Run one PEP 517 hook of the backend in ``source``; the file it wrote into ``out``."""
    code = f"import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))"
    cmd = [sys.executable, "-c", code, str(out)]
    proc = subprocess.run(cmd, cwd=source, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return out / proc.stdout.strip().splitlines()[-1]


def build(out: Path, scratch: Path) -> Dist:
    """Build the sdist from the tree into ``out``, then the wheel from it (``scratch`` unpacks)."""
    out.mkdir(parents=True, exist_ok=True)
    sdist = _hook("build_sdist", ROOT, out)
    with tarfile.open(sdist) as archive:
        archive.extractall(scratch, filter="data")
    [unpacked] = scratch.iterdir()
    return Dist(sdist, _hook("build_wheel", unpacked, out))


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        built = build(Path(sys.argv[1] if len(sys.argv) > 1 else "dist").resolve(), Path(tmp))
    print(built.sdist, built.wheel, sep="\n")
