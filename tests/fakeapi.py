"""The tests' fake API server: ``bench/fakeapi/``'s, checking applied reports against the
OpenReports CRDs as the API server does under ``fieldValidation=Strict``.

Why the schema check is added here: it needs ``jsonschema`` and the CRD files (the test
extras), which the benchmarks that share the fake neither need nor install.
"""

from __future__ import annotations

import contextlib
from typing import Any

from bench.fakeapi import server as bench_server
from bench.fakeapi.kubeconfig import TOKEN, write_kubeconfig
from bench.fakeapi.objects import namespace, runtime_class, status
from bench.fakeapi.ports import refused_port
from bench.fakeapi.transport import Request
from tests import crds

__all__ = [
    "TOKEN",
    "FakeApiServer",
    "Request",
    "namespace",
    "refused_port",
    "running",
    "runtime_class",
    "status",
    "write_kubeconfig",
]


def _schema(kind: str, body: Any) -> list[str]:
    return crds.errors(kind, body) if kind in crds.FILES else []


def _undeclared(kind: str, body: Any) -> list[str]:
    return crds.undeclared(kind, body) if kind in crds.FILES else []


class FakeApiServer(bench_server.FakeApiServer):
    """The fake, with applied OpenReports checked against their CRD schema."""

    def __init__(self) -> None:
        super().__init__()
        self.schema = _schema
        self.undeclared = _undeclared


def running(
    *objects: dict[str, Any],
) -> contextlib.AbstractContextManager[bench_server.FakeApiServer]:
    """A started fake holding ``objects``, stopped when the block ends however it ends."""
    return bench_server.running(*objects, server=FakeApiServer)
