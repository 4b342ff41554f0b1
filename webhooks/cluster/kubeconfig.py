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
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import yaml

from webhooks.core.config import ClusterSettings

#: Where the kubelet mounts the service-account token in every pod that has one.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
#: Beside the token: the namespace of the pod's service account.
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
#: The file kubectl reads when neither ``--kubeconfig`` nor ``$KUBECONFIG`` names one.
DEFAULT_KUBECONFIG = "~/.kube/config"

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
    if source != "in-cluster" and not context:
        # The client merges $KUBECONFIG's files as kubectl does but takes the last file's
        # current-context; kubectl takes the first, so it is named here.
        files = kubeconfig_files(kubeconfig)
        context = current_context(files) if len(files) > 1 else ""
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


def kubeconfig_files(kubeconfig: str = "", environ: Mapping[str, str] | None = None) -> list[str]:
    """The kubeconfig files kubectl reads, in its order of precedence.

    ``--kubeconfig`` alone when given; else ``$KUBECONFIG``'s list (``:``-separated,
    ``;`` on Windows, empty entries skipped); else ``~/.kube/config``. Why a list: kubectl
    merges them, and the first file to set a context or the current context wins.
    """
    if kubeconfig:
        return [os.path.expanduser(kubeconfig)]
    env = os.environ if environ is None else environ
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return [os.path.expanduser(p) for p in listed or [DEFAULT_KUBECONFIG]]


def _read(path: str) -> dict[str, Any]:
    """One kubeconfig file as a mapping ({} when it does not exist, as kubectl skips it)."""
    try:
        with open(path, encoding="utf-8") as stream:
            data = yaml.safe_load(stream)
    except FileNotFoundError:
        return {}
    except (OSError, yaml.YAMLError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ClusterError(f"kubeconfig {path}: {detail}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ClusterError(f"kubeconfig {path}: not a mapping")
    return data


def current_context(files: Sequence[str]) -> str:
    """The current context of the merged ``files``: the first that sets one ("" if none)."""
    for path in files:
        name = _read(path).get("current-context")
        if isinstance(name, str) and name:
            return name
    return ""


def context_namespace(
    kubeconfig: str = "",
    context: str = "",
    environ: Mapping[str, str] | None = None,
    token_path: str = SERVICE_ACCOUNT_TOKEN,
    namespace_path: str = SERVICE_ACCOUNT_NAMESPACE,
) -> str | None:
    """The namespace kubectl uses when no ``-n`` is given (``None``: none is set).

    The context's ``namespace``; inside a pod with neither argument, the service account's,
    as :func:`webhooks.cluster.listing.connect` then connects with it. Why ``None`` rather
    than ``"default"``: each command already has its own default, and a kubeconfig that is
    missing altogether is no error for a command that reads only manifests. A context
    named but not found, or a file that cannot be read, is a :class:`ClusterError`.
    """
    if not (kubeconfig or context):
        auto = ClusterSettings(source="auto")
        if resolve_source(auto, environ, token_path) == "in-cluster":
            try:
                with open(namespace_path, encoding="utf-8") as stream:
                    return stream.read().strip() or None
            except OSError:
                return None
    files = kubeconfig_files(kubeconfig, environ)
    configs = [_read(path) for path in files]
    name = context or current_context(files)
    for config in configs:
        for entry in config.get("contexts") or ():
            if isinstance(entry, dict) and entry.get("name") == name and name:
                body = entry.get("context")
                namespace = body.get("namespace") if isinstance(body, dict) else None
                return namespace if isinstance(namespace, str) and namespace else None
    if context:
        raise ClusterError(f"kubeconfig {os.pathsep.join(files)}: no context named {context!r}")
    return None
