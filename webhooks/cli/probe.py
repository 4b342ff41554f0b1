"""``placement-webhooks probe``: prove a review round-trips, then (optionally) fail closed.

Why a command: the chart's install hook must not switch the webhooks to their fail-closed
policy before a review has actually round-tripped, ``helm test`` must prove the same, and an
operator must be able to run the very same check by hand. See :mod:`webhooks.install.probe`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from webhooks.cli.common import fail
from webhooks.install.probe import Outcome
from webhooks.install.webhookconfig import FailurePolicy

EXIT_FAILED = 1


@click.command()
@click.option(
    "--name",
    default="placement-webhooks",
    show_default=True,
    help="Name of both webhook configurations: the webhooks, addresses and caBundles to probe.",
)
@click.option(
    "--namespace",
    default="default",
    show_default=True,
    help="Namespace of the probe's dry-run Pod review (the webhooks are called directly, so "
    "an excluded namespace is fine).",
)
@click.option("--url", help="Probe this https URL instead of reading the configurations.")
@click.option(
    "--ca-file",
    type=click.Path(dir_okay=False),
    help="With --url: the PEM CA to trust.",
)
@click.option(
    "--wait",
    "wait_seconds",
    default=0.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Keep trying until every webhook answers or this many seconds pass.",
)
@click.option("--interval", default=2.0, show_default=True, type=click.FloatRange(min=0.05))
@click.option(
    "--timeout",
    default=5.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Seconds for each whole round trip: connecting, TLS, the request and the whole "
    "answer share one deadline, as the API server applies a webhook's timeoutSeconds.",
)
@click.option(
    "--failure-policy",
    "policies",
    multiple=True,
    help="WEBHOOK=Ignore|Fail: once every round trip succeeded, set that webhook's "
    "failurePolicy (server-side apply, field manager placement-webhooks-install); repeatable.",
)
@click.option("--kubeconfig", type=click.Path(dir_okay=False))
@click.option("--context", "kube_context", help="Kubeconfig context.")
def probe(
    name: str,
    namespace: str,
    url: str | None,
    ca_file: str | None,
    wait_seconds: float,
    interval: float,
    timeout: float,
    policies: tuple[str, ...],
    kubeconfig: str | None,
    kube_context: str | None,
) -> None:
    """Send a dry-run Pod review to every webhook, as the API server would, and check the answer.

    The webhooks, their addresses and the caBundle to trust come from the configurations
    NAME (or --url and --ca-file). Exit 0 when every webhook answered acceptably (and any
    --failure-policy was set), 1 when one did not within --wait or the API server refused,
    2 on unusable input.
    """
    from webhooks.certs.pki import CertError, read_pem
    from webhooks.install.probe import Target, probe_all

    wanted = _policies(policies)
    if url is not None:
        if not ca_file:
            fail("--url needs --ca-file")
        if wanted:
            fail("--failure-policy needs the configurations, not --url")
        try:
            ca = read_pem(Path(ca_file), "--ca-file")
        except CertError as exc:
            fail(str(exc))
        found = [Target(url, ca, (url,))]
        outcomes = _until(lambda: probe_all(found, namespace, timeout), wait_seconds, interval)
        _report(outcomes)
        if any(o.problem for o in outcomes):
            raise SystemExit(EXIT_FAILED)
        return
    _probe_cluster(
        name, namespace, wanted, wait_seconds, interval, timeout, kubeconfig, kube_context
    )


def _probe_cluster(
    name: str,
    namespace: str,
    wanted: dict[str, FailurePolicy],
    wait_seconds: float,
    interval: float,
    timeout: float,
    kubeconfig: str | None,
    kube_context: str | None,
) -> None:
    from webhooks.install.probe import Target, probe_all, targets
    from webhooks.install.webhookconfig import (
        KINDS,
        InjectError,
        api_client,
        read_configurations,
        set_failure_policies,
    )

    names = [(KINDS["mutate"], name), (KINDS["validate"], name)]
    configurations: list[dict[str, Any]] = []

    def attempt() -> list[Outcome]:
        nonlocal configurations
        configurations = read_configurations(api, names)
        found = targets(configurations)
        if not found:
            missing = Target(f"webhook configurations {name}", b"", ())
            return [Outcome(missing, "not found", 0.0)]
        return probe_all(found, namespace, timeout)

    try:
        api = api_client(kubeconfig, kube_context)
        outcomes = _until(attempt, wait_seconds, interval)
    except InjectError as exc:
        fail(str(exc), EXIT_FAILED)
    _report(outcomes)
    if any(o.problem for o in outcomes):
        raise SystemExit(EXIT_FAILED)
    if not wanted:
        return
    owners = {
        str(hook["name"]): (str(config["kind"]), str(config["metadata"]["name"]))
        for config in configurations
        for hook in config.get("webhooks") or []
    }
    unknown = sorted(set(wanted) - set(owners))
    if unknown:
        fail(f"no webhook {unknown[0]} in the configurations {name}", EXIT_FAILED)
    by_owner: dict[tuple[str, str], dict[str, FailurePolicy]] = {}
    for hook, policy in wanted.items():
        by_owner.setdefault(owners[hook], {})[hook] = policy
    try:
        for (kind, config_name), hooks in by_owner.items():
            changed = set_failure_policies(api, kind, config_name, hooks)
            state = "set" if changed else "already"
            listing = ", ".join(f"{hook}={policy}" for hook, policy in hooks.items())
            click.echo(f"{kind} {config_name}: failurePolicy {state} {listing}")
    except InjectError as exc:
        fail(str(exc), EXIT_FAILED)


def _until(
    attempt: Callable[[], list[Outcome]], wait_seconds: float, interval: float
) -> list[Outcome]:
    """Run ``attempt`` until none of its outcomes has a problem or the wait is over."""
    deadline = time.monotonic() + wait_seconds
    while True:
        outcomes = attempt()
        if not any(o.problem for o in outcomes) or time.monotonic() + interval > deadline:
            return outcomes
        time.sleep(interval)


def _report(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        target = outcome.target
        names = ", ".join(target.webhooks)
        where = f"{target.url} ({names})" if names and names != target.url else target.url
        if outcome.problem:
            click.echo(f"failed {where}: {outcome.problem}", err=True)
        else:
            decision = "allowed" if outcome.allowed else "denied"
            click.echo(f"ok {where}: {decision} in {outcome.seconds * 1000:.0f} ms")


def _policies(items: tuple[str, ...]) -> dict[str, FailurePolicy]:
    wanted: dict[str, FailurePolicy] = {}
    for item in items:
        hook, sep, policy = item.partition("=")
        if not sep or not hook or policy not in ("Ignore", "Fail"):
            fail(f"--failure-policy {item!r}: expected WEBHOOK=Ignore or WEBHOOK=Fail")
        wanted[hook] = "Fail" if policy == "Fail" else "Ignore"
    return wanted
