"""``placement-webhooks webhook-config``: webhook configurations without Helm; caBundle injection.

Why: not every cluster is managed with Helm, and a CA generated or rotated outside the chart
(``certs generate``, a Secret from another tool) has to reach ``caBundle``. Rendering uses
:mod:`webhooks.install.webhookconfig`, the same rules and defaults as the chart.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click
import yaml

from webhooks.cli.common import config_option, fail, read_config_or_exit
from webhooks.cli.kubeversion import chosen_release, kubernetes_version_option
from webhooks.configfile import read_document
from webhooks.install.webhookconfig import (
    DEFAULT_EXCLUDED_NAMESPACES,
    Injected,
    InjectError,
    WebhookSettings,
    api_client,
    ca_bundle_of,
    configurations,
    inactive_halves,
    inject_ca_bundle,
    plugin_table,
    without_halves,
)
from webhooks.k8s.releases import Release
from webhooks.manifests.errors import Refused

EXIT_CLUSTER = 1

POLICIES = click.Choice(["Ignore", "Fail"])


@click.command(name="webhook-config")
@config_option("Config YAML: only enabled plugins are registered.")
@click.option(
    "--name",
    default="placement-webhooks",
    show_default=True,
    help="Name of both configurations and stem of the webhook names.",
)
@click.option(
    "--namespace",
    default="placement-webhooks",
    show_default=True,
    help="Namespace the suite runs in (never sent to it).",
)
@click.option(
    "--service",
    default="placement-webhooks",
    show_default=True,
    help="Service in front of the suite.",
)
@click.option("--port", default=443, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--url",
    default="",
    help="https://HOST[:PORT] of a server outside the cluster "
    "(replaces the Service reference; /mutate and /validate are appended).",
)
@click.option(
    "--ca-file",
    type=click.Path(dir_okay=False),
    help="PEM CA that signed the serving certificate; becomes caBundle.",
)
@click.option(
    "--per-plugin",
    is_flag=True,
    help="One webhook per plugin (/mutate/<plugin>) instead of one per phase.",
)
@click.option(
    "--timeout", "timeout_seconds", default=5, show_default=True, type=click.IntRange(1, 30)
)
@click.option("--mutating-failure-policy", default="Ignore", show_default=True, type=POLICIES)
@click.option("--validating-failure-policy", default="Fail", show_default=True, type=POLICIES)
@click.option(
    "--exclude-namespace",
    multiple=True,
    help="Another namespace never sent to the suite; repeatable. Its own namespace, "
    f"{' and '.join(DEFAULT_EXCLUDED_NAMESPACES)} are always excluded.",
)
@click.option(
    "--no-match-conditions",
    is_flag=True,
    help="Leave out the CEL conditions (mirror pods, kubelets, the suite itself, "
    "unchanged UPDATEs).",
)
@click.option(
    "--send-unchanged-updates",
    is_flag=True,
    help="Also send UPDATEs that change no placement field (labels, finalizers, replicas).",
)
@click.option(
    "--validate-every-pod",
    is_flag=True,
    help="With --mutating-failure-policy Fail, also send to the validating webhook the pods no "
    "enabled validating check can judge (the API server has applied the same rules already); "
    "by default they then cost one call. With Ignore every pod is always sent.",
)
@click.option(
    "--skip-user",
    multiple=True,
    help="A user whose requests are never sent (an autoscaler, a descheduler); repeatable.",
)
@click.option("--skip-group", multiple=True, help="A group never sent; repeatable.")
@click.option(
    "--namespace-selector",
    help="A label selector (YAML or JSON) on namespaces, ANDed with the exclusions.",
)
@click.option("--object-selector", help="A label selector (YAML or JSON) on the objects.")
@click.option(
    "--nodes",
    is_flag=True,
    help="Also validate Node taints through a webhook of its own (the API server already "
    "validates them; off so Nodes never wait on the suite).",
)
@click.option(
    "--nodes-failure-policy",
    default="Ignore",
    show_default=True,
    type=POLICIES,
    help="failurePolicy of the Node webhook (--nodes).",
)
@click.option(
    "--native",
    is_flag=True,
    help="A hybrid installation: register only what the native admission policies of "
    "`placement-webhooks export --hybrid` do not do exactly, on /mutate and /validate "
    "(for `serve --native`, which runs just those halves as one chain).",
)
@click.option("--label", "labels", multiple=True, help="KEY=VALUE on both configurations.")
@click.option(
    "--annotation", "annotations", multiple=True, help="KEY=VALUE on both configurations."
)
@click.option(
    "--inject",
    is_flag=True,
    help="Write the --ca-file into the existing configurations (server-side apply, "
    "field manager placement-webhooks) instead of printing YAML.",
)
@click.option(
    "--watch",
    "watch_seconds",
    default=0.0,
    type=click.FloatRange(min=0),
    help="With --inject: keep running, and every SECONDS re-read --ca-file and re-inject "
    "wherever a caBundle differs (after a helm upgrade or a CA rotation). 0: once.",
)
@kubernetes_version_option()
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="For --inject.")
@click.option("--context", "kube_context", help="Kubeconfig context, for --inject.")
@click.option(
    "--static-manifests",
    "static_dir",
    metavar="DIR",
    help="Instead of printing: write the configurations as static admission manifests "
    "(KEP-5793, Kubernetes 1.36+) under DIR, beside `export --static-manifests`; needs "
    "--url (a static webhook cannot name a Service). See docs/native.md.",
)
@click.option(
    "--server-dir",
    metavar="PATH",
    help="With --static-manifests: where DIR will be on the control-plane hosts (absolute). "
    "Default: DIR's absolute path.",
)
def webhook_config(
    config_path: str | None,
    name: str,
    namespace: str,
    service: str,
    port: int,
    url: str,
    ca_file: str | None,
    per_plugin: bool,
    timeout_seconds: int,
    mutating_failure_policy: str,
    validating_failure_policy: str,
    exclude_namespace: tuple[str, ...],
    no_match_conditions: bool,
    send_unchanged_updates: bool,
    validate_every_pod: bool,
    skip_user: tuple[str, ...],
    skip_group: tuple[str, ...],
    namespace_selector: str | None,
    object_selector: str | None,
    nodes: bool,
    nodes_failure_policy: str,
    native: bool,
    labels: tuple[str, ...],
    annotations: tuple[str, ...],
    inject: bool,
    watch_seconds: float,
    kubeconfig: str | None,
    kube_context: str | None,
    static_dir: str | None,
    server_dir: str | None,
    kubernetes_version: str | None,
) -> None:
    """Print the Mutating- and ValidatingWebhookConfiguration, or --inject a caBundle.

    The defaults are the Helm chart's: one webhook per phase, failurePolicy Ignore for
    mutating and Fail for validating, sideEffects None, timeout 5 s, reinvocation
    IfNeeded, rules for exactly what the enabled plugins handle except Nodes (--nodes).
    With --native, only what native admission policies do not do exactly is registered,
    for a `serve --native`, on the release `export --hybrid` wrote for (--kubernetes-version).
    Exit 1 when --inject fails at the API server, 2 on unusable input.
    """
    from webhooks.plugins import REGISTRY

    if server_dir is not None and static_dir is None:
        fail("--server-dir says where --static-manifests DIR is on the server: give both")
    if static_dir is not None and (inject or not url):
        fail(
            "--static-manifests needs --url and no --inject: a static webhook is called by "
            "URL (it cannot name a Service) and is no API object to inject into"
        )
    config = read_config_or_exit(config_path)
    target = chosen_release(kubernetes_version)
    ca_bundle = _read_ca(Path(ca_file)) if ca_file else ""
    excluded = tuple(dict.fromkeys([*DEFAULT_EXCLUDED_NAMESPACES, *exclude_namespace]))
    try:
        settings = WebhookSettings(
            name=name,
            namespace=namespace,
            service=service,
            port=port,
            url=url,
            ca_bundle=ca_bundle,
            per_plugin=per_plugin,
            timeout_seconds=timeout_seconds,
            mutating_failure_policy="Fail" if mutating_failure_policy == "Fail" else "Ignore",
            validating_failure_policy="Ignore" if validating_failure_policy == "Ignore" else "Fail",
            exclude_namespaces=excluded,
            match_conditions=not no_match_conditions,
            skip_unchanged_updates=not send_unchanged_updates,
            skip_unjudged_pods=not validate_every_pod,
            skip_users=skip_user,
            skip_groups=skip_group,
            namespace_selector=_selector("--namespace-selector", namespace_selector),
            object_selector=_selector("--object-selector", object_selector),
            nodes=nodes,
            nodes_failure_policy="Fail" if nodes_failure_policy == "Fail" else "Ignore",
            labels=_pairs("--label", labels),
            annotations=_pairs("--annotation", annotations),
        )
    except ValueError as exc:
        fail(str(exc))
    if native and per_plugin:
        fail(
            "--per-plugin with --native: the API server would call the kept halves' webhooks "
            "in an order and as often as its own reinvocation decides, not as one chain"
        )
    enabled = [p.name for p in REGISTRY if config.plugins[p.name].enabled]
    table = without_halves(plugin_table(REGISTRY), inactive_halves(REGISTRY, config))
    if native:
        from webhooks.export import webhook_halves

        served = webhook_halves(config, REGISTRY, target)
        halves = {(row["name"], phase) for row in table for phase in ("mutate", "validate")}
        table = without_halves(table, halves - served)
    objects = configurations(settings, table, enabled)
    if watch_seconds and not inject:
        fail("--watch needs --inject")
    if inject:
        _inject(objects, ca_bundle, ca_file, kubeconfig, kube_context, watch_seconds)
        return
    if static_dir is not None:
        _static(objects, static_dir, server_dir, bool(ca_bundle), target)
        return
    if not ca_bundle:
        click.echo(
            "placement-webhooks: no --ca-file: caBundle left out (inject it with --inject "
            "or cert-manager's CA injector)",
            err=True,
        )
    sys.stdout.write(yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True))


def _static(
    objects: list[dict[str, Any]],
    target: str,
    server_dir: str | None,
    ca: bool,
    release: Release,
) -> None:
    """``--static-manifests``: the configurations as files the API server loads at start-up.

    Why a webhook may be static too: the API server calls it from its first request, and
    nobody can delete its configuration through the API; the webhook itself must be up by
    then (its failurePolicy decides what happens until it is).
    """
    from webhooks.cli.staticdir import static_for, write_static
    from webhooks.export.static import WEBHOOK_PLUGINS

    if not ca:
        click.echo(
            "placement-webhooks: no --ca-file: caBundle left out; the API server then "
            "trusts only its host's roots for the --url",
            err=True,
        )
    write_static(target, static_for(target, server_dir, objects, release, WEBHOOK_PLUGINS))


def _inject(
    objects: list[dict[str, Any]],
    ca_bundle: str,
    ca_file: str | None,
    kubeconfig: str | None,
    kube_context: str | None,
    watch_seconds: float,
) -> None:
    """``--inject``: write ``ca_bundle`` into the configurations ``objects`` name, then keep
    it there every ``watch_seconds`` (``--watch``) when asked."""
    if not ca_bundle:
        fail("--inject needs --ca-file")
    targets = [(obj["kind"], obj["metadata"]["name"]) for obj in objects]
    try:
        api = api_client(kubeconfig, kube_context)
        _report(inject_ca_bundle(api, ca_bundle, targets), quiet=False)
    except InjectError as exc:
        fail(str(exc), EXIT_CLUSTER)
    if watch_seconds > 0 and ca_file:
        _watch(api, Path(ca_file), targets, watch_seconds)


def _selector(option: str, text: str | None) -> dict[str, Any]:
    """A label selector given as YAML or JSON text (``None``: none)."""
    if text is None:
        return {}
    try:
        selector = read_document(text)
    except Refused as exc:
        fail(f"{option}: {exc.reason}")
    if selector is None:
        return {}
    if not isinstance(selector, dict):
        fail(f"{option}: a label selector is a mapping (matchLabels, matchExpressions)")
    return selector


def _pairs(option: str, items: tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` items as a dict, in order."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"{option} {item!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs


def _report(results: list[Injected], *, quiet: bool) -> None:
    for result in results:
        if quiet and not result.changed:
            continue
        state = "updated" if result.changed else "unchanged"
        count = len(result.webhooks)
        click.echo(
            f"{result.kind} {result.name}: caBundle {state} "
            f"({count} webhook{'s' if count != 1 else ''})"
        )


def _watch(api: object, ca_file: Path, targets: list[tuple[str, str]], seconds: float) -> None:
    """Re-inject whenever a caBundle drifts from the CA file, until SIGTERM or SIGINT.

    Why polling: it also notices a changed CA file (a mounted Secret that cert-manager or
    the chart rotated), and a GET per configuration every few seconds costs the API server
    nothing; writes happen only when something differs. Errors are reported and retried.
    """
    from webhooks.certs.pki import CertError, inspect

    stopping = threading.Event()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()  # finish the current round, then exit 0

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    click.echo(f"watching every {seconds:g}s; stop with SIGTERM", err=True)
    while not stopping.wait(seconds):
        try:
            inspect(ca_file)  # a half-written file is skipped until it parses
            bundle = ca_bundle_of(ca_file.read_bytes())
            _report(inject_ca_bundle(api, bundle, targets, only_if_different=True), quiet=True)
        except (CertError, OSError, InjectError) as exc:
            click.echo(f"placement-webhooks: {exc} (retrying)", err=True)


def _read_ca(path: Path) -> str:
    from webhooks.certs.pki import CertError, inspect, seconds_to_expiry

    try:
        infos = inspect(path)
    except CertError as exc:
        fail(str(exc))
    if not any(info.is_ca for info in infos):
        click.echo(
            f"placement-webhooks: warning: {path} holds no CA certificate; the API server "
            "will trust it only if the server presents this very certificate",
            err=True,
        )
    for info in infos:
        if seconds_to_expiry(info.not_after) <= 0:
            click.echo(
                f"placement-webhooks: warning: {path}: {info.subject} expired at "
                f"{info.not_after.isoformat()}",
                err=True,
            )
    return ca_bundle_of(path.read_bytes())
