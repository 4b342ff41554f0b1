"""``--kubernetes-version`` (and ``--kubeconfig``/``--context``): the release a command writes for.

Why an option of its own: what ``export`` writes (the API version of a
MutatingAdmissionPolicy, the CEL a policy may call) and what ``webhook-config --native`` and
``serve --native`` leave to the webhook depend on the cluster's release, and the three must
agree for one cluster. The release is named (``1.34``, ``v1.34.4``, ``v1.34.4-eks-1234``) or
read from the API server's ``/version``; the default is the newest supported release. What
each release offers is :mod:`webhooks.k8s.releases`, never decided here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from webhooks.cli.common import fail
from webhooks.k8s.releases import NEWEST, Release, UnsupportedRelease, release

_HELP = (
    "The Kubernetes release to write for (1.34, v1.34.4; a vendor suffix is fine). "
    f"Default: the newest supported, {NEWEST.name}."
)


def kubernetes_version_option(*, server: bool = False) -> Callable[[Any], Any]:
    """``--kubernetes-version``; with ``server``, also ``--kubeconfig`` and ``--context``
    (parameters ``kubernetes_version``, ``kubeconfig``, ``kube_context``)."""

    def decorate(command: Any) -> Any:
        if server:
            command = click.option(
                "--context",
                "kube_context",
                metavar="NAME",
                help="Kubeconfig context for --kubeconfig.",
            )(command)
            command = click.option(
                "--kubeconfig",
                type=click.Path(dir_okay=False),
                help="Read the release from this cluster's API server (/version) instead of "
                "--kubernetes-version.",
            )(command)
        return click.option("--kubernetes-version", metavar="VERSION", help=_HELP)(command)

    return decorate


def chosen_release(
    kubernetes_version: str | None,
    kubeconfig: str | None = None,
    kube_context: str | None = None,
) -> Release:
    """The release named by ``--kubernetes-version`` or read through ``--kubeconfig``; the
    newest when neither is given. Exits 2 (naming the supported releases) otherwise."""
    if kubernetes_version and kubeconfig:
        fail(
            "--kubernetes-version and --kubeconfig both say which release to write for; "
            "give one (--kubeconfig reads it from the API server)"
        )
    if kube_context and not kubeconfig:
        fail("--context needs --kubeconfig")
    option, text = "--kubernetes-version", kubernetes_version
    if kubeconfig:
        option, text = "--kubeconfig", server_version(kubeconfig, kube_context)
    if not text:
        return NEWEST
    try:
        return release(text)
    except UnsupportedRelease as exc:
        fail(f"{option}: {exc}")


def server_version(kubeconfig: str, kube_context: str | None = None) -> str:
    """``gitVersion`` of the API server ``kubeconfig`` (and ``kube_context``) points at.

    Why it refuses where ``serve`` assumes: what is exported for a release must be for the
    cluster's own, so an unreadable ``/version`` is an error here, not a guess.
    """
    from webhooks.cluster.version import read_release
    from webhooks.install.webhookconfig import InjectError, api_client

    try:
        api = api_client(kubeconfig, kube_context)
    except InjectError as exc:
        fail(f"--kubeconfig: {exc}")
    try:
        answer = read_release(api, timeout=10)
    finally:
        api.close()
    if not answer.reported:
        fail(f"--kubeconfig: cannot read the API server's version: {answer.failure}")
    return answer.reported
