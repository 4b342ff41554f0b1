"""The real ``helm`` binary (built into the cache beside the control plane) against one API server.

Why the binary and not the SDK that renders the chart in ``make test``: install, upgrade and
rollback are Helm's release machinery (stored revisions, three-way merges or server-side
apply with its own field manager, hooks), and what the chart promises about them, such as
"an upgrade keeps the caBundle the pods wrote", is only true if Helm itself keeps it.

Pods never run here (no kubelet), so every call passes ``--no-hooks`` or waits for nothing:
a test plays the hook's part by running its command by hand.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controlplane import build
from controlplane.harness.binaries import NotBuilt
from controlplane.release import HELM_VERSION, tools_dir

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "placement-webhooks"


def locate_helm() -> Path:
    """The cached ``helm`` of the pinned version; :class:`NotBuilt` says how to make it."""
    if not build.is_helm_built():
        raise NotBuilt(
            f"no finished build of Helm {HELM_VERSION} in {tools_dir()}: "
            "run `make controlplane` (needs Go and the Go module proxy)"
        )
    return tools_dir() / "helm"


class HelmError(RuntimeError):
    """A helm command failed; the message has the command and Helm's own words."""


@dataclass(frozen=True, slots=True)
class Helm:
    """``helm`` with its own home (config, cache, data) under ``home`` and one kubeconfig."""

    binary: Path
    kubeconfig: Path
    home: Path

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``helm ARGS``; :class:`HelmError` on a non-zero exit when ``check``."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            "HELM_CACHE_HOME": str(self.home / "cache"),
            "HELM_CONFIG_HOME": str(self.home / "config"),
            "HELM_DATA_HOME": str(self.home / "data"),
            "NO_PROXY": "127.0.0.1,localhost",
        }
        self.home.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [str(self.binary), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        if check and proc.returncode != 0:
            raise HelmError(
                f"helm {' '.join(args)} exited {proc.returncode}:\n{proc.stderr.strip()}"
            )
        return proc

    def values_file(self, name: str, values: dict[str, Any] | None) -> Path:
        """``values`` written as a YAML file for ``--values``."""
        path = self.home / f"{name}.values.yaml"
        self.home.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(values or {}))
        return path

    def install(
        self,
        release: str,
        namespace: str,
        values: dict[str, Any] | None = None,
        *flags: str,
        chart: Path = CHART,
    ) -> subprocess.CompletedProcess[str]:
        """``helm install`` without hooks (nothing would run them) into ``namespace``."""
        return self._release("install", release, namespace, values, flags, chart)

    def upgrade(
        self,
        release: str,
        namespace: str,
        values: dict[str, Any] | None = None,
        *flags: str,
        chart: Path = CHART,
    ) -> subprocess.CompletedProcess[str]:
        """``helm upgrade`` without hooks, with exactly ``values`` (no reuse of old ones)."""
        return self._release("upgrade", release, namespace, values, flags, chart)

    def _release(
        self,
        verb: str,
        release: str,
        namespace: str,
        values: dict[str, Any] | None,
        flags: tuple[str, ...],
        chart: Path,
    ) -> subprocess.CompletedProcess[str]:
        """``helm VERB RELEASE CHART`` in ``namespace`` without hooks, ``values`` in a file
        of its own per verb, then ``flags``: install and upgrade differ only in the verb."""
        return self.run(
            verb,
            release,
            str(chart),
            "--namespace",
            namespace,
            "--no-hooks",
            "--values",
            str(self.values_file(f"{release}-{verb}", values)),
            *flags,
        )

    def rollback(self, release: str, namespace: str, revision: int) -> None:
        """``helm rollback`` to ``revision`` without hooks."""
        self.run("rollback", release, str(revision), "--namespace", namespace, "--no-hooks")

    def manifest(self, release: str, namespace: str) -> list[dict[str, Any]]:
        """The objects Helm stored for the release's current revision."""
        text = self.run("get", "manifest", release, "--namespace", namespace).stdout
        return [doc for doc in yaml.safe_load_all(text) if doc]

    def template(self, release: str, namespace: str, values: dict[str, Any] | None) -> str:
        """``helm template`` (no cluster consulted): what GitOps tools render."""
        return self.run(
            "template",
            release,
            str(CHART),
            "--namespace",
            namespace,
            "--values",
            str(self.values_file(f"{release}-template", values)),
        ).stdout
