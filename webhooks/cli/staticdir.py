"""Writing ``--static-manifests DIR``: shared by ``export`` (policies) and ``webhook-config``.

Why one writer: both commands fill the same directory, with one AdmissionConfiguration
naming all four plugin directories, and each must replace only what it wrote before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import yaml

from webhooks.cli.common import fail

if TYPE_CHECKING:
    from webhooks.export.static import StaticManifests
    from webhooks.k8s.releases import Release

#: The first line of every file ``--static-manifests`` writes: how a later run knows which
#: files in the directories are its own to replace or remove.
STATIC_MARK = "# Written by placement-webhooks --static-manifests; a re-run replaces it."


def render_static(objects: Sequence[dict[str, Any]], head: Sequence[str] = ()) -> str:
    """``objects`` as a static manifest: the mark and ``head`` as comments, then the YAML.

    Why no ``---`` before the first object: the API server's loader splits the file at
    each ``---`` and decodes every non-empty part, so comments standing alone before it
    are a document with no ``kind``, and the start-up fails (``Object 'Kind' is
    missing``). Comments that open the first document are fine.
    """
    comments = "".join(f"# {line}\n" for line in head)
    body = yaml.safe_dump_all(objects, sort_keys=False, width=100)
    return f"{STATIC_MARK}\n{comments}{body}"


def static_for(
    target: str,
    server_dir: str | None,
    objects: list[dict[str, Any]],
    release: Release,
    owns: Sequence[str],
) -> StaticManifests:
    """The static manifests for ``target`` (where the API server finds them: ``server_dir``,
    or ``target``'s absolute path); the CLI's refusal where they cannot be."""
    from webhooks.export.static import StaticUnsupported, static_manifests

    directory = server_dir or str(Path(target).absolute())
    try:
        return static_manifests(objects, release, directory, owns)
    except StaticUnsupported as exc:
        fail(f"--static-manifests: {exc}")


def write_static(target: str, manifests: StaticManifests) -> None:
    """Write ``manifests`` under ``target``, replacing what an earlier run wrote there, and
    print the flags that load them.

    Why each file is written beside itself and renamed: the API server watches the
    directories and reloads on every change, so it must never read a half-written file (a
    ``.tmp`` name is not read). Files of an earlier run that this one does not write (a
    plugin since disabled) are removed from the directories this run owns; files of
    anyone else are left alone.
    """
    root = Path(target)
    try:
        for sub in manifests.directories:
            (root / sub).mkdir(parents=True, exist_ok=True)
        written = set()
        for file in manifests.files:
            path = root / file.path
            temporary = path.with_name(path.name + ".tmp")
            head = _how_to_load(manifests) if file is manifests.files[0] else []
            temporary.write_text(render_static(file.objects, head), "utf-8")
            temporary.replace(path)
            written.add(path)
        for sub in manifests.owned:
            for path in sorted((root / sub).iterdir()):
                if path not in written and path.is_file() and _ours(path):
                    path.unlink()
    except OSError as exc:
        fail(f"{target}: {exc.strerror or exc}")
    click.echo("kube-apiserver flags: " + " ".join(manifests.flags), err=True)


def _how_to_load(manifests: StaticManifests) -> list[str]:
    return [
        "kube-apiserver " + " ".join(manifests.flags),
        "An API server that already has an AdmissionConfiguration: add these plugins to it.",
    ]


def _ours(path: Path) -> bool:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return handle.readline().rstrip("\n") == STATIC_MARK
