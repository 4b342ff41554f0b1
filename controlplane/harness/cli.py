"""The product's command line against a running API server, as an operator runs it.

Why a real subprocess: ``audit`` and ``explain --kubeconfig`` are judged on what a person
gets from the shell, kubeconfig loading and exit codes included, and a fresh interpreter
cannot lean on anything a test imported before. :func:`in_process` runs the same command
line through click for a test that asks dozens of times, where starting an interpreter
each time would be most of the run. Both come from here, not from the tests' runners,
because ``bench/`` drives the harness too and nothing under ``controlplane/`` imports the
tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.harness.components import ApiServer

TIMEOUT = 300.0
#: The repository root: where every ``python -m webhooks`` of the harness runs and imports from.
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Run:
    """One finished command: its exit code and what it printed."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout decoded as JSON (``-o json``); fails with the command's stderr if not."""
        try:
            return json.loads(self.stdout)
        except ValueError as exc:
            raise AssertionError(f"{' '.join(self.args)} printed no JSON: {self.stderr}") from exc


def placement_webhooks(
    server: ApiServer,
    command: str,
    *args: str,
    kubeconfig: Path | None = None,
    timeout: float = TIMEOUT,
) -> Run:
    """``placement-webhooks COMMAND --kubeconfig <kubeconfig> ARGS...``, waited for; the
    admin's kubeconfig unless another identity's is given."""
    argv = (command, "--kubeconfig", str(kubeconfig or server.kubeconfig), *args)
    return run(*argv, timeout=timeout)


def run(*argv: str, timeout: float = TIMEOUT) -> Run:
    """``placement-webhooks ARGV...`` as a real ``python -m webhooks`` process from the
    repository, waited for, never raising on its exit code.

    Why the repository on ``PYTHONPATH``: the command runs the code of this checkout, the
    same the harness imports, whatever is installed.
    """
    done = subprocess.run(
        [sys.executable, "-m", "webhooks", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=timeout,
        check=False,
    )
    return Run(argv, done.returncode, done.stdout, done.stderr)


def in_process(server: ApiServer, command: str, *args: str) -> Run:
    """The same command line as :func:`placement_webhooks`, run by click in this process."""
    from click.testing import CliRunner

    from webhooks.cli import main

    argv = (command, "--kubeconfig", str(server.kubeconfig), *args)
    result = CliRunner().invoke(main, list(argv))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(argv, result.exit_code, result.stdout, result.stderr)
