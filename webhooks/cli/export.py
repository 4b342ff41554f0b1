"""``placement-webhooks export``: the enabled policy as native admission policies, and a report.

Why: a cluster can run much of the policy inside the API server, with no webhook to call
(MutatingAdmissionPolicy is GA from Kubernetes 1.36, a beta behind its gate on 1.34 and
1.35); the report says, per plugin and setting, whether the native policies do exactly what
the webhooks do (``exact``), what differs (``exact except: ...``), or why nothing was exported
(``not exported: ...``). The same config drives it as the server.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import yaml

from webhooks.cli.common import config_option, fail, read_config_or_exit
from webhooks.cli.kubeversion import chosen_release, kubernetes_version_option
from webhooks.cli.staticdir import static_for, write_static
from webhooks.install.webhookconfig import DEFAULT_EXCLUDED_NAMESPACES, WebhookSettings

#: Exit status when something enabled is not exported exactly (the report says what).
EXIT_INEXACT = 1


def render(objects: list[dict[str, Any]], report: list[str]) -> str:
    """The objects as one YAML stream, the report first as comments.

    Why the report inside: the file a pipeline applies then says what it does not do.
    """
    head = "".join(f"# {line}\n" for line in report)
    body = yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True, width=100)
    return head + body


def _file_name(index: int, obj: dict[str, Any]) -> str:
    return f"{index:02d}-{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def write(target: str, objects: list[dict[str, Any]], report: list[str]) -> None:
    """Write to ``-`` (stdout), a directory (one file per object, in apply order) or a file."""
    if target == "-":
        sys.stdout.write(render(objects, report))
        return
    path = Path(target)
    try:
        if path.is_dir():
            for index, obj in enumerate(objects):
                (path / _file_name(index, obj)).write_text(render([obj], []), encoding="utf-8")
            return
        path.write_text(render(objects, report), encoding="utf-8")
    except OSError as exc:
        fail(f"{target}: {exc.strerror or exc}")


@click.command(name="export")
@config_option("Config YAML, as the server reads it.")
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="NAME",
    help="Export only this plugin (repeatable), whatever `enabled` says.",
)
@click.option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    metavar="FILE|DIR|-",
    help="Where the objects go: stdout, a file, or an existing directory (a file each).",
)
@click.option(
    "--hybrid",
    is_flag=True,
    help="Only what a hybrid installation runs natively (what `webhook-config --native` "
    "leaves out); the report then also says, per plugin, what the webhook keeps.",
)
@click.option(
    "--name",
    default="placement-webhooks",
    show_default=True,
    help="Stem of the policy names (as webhook-config's --name).",
)
@click.option(
    "--namespace",
    default="placement-webhooks",
    show_default=True,
    help="Namespace the suite runs in: left out of the policies' scope, as of the webhooks'.",
)
@click.option(
    "--exclude-namespace",
    multiple=True,
    help="Another namespace the policies never act in; repeatable. "
    f"{' and '.join(DEFAULT_EXCLUDED_NAMESPACES)} always are.",
)
@click.option(
    "--static-manifests",
    "static_dir",
    metavar="DIR",
    help="Instead of -o: write the policies as static admission manifests (KEP-5793, "
    "Kubernetes 1.36+) under DIR, with the AdmissionConfiguration that loads them; the "
    "kube-apiserver flags to set go to stderr. See docs/native.md.",
)
@click.option(
    "--server-dir",
    metavar="PATH",
    help="With --static-manifests: where DIR will be on the control-plane hosts (absolute), "
    "as the AdmissionConfiguration names it. Default: DIR's absolute path.",
)
@kubernetes_version_option(server=True)
def export(
    config_path: str | None,
    plugins: tuple[str, ...],
    output: str,
    hybrid: bool,
    name: str,
    namespace: str,
    exclude_namespace: tuple[str, ...],
    static_dir: str | None,
    server_dir: str | None,
    kubernetes_version: str | None,
    kubeconfig: str | None,
    kube_context: str | None,
) -> None:
    """Print the policy as MutatingAdmissionPolicies and ValidatingAdmissionPolicies.

    Objects are for one Kubernetes release (--kubernetes-version, or the cluster's with
    --kubeconfig; default the newest): MutatingAdmissionPolicies at the API version it
    serves (v1beta1 on 1.34 and 1.35, behind their feature gate), and only CEL it accepts
    (a plugin that needs more is not exported, and says why). The report goes to stderr
    and heads the YAML as comments, one line per plugin and setting. Exit 0 when everything
    exported is exact, 1 when something is not, 2 on unusable input. With --static-manifests
    DIR the policies are written as files the API server loads at start-up (Kubernetes
    1.36+), and stderr ends with the flags to set.
    """
    from webhooks.export import export as build
    from webhooks.export import webhook_halves
    from webhooks.export.static import POLICY_PLUGINS as POLICIES
    from webhooks.plugins import REGISTRY

    if static_dir is not None and output != "-":
        fail("--static-manifests writes DIR; give it or -o, not both")
    if server_dir is not None and static_dir is None:
        fail("--server-dir says where --static-manifests DIR is on the server: give both")
    config = read_config_or_exit(config_path)
    unknown = [p for p in plugins if p not in REGISTRY]
    if unknown:
        fail(f"--plugin: unknown plugin {unknown[0]!r} (known: {', '.join(REGISTRY.names)})")
    excluded = tuple(dict.fromkeys([*DEFAULT_EXCLUDED_NAMESPACES, *exclude_namespace]))
    settings = WebhookSettings(name=name, namespace=namespace, exclude_namespaces=excluded)
    target = chosen_release(kubernetes_version, kubeconfig, kube_context)
    static = static_dir is not None
    result = build(
        config, REGISTRY, plugins, settings, hybrid=hybrid, static=static, release=target
    )
    if static and hybrid:
        _same_halves(result.webhook, webhook_halves(config, REGISTRY, target))
    report = result.report()
    if static_dir is None:
        write(output, list(result.objects), report)
    for line in report:
        click.echo(line, err=True)
    if static_dir is not None:
        manifests = static_for(static_dir, server_dir, list(result.objects), target, POLICIES)
        write_static(static_dir, manifests)
    if not result.exact:
        sys.exit(EXIT_INEXACT)


def _same_halves(static: frozenset[tuple[str, str]], served: frozenset[tuple[str, str]]) -> None:
    """Refuse ``--hybrid --static-manifests`` where the webhook would have to keep more than
    ``webhook-config --native`` and ``serve --native`` give it (a plugin whose policies need
    params, which static manifests cannot hold)."""
    missing = sorted(static - served)
    if missing:
        halves = ", ".join(f"{plugin} ({phase})" for plugin, phase in missing)
        fail(
            "--hybrid --static-manifests: static manifests cannot hold "
            f"{halves}, which webhook-config --native leaves to the policies; "
            "disable it, or export without --hybrid"
        )
