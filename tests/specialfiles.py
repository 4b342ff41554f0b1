"""Files that are not what their name says: the inputs every bounded reader is tested with.

Why one module: the manifest reader, config files, certificate files and ``review`` must
refuse the same things the same way (``webhooks/manifests/files.py``), and their tests
make a FIFO, a link to a device or a sparse file past a limit alike. Each maker replaces
whatever ``path`` held and returns it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path


def _clear(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def fifo(path: Path) -> Path:
    """A FIFO at ``path``: a reader that waits for a writer blocks forever."""
    _clear(path)
    os.mkfifo(path)
    return path


def link_to(target: str) -> Callable[[Path], Path]:
    """A maker of a symbolic link to ``target`` (``/dev/zero``: a read that never ends)."""

    def make(path: Path) -> Path:
        _clear(path)
        path.symlink_to(target)
        return path

    return make


def sparse(size: int) -> Callable[[Path], Path]:
    """A maker of a file of ``size`` bytes that takes no disk (a hole, read as NULs)."""

    def make(path: Path) -> Path:
        _clear(path)
        with path.open("wb") as out:
            out.truncate(size)
        return path

    return make


def directory(path: Path) -> Path:
    """A directory where a file was expected."""
    _clear(path)
    path.mkdir()
    return path
