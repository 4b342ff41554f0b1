"""Where the credentials for the API server come from: the pod's service account, or a
kubeconfig file.

Why apart from the cache and the lookups: ``serve`` checks the source before it starts
workers, and the audit's and explain's lister (:mod:`.listing`) opens the same source
without any cache; all of them must decide ``auto`` and report an unusable kubeconfig in
the same words. The ``kubernetes`` client is imported only inside these functions, so the
offline CLI never loads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from webhooks.core.config import ClusterSettings

#: Where the kubelet mounts the service-account token in every pod that has one.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"

ClusterSource = Literal["in-cluster", "kubeconfig", "none"]


class ClusterError(ValueError):
    """The configured cluster source cannot be set up (no kubeconfig, not in a pod)."""


def resolve_source(
    settings: ClusterSettings,
    environ: Mapping[str, str] | None = None,
    token_path: str = SERVICE_ACCOUNT_TOKEN,
) -> ClusterSource:
    """The source ``settings`` selects, with ``auto`` decided from the environment.

    Why ``auto`` needs both the service host and the token: a laptop may export
    ``KUBERNETES_SERVICE_HOST`` for other tools, and a pod with
    ``automountServiceAccountToken: false`` has the variable but no credentials; in both
    cases asking a cluster would only turn every lookup into an error.
    """
    if settings.source != "auto":
        return settings.source
    env = os.environ if environ is None else environ
    if env.get("KUBERNETES_SERVICE_HOST") and os.path.isfile(token_path):
        return "in-cluster"
    return "none"


def client_configuration(settings: ClusterSettings, source: ClusterSource) -> Any:
    """A ``kubernetes.client.Configuration`` for ``source``; :class:`ClusterError` if unusable.

    Why retries are switched off: urllib3 would otherwise retry a timed-out GET three times,
    turning the lookup bound into four times itself; informers retry with their own backoff.
    """
    return load_configuration(source, settings.kubeconfig, settings.context)


def load_configuration(source: ClusterSource, kubeconfig: str = "", context: str = "") -> Any:
    """A fresh ``kubernetes.client.Configuration``: in-cluster, or from a kubeconfig file.

    An empty ``kubeconfig`` means kubectl's default (``$KUBECONFIG``, else
    ``~/.kube/config``) and an empty ``context`` its current context. Why urllib3's retries
    are off: every caller bounds and retries its own requests, and hidden retries would
    multiply those bounds. :class:`ClusterError` says in one line what is unusable.
    """
    from kubernetes import client
    from kubernetes import config as loaders

    config: Any = loaders  # typed loosely: the loaders' annotations vary between releases
    conf = type.__call__(client.Configuration)  # a fresh one, never the process-wide default
    try:
        if source == "in-cluster":
            config.load_incluster_config(client_configuration=conf)
        else:
            config.load_kube_config(
                # Read now: the client reads $KUBECONFIG once, when it is first imported.
                config_file=kubeconfig or os.environ.get("KUBECONFIG") or None,
                context=context or None,
                client_configuration=conf,
                persist_config=False,
            )
    except Exception as exc:  # the loaders raise ConfigException, OSError, YAML and key errors
        if source == "in-cluster":
            where = "in-cluster config"
        else:
            where = f"kubeconfig {kubeconfig or os.environ.get('KUBECONFIG') or '~/.kube/config'}"
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ClusterError(f"{where}: {detail}") from None
    conf.retries = False
    return conf


def check_source(settings: ClusterSettings) -> None:
    """Raise :class:`ClusterError` when the source ``settings`` select cannot be configured.

    Why: ``serve`` and a SIGHUP reload check before workers start, because a worker that
    cannot open its source fails to boot, and failing workers take the server down.
    """
    source = resolve_source(settings)
    if source != "none":
        client_configuration(settings, source)
