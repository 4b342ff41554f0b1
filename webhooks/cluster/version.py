"""Which Kubernetes release a cluster's API server runs, read from its ``/version``.

Why its own module: ``serve`` asks once at start-up (the settings a release does not serve
are said then, :mod:`webhooks.core.availability`) and ``explain`` asks before it reads
DeviceTaintRules (the version they are served at differs by release). Both read the one
release table (:mod:`webhooks.k8s.releases`) with the answer; a server that cannot be
asked is judged as the newest release, and the answer says so.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from webhooks.cluster.failures import describe
from webhooks.cluster.kubeconfig import client_configuration, resolve_source
from webhooks.core.config import ClusterSettings
from webhooks.k8s.releases import ServerRelease, judge

#: The most of ``/version``'s answer read: a real one is under 1 KiB, and a server (or
#: something posing as one) that sends more must not make a start-up read without end.
VERSION_ANSWER_LIMIT: Final = 64 * 1024


def read_release(api_client: Any, timeout: float) -> ServerRelease:
    """The release the API server behind ``api_client`` reports, bounded by ``timeout``.

    Why never raising: what depends on the answer must work without it (the newest
    release is assumed and the note says why), and a start-up must not fail on it.
    """
    from kubernetes import client

    api: Any = client.VersionApi(api_client)
    try:
        response = api.get_code(_preload_content=False, _request_timeout=timeout)
        try:
            data = response.read(VERSION_ANSWER_LIMIT + 1)
        finally:
            response.release_conn()
        if len(data) > VERSION_ANSWER_LIMIT:
            return judge(None, f"the answer is over {VERSION_ANSWER_LIMIT} bytes")
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return judge(None, "the answer is not JSON")
    except Exception as exc:  # any failure to ask: judged as the newest, and said
        return judge(None, f"GET /version: {describe(exc, timeout)}")
    git = body.get("gitVersion") if isinstance(body, dict) else None
    return judge(git) if isinstance(git, str) else judge(None, "the answer has no gitVersion")


def server_release(settings: ClusterSettings) -> ServerRelease | None:
    """The release of the cluster ``settings`` select, or ``None`` when they select none.

    Bounded by ``lookupTimeoutSeconds``, the bound of every request the server makes.
    :class:`~webhooks.cluster.kubeconfig.ClusterError` when the source cannot be set up.
    """
    source = resolve_source(settings)
    if source == "none":
        return None
    from kubernetes import client

    api_client: Any = client.ApiClient(client_configuration(settings, source))
    try:
        return read_release(api_client, settings.lookup_timeout_seconds)
    finally:
        api_client.close()
