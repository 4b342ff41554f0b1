"""The two ways a test runs the ``placement-webhooks`` command: in this process through
click's runner (:func:`invoke_cli`), and as a real ``python -m webhooks`` process
(:func:`run_cli`).

Why both: the runner is fast and shows the exception behind a crash; only a real process
proves what a user gets (the entry point, exit codes, stdout and stderr as bytes, the
environment, a pipe between two commands).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from click.testing import CliRunner, Result

from webhooks.cli import main

#: The repository root: where the package imports from in a real process.
ROOT = Path(__file__).resolve().parent.parent


def invoke_cli(
    args: Sequence[str],
    stdin: str | bytes | None = None,
    *,
    env: Mapping[str, str | None] | None = None,
    **kw: Any,
) -> Result:
    """``placement-webhooks *args`` in this process, ``stdin`` on its standard input;
    ``env`` sets (or, with ``None``, unsets) environment variables for the call."""
    return CliRunner().invoke(main, list(args), input=stdin, env=env, **kw)


@overload
def run_cli(
    *args: str,
    stdin: str | None = ...,
    cwd: Path = ...,
    env: Mapping[str, str | None] | None = ...,
    clean: bool = ...,
    timeout: float = ...,
    text: Literal[True] = ...,
) -> subprocess.CompletedProcess[str]: ...


@overload
def run_cli(
    *args: str,
    stdin: bytes | None = ...,
    cwd: Path = ...,
    env: Mapping[str, str | None] | None = ...,
    clean: bool = ...,
    timeout: float = ...,
    text: Literal[False],
) -> subprocess.CompletedProcess[bytes]: ...


def run_cli(
    *args: str,
    stdin: str | bytes | None = None,
    cwd: Path = ROOT,
    env: Mapping[str, str | None] | None = None,
    clean: bool = False,
    timeout: float = 60.0,
    text: bool = True,
) -> subprocess.CompletedProcess[Any]:
    """``python -m webhooks *args`` as a real process in ``cwd``, ``stdin`` on its standard
    input, output captured (as text unless ``text`` is false), never raising on its exit code.

    The environment is this one (or, with ``clean``, none at all) with the repository on
    ``PYTHONPATH`` and ``env`` applied: a value sets a variable, ``None`` removes it.
    """
    environ = {} if clean else dict(os.environ)
    environ["PYTHONPATH"] = str(ROOT)
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return subprocess.run(
        [sys.executable, "-m", "webhooks", *args],
        input=stdin,
        capture_output=True,
        text=text,
        cwd=cwd,
        env=environ,
        timeout=timeout,
        check=False,
    )
