"""Start the real server (``python -m webhooks serve``: gunicorn, TLS) for end-to-end tests."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from controlplane.harness.process import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    """A running server process and how to talk to it."""

    process: subprocess.Popen[bytes]
    port: int
    ca: Path
    log: Path
    #: The plain-HTTP port of /metrics, /healthz and /readyz (0 when not known).
    metrics_port: int = 0

    def plain(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """One request over plain HTTP to the metrics port."""
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        try:
            conn.request(method, path, body=body)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def context(self) -> ssl.SSLContext:
        """A client context that trusts only the server's CA and checks the host name."""
        ctx = ssl.create_default_context(cafile=str(self.ca))
        ctx.check_hostname = True
        return ctx

    def connect(self, timeout: float = 10.0) -> http.client.HTTPSConnection:
        """A new keep-alive connection (host name ``localhost``, verified against the CA)."""
        return http.client.HTTPSConnection(
            "localhost", self.port, context=self.context(), timeout=timeout
        )

    def request(
        self,
        method: str,
        path: str,
        body: bytes | dict[str, Any] | None = None,
        conn: http.client.HTTPSConnection | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """One request; returns status and body (closes the connection unless one was given)."""
        own = conn is None
        conn = conn or self.connect()
        data = orjson.dumps(body) if isinstance(body, dict) else body
        try:
            hdrs = {"Content-Type": "application/json"} if data is not None else {}
            hdrs.update(headers or {})
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            if own:
                conn.close()

    def output(self) -> str:
        """What the server logged so far (for failure messages)."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def wait_ready(server: Server, path: str = "/healthz", deadline: float = 20.0) -> None:
    """Poll ``path`` until it answers 200, the process dies, or ``deadline`` seconds pass."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"server exited with {server.process.returncode}:\n{server.output()}"
            )
        with contextlib.suppress(OSError, http.client.HTTPException):
            if server.request("GET", path)[0] == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"server not ready after {deadline}s:\n{server.output()}")


def launch(cmd: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in a session of its own, stdout and stderr into ``log``.

    Why a session: gunicorn's workers are children of the master, and :func:`stop` must
    reach them all with one signal to the process group.
    """
    with log.open("wb") as out:
        return subprocess.Popen(
            cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def stop(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM the process group of a process from :func:`launch`; SIGKILL after ``grace`` s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


@contextlib.contextmanager
def serving(
    workdir: Path, *args: str, cert_dir: Path | None = None, ready_path: str = "/healthz"
) -> Iterator[Server]:
    """Run ``python -m webhooks serve`` in ``workdir`` and stop it (SIGTERM, then SIGKILL)."""
    port = free_port()
    log = workdir / "server.log"
    cmd = [sys.executable, "-m", "webhooks", "serve", "--bind", f"127.0.0.1:{port}"]
    metrics_port = 0
    if "--metrics-bind" not in args:
        metrics_port = free_port()
        cmd += ["--metrics-bind", f"127.0.0.1:{metrics_port}"]
    cmd += ["--shutdown-delay", "0", *args] if "--shutdown-delay" not in args else list(args)
    if cert_dir is not None:
        cmd += ["--cert-dir", str(cert_dir)]
    # This checkout first on the path, whatever the cwd: an installed copy must not answer.
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
    process = launch(cmd, cwd=workdir, env=env, log=log)
    ca = (cert_dir or workdir / "certs") / "ca.crt"
    server = Server(process, port, ca, log, metrics_port)
    try:
        wait_ready(server, ready_path)
        yield server
    finally:
        stop(process)
