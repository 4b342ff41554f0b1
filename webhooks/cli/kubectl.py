"""``kubectl placement``: the commands that read a cluster or manifests, as a kubectl plugin.

Why a second group over the same commands: kubectl runs any executable ``kubectl-<name>`` on
PATH as ``kubectl <name>``, and its users type ``--kubeconfig``, ``--context`` and
``-n/--namespace`` before or after the subcommand and expect the context's namespace when
they give none. The commands are the main group's, picked by name (:data:`COMMANDS`), so
the two cannot drift apart; what kubectl's flags mean to each command is decided here and
only here (:func:`resolve`). The main group and its commands are left as they are: each
command here is a copy whose kubectl flags stand in for the command's own options.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

from webhooks import __version__
from webhooks.cli import main as root
from webhooks.cli.common import fail
from webhooks.cluster.kubeconfig import ClusterError, context_namespace, kubeconfig_files

#: The main group's commands the plugin offers, by name. ``doctor`` joins as soon as the
#: main group has it; a name the main group lacks is simply not offered.
COMMANDS = frozenset({"check", "explain", "audit", "export", "doctor"})

#: Commands whose ``-n`` defaults to the context's namespace, as kubectl's namespaced
#: commands do: objects without a namespace go there (``kubectl apply``), and explain
#: places that namespace's pods. Why not ``audit``: its default scope is the whole cluster,
#: Nodes included, and ``--write-reports`` deletes stale reports only after a whole-cluster
#: run; a context that happens to set a namespace must not narrow it silently. Why not
#: ``export`` or ``doctor``: their ``--namespace`` is where the suite runs, not the user's.
NAMESPACED = frozenset({"check", "explain"})

#: Commands that read a cluster only when ``--kubeconfig`` or ``--context`` is given, and
#: the option whose files stand in for the cluster. Under kubectl the cluster is always
#: there (the current context), so they read it unless those files are given.
CLUSTER_UNLESS = {"explain": "node_paths"}

#: The names the commands give the parameters kubectl's flags stand for.
KUBECONFIG_PARAM = "kubeconfig"
CONTEXT_PARAM = "kube_context"
NAMESPACE_PARAMS = ("namespace", "namespaces")

#: The names of kubectl's flags on the plugin's copies (apart from any the command keeps).
_KUBECONFIG, _CONTEXT, _NAMESPACE = "kubectl_kubeconfig", "kubectl_context", "kubectl_namespace"

KUBECONFIG_HELP = "Kubeconfig file [default: $KUBECONFIG's files, else ~/.kube/config]."
CONTEXT_HELP = "Kubeconfig context [default: the current one]."

HELP = """Where pods may run, from kubectl: check manifests, explain where pods fit, audit a
cluster, export the policy as native admission policies.

The flags kubectl users type, before or after the command and with the same meaning:
--kubeconfig (default: $KUBECONFIG's files merged as kubectl merges them, else
~/.kube/config), --context (default: the current one) and -n/--namespace. check and explain
take the context's namespace when -n is not given: check admits objects that name no
namespace there, as kubectl apply would create them, and explain places that namespace's
pods. explain reads the cluster's nodes unless --nodes is given. audit covers the whole
cluster unless -n names a namespace. export writes for the cluster's release when
--kubeconfig or --context is given, and its -n is the namespace the suite runs in.
"""


@dataclass(frozen=True, slots=True)
class Flags:
    """kubectl's flags as typed in one position (before or after the command)."""

    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()

    def over(self, before: Flags) -> Flags:
        """These flags (after the command) over ``before``: the later one wins, as in kubectl."""
        return Flags(
            self.kubeconfig if self.kubeconfig is not None else before.kubeconfig,
            self.context if self.context is not None else before.context,
            self.namespaces or before.namespaces,
        )


def resolve(
    name: str, command: click.Command, flags: Flags, given: Mapping[str, Any]
) -> dict[str, Any]:
    """The values of ``command``'s own parameters that kubectl's ``flags`` stand for.

    ``given`` holds the command's other parameters as parsed. The one place that maps
    kubectl's flags onto each command: what it has no parameter for is not passed on (the
    flags are still accepted), a single-valued namespace takes the last ``-n``, and a
    namespaced command (:data:`NAMESPACED`) without ``-n`` takes the context's namespace.
    """
    own = {param.name: param for param in command.params if param.name}
    values: dict[str, Any] = {}
    kubeconfig, context = flags.kubeconfig, flags.context
    if context is not None and kubeconfig is None:
        # The files kubectl reads, named: export reads a cluster only given --kubeconfig.
        kubeconfig = os.pathsep.join(kubeconfig_files())
    files = CLUSTER_UNLESS.get(name)
    if files and kubeconfig is None and not given.get(files):
        kubeconfig = ""  # the current context's cluster, as kubectl would talk to
    if KUBECONFIG_PARAM in own:
        values[KUBECONFIG_PARAM] = kubeconfig
    if CONTEXT_PARAM in own:
        values[CONTEXT_PARAM] = context
    param = next((own[n] for n in NAMESPACE_PARAMS if n in own), None)
    if param is None or param.name is None:
        return values
    namespaces = flags.namespaces
    if not namespaces and name in NAMESPACED:
        namespaces = _context_namespace(flags)
    if getattr(param, "multiple", False):
        values[param.name] = namespaces
    else:
        # The default as the command's help shows it (click keeps "none given" internal).
        values[param.name] = namespaces[-1] if namespaces else param.to_info_dict()["default"]
    return values


def _context_namespace(flags: Flags) -> tuple[str, ...]:
    try:
        found = context_namespace(flags.kubeconfig or "", flags.context or "")
    except ClusterError as exc:
        fail(str(exc))
    return (found,) if found else ()


def _flag_options(name: str, command: click.Command) -> list[click.Parameter]:
    """kubectl's three flags for the copy of ``command``, described for what it does."""
    own = {param.name: param for param in command.params if param.name}
    reads = KUBECONFIG_PARAM in own or name in NAMESPACED
    unused = "" if reads else " Accepted as kubectl accepts it; this command reads no cluster."
    kubeconfig, context = (_help(own.get(n)) for n in (KUBECONFIG_PARAM, CONTEXT_PARAM))
    namespace = next((own[n] for n in NAMESPACE_PARAMS if n in own), None)
    multiple = bool(namespace is not None and getattr(namespace, "multiple", False))
    ns_help = _help(namespace)
    if name in NAMESPACED:
        ns_help = ns_help.split(" [default:")[0] + " [default: the context's namespace]"
    return [
        click.Option(
            ["--kubeconfig", _KUBECONFIG],
            type=click.Path(dir_okay=False),
            metavar="PATH",
            help=kubeconfig or KUBECONFIG_HELP + unused,
        ),
        click.Option(
            ["--context", _CONTEXT],
            metavar="NAME",
            help=context or CONTEXT_HELP + unused,
        ),
        click.Option(
            ["-n", "--namespace", _NAMESPACE],
            multiple=multiple,
            metavar="NS",
            help=ns_help or "Accepted as kubectl accepts it; this command has no namespace.",
        ),
    ]


def _help(param: click.Parameter | None) -> str:
    """The command's own help for a parameter kubectl's flag stands for ("" if none)."""
    return (param.help or "") if isinstance(param, click.Option) else ""


def plugin_command(name: str, command: click.Command) -> click.Command:
    """A copy of the main group's ``command`` taking kubectl's flags in place of its own."""
    mapped = {KUBECONFIG_PARAM, CONTEXT_PARAM, *NAMESPACE_PARAMS}
    target = command.callback
    if target is None:
        raise ValueError(f"{name}: a command group cannot be a plugin command")

    @click.pass_context
    def run(ctx: click.Context, /, **params: Any) -> Any:
        namespaces = params.pop(_NAMESPACE) or ()  # a tuple where the command's repeats
        if isinstance(namespaces, str):
            namespaces = (namespaces,)
        after = Flags(params.pop(_KUBECONFIG), params.pop(_CONTEXT), tuple(namespaces))
        before = ctx.find_object(Flags) or Flags()
        params.update(resolve(name, command, after.over(before), params))
        return ctx.invoke(target, **params)

    plugin = copy.copy(command)
    plugin.params = [p for p in command.params if p.name not in mapped]
    plugin.params.extend(_flag_options(name, command))
    plugin.callback = run
    return plugin


def _before(kubeconfig: str | None, context: str | None, namespace: str | None) -> None:
    """The flags given before the command, kept for it; then the main group's set-up."""
    click.get_current_context().obj = Flags(kubeconfig, context, (namespace,) if namespace else ())
    if root.callback is not None:
        root.callback()


def plugin_group(commands: Mapping[str, click.Command]) -> click.Group:
    """The ``kubectl placement`` group over the ``commands`` :data:`COMMANDS` names.

    Why a function: a test builds the same group over commands that record what reaches them.
    """
    group = click.Group(
        name="kubectl placement",
        help=HELP,
        context_settings=root.context_settings,
        callback=_before,
        params=[
            click.Option(
                ["--kubeconfig"],
                type=click.Path(dir_okay=False),
                metavar="PATH",
                help=KUBECONFIG_HELP,
            ),
            click.Option(["--context"], metavar="NAME", help=CONTEXT_HELP),
            click.Option(
                ["-n", "--namespace"],
                metavar="NS",
                help="Namespace [default: as the command says].",
            ),
        ],
    )
    click.version_option(__version__, prog_name="placement-webhooks")(group)
    for name, command in commands.items():
        if name in COMMANDS:
            group.add_command(plugin_command(name, command), name)
    return group


#: ``kubectl placement``: the main group's commands :data:`COMMANDS` names.
main = plugin_group(root.commands)
