"""The API server's own metrics, read as admin: what it did, counted by itself.

Why a module of its own: readiness (which webhook configurations the API server has
loaded), the chart's proofs and the scale benches all read the same counters.
"""

from __future__ import annotations

import ssl
import urllib.request

from controlplane.harness.components import ApiServer


def apiserver_metrics(server: ApiServer) -> str:
    """The API server's ``/metrics`` text, read as admin."""
    context = ssl.create_default_context(cafile=str(server.credentials.serving.ca))
    request = urllib.request.Request(
        server.url + "/metrics",
        headers={"Authorization": f"Bearer {server.credentials.tokens['admin']}"},
    )
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        text: str = response.read().decode()
    return text


def metric_sum(text: str, name: str, /, **labels: str) -> float:
    """The sum of every sample of ``name`` whose labels include ``labels`` (a label may
    itself be called ``name``, as the webhook metrics' is)."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{key}="{wanted}"' in head for key, wanted in labels.items()):
            total += float(value)
    return total
