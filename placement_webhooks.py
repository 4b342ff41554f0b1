"""The console scripts' entry: make sure ``webhooks`` is this project's before importing it.

Why a module outside the ``webhooks`` package: PyPI also has a distribution called
``webhooks`` (0.4.2, an unrelated library) whose import package has the same name. Installed
over ours it replaces ``webhooks/__init__.py``; earlier on ``sys.path`` it hides ours
altogether. Either way the first ``import webhooks.cli`` fails deep inside somebody else's
code (``No module named 'wrapt'``, ``'webhooks' is not a package``), or worse, succeeds with
the other package's ``__version__``. Both console scripts (``placement-webhooks`` and the
kubectl plugin ``kubectl-placement``) start here. This module finds where ``webhooks``
would come from without importing it and, if that is not ours, says so in one line and
exits 2.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

DISTRIBUTION = "placement-webhooks"


def _owners(init: Path) -> list[metadata.Distribution]:
    """Installed distributions whose RECORD lists ``init`` with the bytes it holds now.

    Why the hash: two distributions that both install ``webhooks/__init__.py`` both list
    it; the one whose recorded hash matches the file is the one that wrote it last.
    """
    names = metadata.packages_distributions().get("webhooks", [])
    data = init.read_bytes()
    found: list[metadata.Distribution] = []
    for name in dict.fromkeys(names):
        dist = metadata.distribution(name)
        for entry in dist.files or ():
            if entry.as_posix() != "webhooks/__init__.py":
                continue
            if Path(str(dist.locate_file(entry))).resolve() != init:
                continue
            if entry.hash is None or entry.hash.value == _digest(data, entry.hash.mode):
                found.append(dist)
    return found


def _digest(data: bytes, mode: str) -> str:
    digest = hashlib.new(mode, data).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def shadowed() -> str:
    """Why the ``webhooks`` this Python would import is not placement-webhooks ("" if it is)."""
    spec = find_spec("webhooks")
    if spec is None or spec.origin is None:
        return (
            f"{DISTRIBUTION}: no Python package 'webhooks' is installed; reinstall {DISTRIBUTION}"
        )
    origin = Path(spec.origin).resolve()
    where = origin.parent if origin.name == "__init__.py" else origin
    others = [d for d in _owners(origin) if d.metadata["Name"] != DISTRIBUTION]
    if origin.name == "__init__.py" and others:
        other = others[0].metadata
        return (
            f"{DISTRIBUTION}: the Python package 'webhooks' at {where} belongs to "
            f"{other['Name']} {other['Version']}, which shares its name; "
            f"pip uninstall {other['Name']}, then reinstall {DISTRIBUTION}"
        )
    if origin.name != "__init__.py" or not (where / "cli" / "__init__.py").is_file():
        return (
            f"{DISTRIBUTION}: the Python package 'webhooks' at {where} is not {DISTRIBUTION}'s "
            f"and hides it; remove it from the path or uninstall it, then reinstall {DISTRIBUTION}"
        )
    return ""


def _ours_or_exit() -> None:
    problem = shadowed()
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """``placement-webhooks``: the CLI, once ``webhooks`` is known to be ours."""
    _ours_or_exit()
    from webhooks.cli import main as cli

    cli()


def kubectl() -> None:
    """``kubectl-placement``: the kubectl plugin (``kubectl placement``), after the same check.

    Why the program name is given: kubectl runs the executable ``kubectl-placement``, but
    its user typed ``kubectl placement``, and usage lines and errors should say that.
    """
    _ours_or_exit()
    from webhooks.cli.kubectl import main as plugin

    plugin(prog_name="kubectl placement")


if __name__ == "__main__":  # pragma: no cover - python -m placement_webhooks
    main()
