"""The krew archive and manifest of a release: ``make krew-manifest KREW_URL=...``.

The archive holds the launcher (``krew/kubectl-placement``), the wheel ``make dist`` built,
the lock's serving pins (``requirements/serve.txt``, as ``requirements.txt``) and the
LICENSE. Its bytes depend only on theirs (members in one order, fixed times and owners,
gzip without a timestamp), so anyone can rebuild it and compare the sha256 the manifest
carries. The manifest is ``krew/placement.yaml`` with the archive's uri and sha256 filled
in, written beside the archive. Text only, no YAML library: ``make dist``'s virtualenv
holds only the build backend.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KREW = ROOT / "krew"
LAUNCHER = KREW / "kubectl-placement"
MANIFEST = KREW / "placement.yaml"
LOCK = ROOT / "requirements" / "serve.txt"

_VERSION = re.compile(r"^  version: v(\S+)$", re.MULTILINE)
_URI = re.compile(r"^(    uri: )\S+$", re.MULTILINE)
_SHA256 = re.compile(r'^(    sha256: )"?[0-9a-f]{64}"?$', re.MULTILINE)


def version(manifest: str) -> str:
    """The release a manifest is for, without krew's ``v``."""
    found = _VERSION.search(manifest)
    if found is None:
        raise ValueError("the krew manifest names no spec.version")
    return found.group(1)


def archive_name(release: str) -> str:
    """The archive's file name for a release: what the manifest's uri ends with."""
    return f"kubectl-placement-v{release}.tar.gz"


def members(wheel: Path) -> list[tuple[str, bytes, int]]:
    """(name, bytes, mode) of each file the archive holds, in archive order."""
    return [
        ("kubectl-placement", LAUNCHER.read_bytes(), 0o755),
        (wheel.name, wheel.read_bytes(), 0o644),
        ("requirements.txt", LOCK.read_bytes(), 0o644),
        ("LICENSE", (ROOT / "LICENSE").read_bytes(), 0o644),
    ]


def build_archive(wheel: Path, out: Path) -> Path:
    """Write the archive for ``wheel`` into the directory ``out``; its path."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data, mode in members(wheel):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(data))
    release = version(MANIFEST.read_text(encoding="utf-8"))
    path = out / archive_name(release)
    path.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    return path


def sha256(path: Path) -> str:
    """The hex sha256 of a file, as krew checks it after downloading."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fill(manifest: str, uri: str, digest: str) -> str:
    """The manifest with the release's ``uri`` and ``sha256`` in place of the placeholders."""
    head = f"# placement-webhooks v{version(manifest)}: written by make krew-manifest.\n"
    body = manifest[manifest.index("apiVersion:") :]
    body, uris = _URI.subn(lambda m: m.group(1) + uri, body)
    body, digests = _SHA256.subn(lambda m: f'{m.group(1)}"{digest}"', body)
    if uris != 1 or digests != 1:
        raise ValueError("the krew manifest should have one platform with one uri and sha256")
    return head + body


def main(dist: Path, base_url: str) -> tuple[Path, Path]:
    """Build the archive from the one wheel in ``dist`` and write the filled manifest there."""
    manifest = MANIFEST.read_text(encoding="utf-8")
    wheel = dist / f"placement_webhooks-{version(manifest)}-py3-none-any.whl"
    if not wheel.is_file():
        raise SystemExit(f"{wheel}: not built (the manifest's version is {version(manifest)})")
    archive = build_archive(wheel, dist)
    uri = f"{base_url.rstrip('/')}/{archive.name}"
    written = dist / MANIFEST.name
    written.write_text(fill(manifest, uri, sha256(archive)), encoding="utf-8")
    return archive, written


if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[2]:
        raise SystemExit("usage: python -m tests.krewbuild DIST URL (where the release serves it)")
    built, manifest_path = main(Path(sys.argv[1]), sys.argv[2])
    print(f"{built} sha256:{sha256(built)}", manifest_path, sep="\n")
