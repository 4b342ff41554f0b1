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
from webhooks.webhookconfig import DEFAULT_EXCLUDED_NAMESPACES, WebhookSettings

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
@kubernetes_version_option(server=True)
def export(
    config_path: str | None,
    plugins: tuple[str, ...],
    output: str,
    hybrid: bool,
    name: str,
    namespace: str,
    exclude_namespace: tuple[str, ...],
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
    exported is exact, 1 when something is not, 2 on unusable input.
    """
    from webhooks.export import export as build
    from webhooks.plugins import REGISTRY

    config = read_config_or_exit(config_path)
    unknown = [p for p in plugins if p not in REGISTRY]
    if unknown:
        fail(f"--plugin: unknown plugin {unknown[0]!r} (known: {', '.join(REGISTRY.names)})")
    excluded = tuple(dict.fromkeys([*DEFAULT_EXCLUDED_NAMESPACES, *exclude_namespace]))
    settings = WebhookSettings(name=name, namespace=namespace, exclude_namespaces=excluded)
    target = chosen_release(kubernetes_version, kubeconfig, kube_context)
    result = build(config, REGISTRY, plugins, settings, hybrid=hybrid, release=target)
    report = result.report()
    write(output, list(result.objects), report)
    for line in report:
        click.echo(line, err=True)
    if not result.exact:
        sys.exit(EXIT_INEXACT)
