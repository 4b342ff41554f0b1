"""SIGHUP reloads: what a config file of N exceptions or N bytes costs the master's check, and
what a whole reload of a real server costs.

Why these: a reload reads the file the operator edited, and the master that reads it is
what keeps both ports open. The check runs in a child process
(:mod:`webhooks.server.reloadcheck`), so the master's own cost is the fork and unpickling
the config it gets back; the time is the wall time the master waits, which includes the
child's reading. A whole reload adds starting the new workers with that config and
stopping the old ones.

The check surfaces run in this process: the time is the best of a few wall-clock runs
(the work is in the child, which ``thread_time`` would not see), the memory the
``tracemalloc`` peak of this process while it takes the child's answer, the master's
side. The reload surface starts a real server (``python -m bench.serve real``, two
workers) for each sample with a config of no exceptions, writes the N-exception file and
sends SIGHUP (after a first reload with no exceptions, which pays the first reload's
one-time costs): the time runs until every old worker has gone and a review over TLS is
answered, by a new worker; the memory is the master's peak RSS (``VmHWM``, reset just
before the signal) over its RSS before it.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

import webhooks.cluster.api  # noqa: F401 - imported by the master before any reload, as here
from bench import servers
from bench.growth.measure import Sample, Surface, traced_peak
from webhooks.certs.pki import generate
from webhooks.server.reloadcheck import run_checked
from webhooks.server.runner import config_for_reload

_fresh = itertools.count()
_WORK = Path(tempfile.mkdtemp(prefix="growth-reloads-"))
atexit.register(shutil.rmtree, _WORK, True)


def _exceptions(n: int) -> str:
    """A config of ``n`` exceptions, each with its own name, namespace and selector."""
    tag = next(_fresh)
    lines = ["exceptions:"]
    for i in range(n):
        lines.append(
            f"  - name: exc-{tag}-{i}\n    plugins: [dedicated-nodes]\n"
            f"    namespaces: [team-{i}]\n    objectSelector: {{matchLabels: {{app: a{i}}}}}"
        )
    return "\n".join(lines) + "\n"


def _comment_bytes(n: int) -> str:
    """A config of ``n`` bytes, nearly all of them comment lines of 100 bytes."""
    line = f"# {next(_fresh)} " + "c" * 100
    return "plugins: {}\n" + "".join(line[:99] + "\n" for _ in range(n // 100))


def _checked(make: Callable[[int], str], repeat: int = 3) -> Callable[[int], Sample]:
    """The master's check of a file ``make(n)`` writes: best wall time, this process's peak."""

    def sample(n: int) -> Sample:
        path = _WORK / f"check-{next(_fresh)}.yaml"
        path.write_text(make(n), encoding="utf-8")
        check = str(path)
        run_checked(lambda: config_for_reload(check))  # warm-up
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            run_checked(lambda: config_for_reload(check))
            best = min(best, time.perf_counter() - start)
        # The master's side only: the child inherits tracing, which slows its reading
        # several times over, so here it hands back a config already read.
        config = config_for_reload(check)
        peak = traced_peak(lambda: run_checked(lambda: config))
        path.unlink()
        return Sample(best, peak)

    return sample


def _certs() -> Path:
    certs = _WORK / "certs"
    if not (certs / "tls.crt").exists():
        generate(certs, hosts=["localhost", "127.0.0.1"])
    return certs


_REVIEW = orjson.dumps(
    {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "growth",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "growth"},
            "object": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
)


def _reset_peak(pid: int) -> None:
    """Make ``VmHWM`` start again from the current RSS (Linux ``clear_refs``), so the peak
    read afterwards is the reload's and not the server's start-up's; left as is where the
    file cannot be written."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5", encoding="ascii")


def _reload(n: int) -> Sample:
    """One real server, one SIGHUP to a config of ``n`` exceptions (see the module)."""
    certs = _certs()
    config = _WORK / f"reload-{next(_fresh)}.yaml"
    config.write_text(_exceptions(0), encoding="utf-8")
    proc, port = servers.start("real", certs, 2, config)
    try:
        _hup(proc.pid, port, certs)  # the first reload's one-time costs, with no exceptions
        config.write_text(_exceptions(n), encoding="utf-8")
        _reset_peak(proc.pid)
        before, _ = servers.memory_mib(proc.pid)
        seconds = _hup(proc.pid, port, certs)
        _, peak = servers.memory_mib(proc.pid)
        return Sample(seconds, int(max(peak - before, 0.0) * (1 << 20)))
    finally:
        servers.stop(proc)
        config.unlink(missing_ok=True)


def _hup(master: int, port: int, certs: Path) -> float:
    """SIGHUP; seconds until the old workers are gone and a review is answered."""
    old = set(servers.workers(master))
    start = time.monotonic()
    os.kill(master, signal.SIGHUP)
    deadline = start + 60
    while set(servers.workers(master)) & old or len(servers.workers(master)) < 2:
        if time.monotonic() > deadline:
            raise SystemExit("the reload did not finish within 60 s")
        time.sleep(0.005)
    answered = servers.first_200(
        port, certs / "ca.crt", deadline, ("POST", "/mutate", _REVIEW), pause=0.005
    )
    if answered is None:
        raise SystemExit("no review answered after the reload")
    return answered - start


SURFACES = [
    Surface(
        "reload check in a child: config exceptions", "exceptions", 1500, _checked(_exceptions)
    ),
    Surface(
        "reload check in a child: config bytes (comments)",
        "bytes",
        512 << 10,
        _checked(_comment_bytes),
    ),
    Surface(
        "reload of a real server: SIGHUP to new workers answering", "exceptions", 3000, _reload
    ),
]
