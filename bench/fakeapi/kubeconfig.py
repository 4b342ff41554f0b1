"""The client's side of the fake: the one bearer token it accepts and the kubeconfig that
carries it.

Why apart from the server: a test of an unreachable API server writes a kubeconfig with no
fake behind it, and the transport refuses any token but this one with 401.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The bearer token every kubeconfig written here carries; any other is refused with 401.
TOKEN = "fake-token"


def write_kubeconfig(path: Path, server: str, token: str = TOKEN) -> Path:
    """Write a kubeconfig for ``server`` with a bearer token; returns ``path``.

    Why a function of its own: a test of an unreachable API server needs a kubeconfig that
    names a port nothing listens on, with no fake behind it.
    """
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server}}],
                "users": [{"name": "tester", "user": {"token": token}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
                "current-context": "fake",
            }
        ),
        encoding="utf-8",
    )
    return path
