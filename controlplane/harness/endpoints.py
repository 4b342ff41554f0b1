"""Several ``serve`` pods behind one Service address: kube-proxy and EndpointSlices, modelled.

kube-apiserver calls a webhook registered by Service at the Service's ClusterIP; what stands
behind that address in a cluster is kube-proxy's NAT over the Service's ready endpoints. No
kubelet, pod network or kube-proxy runs here, so a small TCP forwarder in a process of its
own (so the bench's client threads never compete with it for a GIL) plays all three, and
models exactly this:

* **Rotation (kube-proxy, iptables/nftables mode).** Each new TCP connection is sent to one
  ready endpoint chosen uniformly at random, decided once, before the first byte; the
  connection then stays with that endpoint (conntrack) until either side closes it. Nothing
  is retried on another endpoint: a NAT rule never retries.
* **A process that exits (the kubelet).** The kubelet notices a container that exited at its
  next pod lifecycle relist (:data:`PLEG_PERIOD`, 1 s) and marks the pod not ready at once,
  without waiting for a probe; the EndpointSlice controller republishes and kube-proxy
  rewrites its rules at most once per ``--iptables-min-sync-period`` (:data:`PROXY_SYNC`,
  1 s, its default). Until then, connections still go to the dead endpoint, and since the
  pod's network namespace outlives its container, a connect there is refused: the
  forwarder answers that by resetting the client's connection.
* **A process that is alive but does not answer (readiness).** Only the readiness probe
  notices: the chart's ``httpGet /readyz`` on the metrics port every 5 s, 3 s timeout,
  2 failures to mark not ready, 1 success to mark ready again (:class:`Probe`), each change
  also published after :data:`PROXY_SYNC`.
* **A new or restarted process** starts not ready and joins when its first probe passes.
* **No ready endpoint**: kube-proxy installs a REJECT rule; the client's connect fails at
  once (here: accepted, then reset).

The bench publishes the replicas (name, ports, process id) in a JSON file the forwarder
re-reads when it changes, as kube-proxy watches EndpointSlices; every change of an
endpoint's readiness is logged as one JSON line, with the reason, for the bench to read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import struct
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from controlplane.harness.process import Component, free_port

#: The kubelet's pod lifecycle event generator relists containers this often (seconds).
PLEG_PERIOD = 1.0
#: kube-proxy's ``--iptables-min-sync-period`` default: a readiness change reaches the rules
#: this long after it is published (seconds).
PROXY_SYNC = 1.0
CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Probe:
    """A readiness probe; the defaults are the chart's (``templates/deployment.yaml``)."""

    period: float = 5.0
    timeout: float = 3.0
    failure_threshold: int = 2
    success_threshold: int = 1


@dataclass(frozen=True, slots=True)
class Backend:
    """One pod behind the Service: its serving and metrics ports on loopback, its process."""

    name: str
    port: int
    metrics_port: int
    pid: int


# --------------------------------------------------------------------------- the forwarder


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST (SO_LINGER 0): what the client of a refused connect sees."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


class _State:
    """One endpoint's readiness as the kubelet, the EndpointSlice and kube-proxy see it."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.ready = False  # what kube-proxy's rules say
        self.probed_ready = False  # what the kubelet last published
        self.failures = 0
        self.successes = 0
        self.exited = False


class Forwarder:
    """The Service address: accepts connections, forwards each to one ready endpoint."""

    def __init__(self, state_file: Path, probe: Probe) -> None:
        self.state_file = state_file
        self.probe = probe
        self.states: dict[str, _State] = {}
        self._stamp: tuple[int, int] | None = None
        self._probes: dict[str, asyncio.Task[None]] = {}
        self.connections: dict[str, int] = {}
        self.resets = 0

    def log(self, **fields: Any) -> None:
        print(json.dumps({"t": time.time(), **fields}), flush=True)

    def _publish(self, state: _State, ready: bool, why: str) -> None:
        """The kubelet publishes a readiness change; kube-proxy applies it after its sync."""
        if state.probed_ready == ready:
            return
        state.probed_ready = ready
        self.log(endpoint=state.backend.name, published=ready, why=why)

        def apply() -> None:
            if self.states.get(state.backend.name) is state and state.probed_ready == ready:
                state.ready = ready
                self.log(endpoint=state.backend.name, ready=ready, why=why)

        asyncio.get_running_loop().call_later(PROXY_SYNC, apply)

    def _reload(self) -> None:
        try:
            st = self.state_file.stat()
        except OSError:
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        backends = [Backend(**b) for b in json.loads(self.state_file.read_text())]
        wanted = {b.name: b for b in backends}
        for name in list(self.states):
            if name not in wanted or wanted[name] != self.states[name].backend:
                del self.states[name]
                task = self._probes.pop(name, None)
                if task is not None:
                    task.cancel()
                self.log(endpoint=name, ready=False, why="removed from the Service")
        for name, backend in wanted.items():
            if name not in self.states:
                state = self.states[name] = _State(backend)
                self._probes[name] = asyncio.create_task(self._probe_loop(state))
                self.log(endpoint=name, added=True, pid=backend.pid)

    async def _probe_once(self, backend: Backend) -> bool:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", backend.metrics_port), self.probe.timeout
            )
        except (OSError, TimeoutError):
            return False
        try:
            request = f"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:{backend.metrics_port}\r\n"
            writer.write((request + "Connection: close\r\n\r\n").encode())
            line = await asyncio.wait_for(reader.readline(), self.probe.timeout)
            return line.split(b" ")[1:2] == [b"200"]
        except (OSError, TimeoutError, IndexError):
            return False
        finally:
            writer.close()

    async def _probe_loop(self, state: _State) -> None:
        while True:
            if state.exited:
                return
            started = time.monotonic()
            ok = await self._probe_once(state.backend)
            if ok:
                state.successes, state.failures = state.successes + 1, 0
                if state.successes >= self.probe.success_threshold:
                    self._publish(state, True, "readiness probe passed")
            else:
                state.failures, state.successes = state.failures + 1, 0
                if state.failures >= self.probe.failure_threshold:
                    self._publish(state, False, "readiness probe failed")
            # The kubelet's prober ticks every period, however long a probe took.
            await asyncio.sleep(max(0.0, self.probe.period - (time.monotonic() - started)))

    async def _pleg(self) -> None:
        while True:
            self._reload()
            for state in list(self.states.values()):
                if not state.exited and _exited(state.backend.pid):
                    state.exited = True
                    self._publish(state, False, "container exited")
            await asyncio.sleep(PLEG_PERIOD)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            try:
                if writer.can_write_eof():
                    writer.write_eof()
            except OSError:
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ready = [s.backend for s in self.states.values() if s.ready]
        if not ready:
            self.resets += 1
            _reset(writer)
            return
        backend = random.choice(ready)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", backend.port)
        except OSError:
            self.resets += 1
            _reset(writer)
            return
        self.connections[backend.name] = self.connections.get(backend.name, 0) + 1
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            up_writer.close()
            writer.close()

    async def serve(self, host: str, port: int) -> None:
        self._reload()
        server = await asyncio.start_server(self._handle, host, port, backlog=1024)
        self.log(listening=f"{host}:{port}")
        pleg = asyncio.create_task(self._pleg())
        async with server:
            await server.serve_forever()
        pleg.cancel()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m controlplane.harness.endpoints --listen HOST:PORT --state FILE``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--state", required=True, type=Path)
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    asyncio.run(Forwarder(args.state, Probe()).serve(host, int(port)))
    return 0


# --------------------------------------------------------------------------- the bench's side


class ServiceAddress:
    """The forwarder as a component of the harness, and the endpoints it is told about."""

    def __init__(self, directory: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.port = port or free_port()
        self.state = directory / "endpoints.json"
        self.state.write_text("[]")
        args = [
            sys.executable,
            "-m",
            "controlplane.harness.endpoints",
            f"--listen={host}:{self.port}",
            f"--state={self.state}",
        ]
        self.component = Component("service-forwarder", args, directory / "forwarder.log")

    @property
    def url(self) -> str:
        """The address kube-apiserver is given, as it would dial a ClusterIP."""
        return f"https://{self.host}:{self.port}"

    def publish(self, backends: Sequence[Backend]) -> None:
        """Replace the endpoints (a pod started, restarted or deleted), atomically."""
        staged = self.state.with_suffix(".tmp")
        staged.write_text(json.dumps([asdict(b) for b in backends]))
        os.replace(staged, self.state)

    def events(self) -> list[dict[str, Any]]:
        """Every line the forwarder logged: readiness changes with their time and reason."""
        found = []
        for line in self.component.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found

    def ready(self) -> set[str]:
        """The endpoints kube-proxy's rules hold now."""
        ready: set[str] = set()
        for event in self.events():
            if "ready" in event:
                (ready.add if event["ready"] else ready.discard)(event["endpoint"])
        return ready

    def stop(self) -> None:
        """Stop the forwarder."""
        self.component.stop()


if __name__ == "__main__":
    raise SystemExit(main())
