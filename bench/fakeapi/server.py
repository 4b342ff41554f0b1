"""The fake API server as a test or a benchmark holds it: start and stop, the port it keeps,
the kubeconfig that reaches it, and the requests it received.

Why apart from the verbs and the transport: this is the lifecycle. The server binds port 0
itself and keeps the port while it is stopped (:mod:`bench.fakeapi.ports`), so no test picks
a port that another process may take before it is used. :meth:`FakeApiServer.stop` drops
every open connection and :meth:`FakeApiServer.start` brings the server back on the same
port.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.fakeapi.kubeconfig import write_kubeconfig
from bench.fakeapi.ports import reserve
from bench.fakeapi.transport import HttpServer, Request
from bench.fakeapi.verbs import Verbs


class FakeApiServer(Verbs):
    """The fake API server; thread-safe; start with :meth:`start`, always :meth:`stop`.

    What it stores and answers is :class:`~bench.fakeapi.verbs.Verbs`'s, how it misbehaves
    :class:`~bench.fakeapi.faults.Faults`'s; :attr:`requests` holds every request received
    (hold :attr:`lock` to read or clear it while the server runs).
    """

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Request] = []
        self.port = 0
        self._server: HttpServer | None = None
        #: While stopped, the bound socket that holds the port for the next :meth:`start`.
        self._reserved: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeApiServer:
        """Listen (again on the same port after a stop) and serve in a daemon thread.

        Why the port is bound here, and 0 the first time: the test reads :attr:`port` from
        the server that holds it, never from a port picked before something listens on it.
        """
        self.released.clear()
        sock, self._reserved = self._reserved or reserve(), None
        self._server = HttpServer(sock, self)
        self.port = int(sock.getsockname()[1])
        self.running = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and drop every open connection, watches and stalled ones included.

        The port stays held (connections to it are refused) for a later :meth:`start`;
        :meth:`close` gives it up.
        """
        if self._server is None:
            return
        self.running = False
        self.released.set()
        with self.lock:
            self.lock.notify_all()
        self._server.shutdown()
        self._server.drop_connections()
        self._reserved = reserve(self.port)  # beside the listener, so the port is never free
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def close(self) -> None:
        """Stop, and give up the port; why apart from :meth:`stop`: a stopped fake may start
        again on its port, a closed one is done."""
        self.stop()
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None

    def kubeconfig(self, path: Path) -> Path:
        """Write a kubeconfig pointing at this server with the fake's token; returns ``path``."""
        return write_kubeconfig(path, self.url)

    def cluster_config(self, directory: Path, **settings: Any) -> Path:
        """Write ``config.yaml`` whose ``cluster`` section reads this server; returns its path.

        Why: the server finds the API through its config file, so every test of that path
        writes a kubeconfig (next to it, in ``directory``) and a config naming it.
        """
        kubeconfig = self.kubeconfig(directory / "kubeconfig")
        cluster = {"source": "kubeconfig", "kubeconfig": str(kubeconfig), **settings}
        path = directory / "config.yaml"
        path.write_text(json.dumps({"cluster": cluster}), encoding="utf-8")  # JSON is YAML
        return path

    def record(self, request: Request) -> None:
        """Keep ``request`` in :attr:`requests`, as the transport receives it."""
        with self.lock:
            self.requests.append(request)

    def count(self, kind: str, plural: str) -> int:
        """How many ``kind`` (list, watch, get, patch) requests ``plural`` received."""
        with self.lock:
            return sum(1 for r in self.requests if r.kind == kind and r.plural == plural)

    def queries(self, kind: str, plural: str) -> list[dict[str, str]]:
        """The query parameters (last value of each) of every ``kind`` request on ``plural``."""
        with self.lock:
            return [
                {k: v[-1] for k, v in r.query.items()}
                for r in self.requests
                if r.kind == kind and r.plural == plural
            ]


@contextlib.contextmanager
def running(
    *objects: dict[str, Any], server: type[FakeApiServer] = FakeApiServer
) -> Iterator[FakeApiServer]:
    """A started fake (a ``server``) holding ``objects``, stopped when the block ends however
    it ends."""
    fake = server().start()
    try:
        for obj in objects:
            fake.put(obj)
        yield fake
    finally:
        fake.close()
