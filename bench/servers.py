"""Servers for the HTTP benchmarks: start and stop them, read their workers' memory, and the
fake API server whose cluster their cache holds.

Why one module: the throughput, hostile-load and churn benchmarks start the same servers
the same way (``python -m bench.serve``, the real server's exact gunicorn settings) and
must not import the tests; a polling client has no place in the shipped package.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from bench import scenario
from bench.fakeapi.server import FakeApiServer
from controlplane.harness.process import free_port


def spawn(
    kind: str,
    port: int,
    certs: Path,
    workers: int = 2,
    config: Path | None = None,
    metrics_port: int | None = None,
    extra: Sequence[str] = (),
    log: Path | None = None,
) -> subprocess.Popen[bytes]:
    """``python -m bench.serve KIND`` on ``port``, in a session of its own for :func:`stop`.

    ``metrics_port``: the plain-HTTP listener of /metrics and the probes (none by default).
    ``extra``: more of ``bench.serve``'s options (the log and trace modes). ``log``: a file
    for the server's stderr (its log lines), which is discarded by default.
    """
    with contextlib.ExitStack() as stack:  # the child keeps its own copy of the log file
        stderr = stack.enter_context(log.open("ab")) if log is not None else subprocess.DEVNULL
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.serve",
                kind,
                "--bind",
                f"127.0.0.1:{port}",
                "--cert-dir",
                str(certs),
                "--workers",
                str(workers),
                *(["--config", str(config)] if config is not None else []),
                *(["--metrics-bind", f"127.0.0.1:{metrics_port}"] if metrics_port else []),
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )


def first_200(
    port: int,
    ca: Path,
    until: float,
    request: tuple[str, str, bytes | None] = ("GET", "/healthz", None),
    pause: float = 0.02,
) -> float | None:
    """When (``time.monotonic()``) ``request`` over TLS first answered 200; ``None`` at ``until``.

    ``pause`` is short because the boot figure is measured with it.
    """
    ctx = ssl.create_default_context(cafile=str(ca))
    method, path, body = request
    headers = {"Content-Type": "application/json"} if body is not None else {}
    while time.monotonic() < until:
        try:
            conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=2)
            conn.request(method, path, body=body, headers=headers)
            if conn.getresponse().status == 200:
                return time.monotonic()
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(pause)
    return None


def start(
    kind: str,
    certs: Path,
    workers: int = 2,
    config: Path | None = None,
    metrics_port: int | None = None,
    extra: Sequence[str] = (),
    log: Path | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start one app under gunicorn and wait until it is ready; the process and its port.

    The real server is ready (``/readyz``) once its caches hold the cluster; the bare apps
    have only ``/healthz``.
    """
    port = free_port()
    proc = spawn(kind, port, certs, workers, config, metrics_port, extra, log)
    probe = ("GET", "/readyz" if kind == "real" else "/healthz", None)
    if first_200(port, certs / "ca.crt", time.monotonic() + 30, probe) is None:
        stop(proc)
        raise SystemExit(f"{kind} server did not start")
    return proc, port


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server started by :func:`start`."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def workers(master: int) -> list[int]:
    """The worker pids (children of the gunicorn master)."""
    children = Path(f"/proc/{master}/task/{master}/children")
    return [int(pid) for pid in children.read_text().split()] if children.exists() else []


def memory_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MiB: resident now, and the peak resident so far."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            found[line[:5]] = int(line.split()[1]) / 1024
    return found.get("VmRSS", float("nan")), found.get("VmHWM", float("nan"))


def worker_rss_mib(master: int) -> list[float]:
    """Resident memory now of each worker, in MiB."""
    return [memory_mib(pid)[0] for pid in workers(master)]


def worker_peak_mib(master: int) -> list[float]:
    """Peak resident memory (``VmHWM``) of each worker, in MiB."""
    return [memory_mib(pid)[1] for pid in workers(master)]


def cluster_objects() -> list[dict[str, Any]]:
    """The benchmarks' Namespaces and RuntimeClasses (``bench/configs/cluster.yaml``)."""
    text = scenario.CLUSTER_OBJECTS.read_text(encoding="utf-8")
    return [obj for obj in yaml.safe_load_all(text) if obj]


def config_file(name: str, kubeconfig: Path, directory: Path) -> Path:
    """Config ``name`` (``default`` or ``full``) reading the cluster through ``kubeconfig``.

    Why a file per config: the server reads its cluster source from its config, so each
    config gets a ``cluster`` section naming the fake API server.
    """
    source = scenario.CONFIG_FILES[name]
    data: dict[str, Any] = {}
    if source is not None:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    data["cluster"] = {"source": "kubeconfig", "kubeconfig": str(kubeconfig)}
    path = directory / f"{name}.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    return path


@contextlib.contextmanager
def served_cluster(
    directory: Path, objects: list[dict[str, Any]] | None = None
) -> Iterator[tuple[FakeApiServer, dict[str, Path]]]:
    """A fake API server holding ``objects`` (the benchmarks' cluster by default), and a
    config file per config name that reads it; the server stops when the block ends."""
    fake = FakeApiServer().start()
    try:
        for obj in objects if objects is not None else cluster_objects():
            fake.put(obj)
        kubeconfig = fake.kubeconfig(directory / "kubeconfig")
        yield (
            fake,
            {name: config_file(name, kubeconfig, directory) for name in scenario.CONFIG_FILES},
        )
    finally:
        fake.close()
