"""The image's size before and after the distroless runtime, without a Docker engine.

``python -m tests.imagesize`` prints each figure and how it was obtained (the numbers in
docs/operations.md, "The image", come from it). Uncompressed sizes, as ``docker images``
shows them; a registry shows the compressed ones, roughly a third.

* The layer of our own (the locked serving set, the project and their bytecode): built with
  :func:`tests.imagelayer.build_layer` exactly as the Dockerfile lays it out, and measured
  with ``du`` (apparent size). The image before (the Dockerfile at 8f221e0) installed the
  same locked set for its own Python: that layer is built too, with the serving set's
  CPython 3.12 wheels installed into ``/usr/local/lib/python3.12/site-packages`` by
  CPython 3.12 (pyenv's build, below), and measured the same way.
* A base image is the sum of its Debian packages' ``Installed-Size`` (``apt-cache`` on a
  Debian 12 machine, the release both bases are built from), plus, for the python:slim
  image, its CPython build under /usr/local, measured from a CPython source build of the
  same minor (pyenv's) with the files that image deletes left out (tests, static
  library, bytecode). ``Installed-Size`` counts documentation and locales both bases strip,
  so the package figures are upper bounds, and err the same way for both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.imagelayer import build_layer

#: distroless python3-debian12, layer by layer (GoogleContainerTools/distroless: static,
#: base, cc, python3/BUILD's package list).
DISTROLESS = {
    "static": ["base-files", "netbase", "tzdata", "ca-certificates", "media-types"],
    "base": ["libc6", "libssl3", "openssl"],
    "cc": ["libgcc-s1", "libgomp1", "libstdc++6"],
    "python3": [
        "libbz2-1.0",
        "libdb5.3",
        "libexpat1",
        "liblzma5",
        "libsqlite3-0",
        "libuuid1",
        "libncursesw6",
        "libtinfo6",
        "python3-distutils",
        "zlib1g",
        "libcom-err2",
        "libcrypt1",
        "libgssapi-krb5-2",
        "libk5crypto3",
        "libkeyutils1",
        "libkrb5-3",
        "libkrb5support0",
        "libnsl2",
        "libreadline8",
        "libtirpc3",
        "libffi8",
        "libpython3.11-minimal",
        "libpython3.11-stdlib",
        "python3.11-minimal",
    ],
}
#: python:3.12-slim-bookworm on top of debian:bookworm-slim (Priority: required): what its
#: Dockerfile installs with apt and keeps for the CPython build it makes.
PYTHON_SLIM_APT = [
    "ca-certificates",
    "netbase",
    "tzdata",
    "libbz2-1.0",
    "libffi8",
    "libgdbm6",
    "liblzma5",
    "libncursesw6",
    "libreadline8",
    "libsqlite3-0",
    "libssl3",
    "libuuid1",
    "zlib1g",
]
CPYTHON_BUILD = Path.home() / ".pyenv" / "versions" / "3.12.1"
#: Where the image before installed the wheels (``python -m pip install`` as root in
#: python:3.12-slim).
BEFORE_SITE = "usr/local/lib/python3.12/site-packages"


def du(path: Path) -> int:
    """Bytes under ``path`` (apparent sizes, symlinks not followed)."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(directory, name)).st_size
    return total


def _records() -> dict[str, dict[str, str]]:
    """Every available package's first record (``apt-cache dumpavail``)."""
    text = subprocess.run(
        ["apt-cache", "dumpavail"], capture_output=True, text=True, check=True
    ).stdout
    records: dict[str, dict[str, str]] = {}
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != " "
        )
        if "Package" in fields:
            records.setdefault(fields["Package"], fields)
    return records


def installed_size(records: dict[str, dict[str, str]], packages: list[str]) -> int:
    """Bytes the packages take installed (their ``Installed-Size``, KiB)."""
    missing = [p for p in packages if p not in records]
    if missing:
        raise SystemExit(f"not in this machine's package lists: {', '.join(missing)}")
    return sum(int(records[p]["Installed-Size"]) * 1024 for p in packages)


def cpython_slim(build: Path) -> int:
    """A CPython build as python:slim keeps it: no tests, no static library, no bytecode."""
    total = 0
    for directory, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if d not in {"test", "tests", "idle_test", "__pycache__"}]
        for name in files:
            if name.endswith((".pyc", ".pyo")) or (
                name.startswith("libpython") and name.endswith(".a")
            ):
                continue
            total += os.lstat(os.path.join(directory, name)).st_size
    return total


def mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def main() -> int:
    """Print every figure and the totals."""
    if not CPYTHON_BUILD.is_dir():
        raise SystemExit(
            f"{CPYTHON_BUILD} is missing: `pyenv install 3.12.1` (the image before's Python)"
        )
    records = _records()
    with tempfile.TemporaryDirectory(prefix="image-layer-") as tmp:
        root = build_layer(Path(tmp))
        layer = du(root)
        client = root / "usr" / "local" / "lib" / "python3.11" / "dist-packages" / "kubernetes"
        kubernetes, kubernetes_aio = du(client), du(client / "aio")
    with tempfile.TemporaryDirectory(prefix="image-layer-312-") as tmp:
        python312 = CPYTHON_BUILD / "bin" / "python3.12"
        layer_before = du(build_layer(Path(tmp), python312, BEFORE_SITE))
    distroless = {part: installed_size(records, pkgs) for part, pkgs in DISTROLESS.items()}
    required = [name for name, r in records.items() if r.get("Priority") == "required"]
    slim_base = installed_size(records, required)
    slim_apt = installed_size(records, sorted(set(PYTHON_SLIM_APT) - set(required)))
    slim_cpython = cpython_slim(CPYTHON_BUILD)
    before = slim_base + slim_apt + slim_cpython + layer_before
    after = sum(distroless.values()) + layer
    print(f"before: our layer for CPython 3.12 (/{BEFORE_SITE}), du: {mb(layer_before)}")
    print(f"after: our layer for Debian's python3.11 (/usr/local/lib/python3.11), du: {mb(layer)}")
    print(f"  of which the kubernetes client package: {mb(kubernetes)}")
    print(f"  of which kubernetes/aio (asyncio; nothing here imports it): {mb(kubernetes_aio)}")
    for part, size in distroless.items():
        print(f"distroless python3-debian12 {part}: {mb(size)} ({len(DISTROLESS[part])} packages)")
    print(f"debian:bookworm-slim (Priority: required, {len(required)} packages): {mb(slim_base)}")
    print(f"python:slim's apt packages beyond it: {mb(slim_apt)}")
    print(f"CPython 3.12 build as python:slim keeps it ({CPYTHON_BUILD}): {mb(slim_cpython)}")
    print(f"before (python:3.12-slim-bookworm + layer; pip, a shell, apt): {mb(before)}")
    print(f"after (distroless python3-debian12 + layer; no pip, no shell): {mb(after)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
