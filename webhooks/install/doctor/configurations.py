"""``configurations``: both webhook configurations exist and register what the config asks for.

Why against a render: the chart and ``webhook-config`` compute the rules and conditions from
the running config (:mod:`webhooks.install.webhookconfig`); a configuration edited by hand,
left over from an older release or rendered for another config registers resources no
plugin handles, or misses some that one does, and nothing else notices.

How it is rendered: the settings an operator chooses at install time (Service, port or URL,
one webhook per plugin, failure policies, timeout, excluded namespaces, selectors, skipped
users, which conditions are on) are read back from the live objects (:func:`inferred`), so
only what follows from them and the config is compared. Not compared: ``caBundle`` (the
``ca-bundle`` check), ``timeoutSeconds`` (``timeouts``) and ``failurePolicy``, which the
chart's install hook switches once the webhooks answer (``install.failOpenUntilReady``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from webhooks.core.config import Config
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import CONFIG_FIX, Installation
from webhooks.install.webhookconfig import (
    APP_NAME_LABEL,
    DEFAULT_EXCLUDED_NAMESPACES,
    JUDGED_PODS,
    KINDS,
    NAMESPACE_NAME_LABEL,
    NODE_WEBHOOK_PREFIX,
    FailurePolicy,
    PluginTable,
    WebhookSettings,
    configurations,
    inactive_halves,
    plugin_table,
    without_halves,
)

CHECK: Final = "configurations"

#: The fields compared per webhook, in the order a difference is named.
COMPARED: Final = (
    "clientConfig",
    "rules",
    "matchConditions",
    "namespaceSelector",
    "objectSelector",
    "sideEffects",
    "admissionReviewVersions",
    "matchPolicy",
    "reinvocationPolicy",
)

#: A hand edit owns the fields it changed (server-side apply), so Helm 4 must force them back.
FIX_RENDER: Final = (
    "helm upgrade the release with --force-conflicts (a hand edit owns what it changed), or "
    "`kubectl apply --server-side --force-conflicts` what `placement-webhooks webhook-config "
    "--config CONFIG` renders with the install's options"
)

_PATH = re.compile(r"/(mutate|validate)(/[^/]+)?/?$")
_QUOTED = re.compile(r"'([^']*)'")
_APP = re.compile(re.escape(f"object.metadata.labels['{APP_NAME_LABEL}'] != '") + r"([^']*)'")


def check(installation: Installation) -> list[Finding]:
    """Both configurations exist (when the config has halves of their phase) and every
    webhook matches the render for the running config."""
    if "configurations" in installation.unread:
        return [
            Finding(
                CHECK,
                Status.FAIL,
                f"cannot read the webhook configurations: {installation.unread['configurations']}",
                "check the kubeconfig's access (get mutating/validatingwebhookconfigurations)",
            )
        ]
    name = installation.name
    live = {str(c.get("kind")): c for c in installation.configurations}
    if not live:
        return [
            Finding(
                CHECK,
                Status.FAIL,
                f"no Mutating- or ValidatingWebhookConfiguration named {name}",
                "install the chart, or pass --name with the release's full name",
            )
        ]
    if installation.config is None:
        return [
            Finding(
                CHECK,
                Status.WARN,
                f"found {', '.join(sorted(live))} {name}, but cannot compare them with a "
                f"render: the running config was not found ({installation.config_note})",
                CONFIG_FIX,
            )
        ]
    from webhooks.plugins import REGISTRY

    try:
        settings = inferred(installation)
    except ValueError as exc:
        return [
            Finding(
                CHECK,
                Status.FAIL,
                f"the live configurations {name} hold settings no render makes: {exc}",
                FIX_RENDER,
            )
        ]
    table = served_table(installation.config, installation.served_halves)
    enabled = [p.name for p in REGISTRY if installation.config.plugins[p.name].enabled]
    expected = {str(c["kind"]): c for c in configurations(settings, table, enabled)}
    return compare(name, expected, live)


def served_table(config: Config, served: frozenset[tuple[str, str]] | None) -> PluginTable:
    """The plugin table ``webhook-config`` registers for ``config``: without the validating
    halves that check nothing, and with ``serve --native`` only the ``served`` halves."""
    from webhooks.plugins import REGISTRY

    table = without_halves(plugin_table(REGISTRY), inactive_halves(REGISTRY, config))
    if served is not None:
        every = {(row["name"], phase) for row in table for phase in KINDS}
        table = without_halves(table, every - served)
    return table


def compare(
    name: str, expected: dict[str, dict[str, Any]], live: dict[str, dict[str, Any]]
) -> list[Finding]:
    """Findings for ``live`` configurations (by kind) against the ``expected`` render."""
    findings: list[Finding] = []
    for kind in KINDS.values():
        want, have = expected.get(kind), live.get(kind)
        if want is None and have is None:
            continue
        if have is None:
            findings.append(
                Finding(
                    CHECK,
                    Status.FAIL,
                    f"{kind} {name} is missing, and the running config enables halves it "
                    "would register",
                    FIX_RENDER,
                )
            )
            continue
        if want is None:
            findings.append(
                Finding(
                    CHECK,
                    Status.WARN,
                    f"{kind} {name} exists, but the running config enables no half it would "
                    "register (every call to it is a wasted round trip)",
                    FIX_RENDER,
                )
            )
            continue
        findings.extend(_differences(kind, name, want, have))
    if not findings:
        count = sum(len(c.get("webhooks") or []) for c in live.values())
        findings.append(
            Finding(
                CHECK,
                Status.OK,
                f"{' and '.join(sorted(live))} {name} "
                f"{'match' if len(live) > 1 else 'matches'} the render for the running config "
                f"({count} webhook{'s' if count != 1 else ''})",
            )
        )
    return findings


def _differences(kind: str, name: str, want: dict[str, Any], have: dict[str, Any]) -> list[Finding]:
    wanted = {str(h["name"]): h for h in want.get("webhooks") or []}
    found = {str(h.get("name")): h for h in have.get("webhooks") or []}
    findings = []
    for hook, render in wanted.items():
        if hook not in found:
            findings.append(
                Finding(CHECK, Status.FAIL, f"{kind} {name}: webhook {hook} is missing", FIX_RENDER)
            )
            continue
        fields = [f for f in COMPARED if _normal(f, render) != _normal(f, found[hook])]
        if fields:
            findings.append(
                Finding(
                    CHECK,
                    Status.FAIL,
                    f"{kind} {name}: webhook {hook} differs from the render in {', '.join(fields)}",
                    FIX_RENDER,
                )
            )
    for hook in found:
        if hook not in wanted:
            findings.append(
                Finding(
                    CHECK,
                    Status.FAIL,
                    f"{kind} {name}: webhook {hook} is not in the render for the running config",
                    FIX_RENDER,
                )
            )
    return findings


def _normal(field: str, hook: dict[str, Any]) -> Any:
    """``hook[field]`` with the API server's defaults made explicit, so a render (which
    leaves them out) and a stored object (which has them) compare equal."""
    value = hook.get(field)
    if field == "clientConfig":
        return {k: v for k, v in (value or {}).items() if k != "caBundle"}
    if field == "rules":
        return [
            {k: v for k, v in r.items() if not (k == "scope" and v == "*")} for r in value or []
        ]
    if field in ("objectSelector", "namespaceSelector"):
        return {k: v for k, v in (value or {}).items() if v}
    if field == "matchPolicy":
        return value or "Equivalent"
    if field == "matchConditions":
        return list(value or [])
    if field == "reinvocationPolicy" and "/mutate" not in _path(hook):
        return None  # only mutating webhooks carry it
    return value


def _path(hook: dict[str, Any]) -> str:
    client = hook.get("clientConfig") or {}
    if client.get("url"):
        return str(client["url"])
    return str((client.get("service") or {}).get("path") or "")


# --------------------------------------------------------------------------- settings


def inferred(installation: Installation) -> WebhookSettings:
    """The :class:`WebhookSettings` the live configurations were rendered with, as far as
    the objects tell (each choice from the first webhook that shows it).

    Why from the objects: the chart's values are not in the cluster in a form doctor should
    read, and every install-time choice is visible in what it rendered; what the config
    decides (rules, the judged-pods condition) is then the only thing left to differ.
    """
    hooks = [
        (str(c.get("kind")), h)
        for c in installation.configurations
        for h in c.get("webhooks") or []
    ]
    node_hook = NODE_WEBHOOK_PREFIX + "."
    pods = [(k, h) for k, h in hooks if not str(h.get("name")).startswith(node_hook)]
    mutating = [h for k, h in pods if k == KINDS["mutate"]]
    validating = [h for k, h in pods if k == KINDS["validate"]]
    nodes = [h for _, h in hooks if str(h.get("name")).startswith(node_hook)]
    first = (pods or hooks)[0][1]
    client = first.get("clientConfig") or {}
    service = client.get("service") or {}
    conditions = {
        str(c.get("name")): str(c.get("expression"))
        for _, h in hooks
        for c in h.get("matchConditions") or []
    }
    judged = any(
        c.get("name") == JUDGED_PODS for h in validating for c in h.get("matchConditions") or []
    )
    mutate_policy = _policy(mutating, "Ignore")
    excluded, selector = _namespaces(first.get("namespaceSelector") or {}, installation.namespace)
    users, groups = _requesters(conditions.get("not-from-a-skipped-requester", ""))
    app = _APP.search(conditions.get("not-the-suite-itself", ""))
    timeout = first.get("timeoutSeconds")
    return WebhookSettings(
        name=installation.name,
        namespace=installation.namespace,
        service=str(service.get("name") or installation.name),
        port=int(service.get("port") or 443),
        url=_PATH.sub("", str(client["url"])) if client.get("url") else "",
        per_plugin=any(_per_plugin_path(_path(h)) for _, h in pods),
        timeout_seconds=timeout if isinstance(timeout, int) and 1 <= timeout <= 30 else 5,
        mutating_failure_policy="Fail" if judged else mutate_policy,
        validating_failure_policy=_policy(validating, "Fail"),
        reinvocation_policy="Never"
        if mutating and mutating[0].get("reinvocationPolicy") == "Never"
        else "IfNeeded",
        exclude_namespaces=excluded,
        match_conditions=bool(conditions),
        app_name=app.group(1) if app else "placement-webhooks",
        namespace_selector=selector,
        object_selector=dict(first.get("objectSelector") or {}),
        nodes=bool(nodes),
        nodes_failure_policy=_policy(nodes, "Ignore"),
        skip_unchanged_updates="not-an-update-leaving-placement-unchanged" in conditions,
        skip_users=users,
        skip_groups=groups,
        skip_unjudged_pods=judged or mutate_policy == "Ignore",
    )


def _per_plugin_path(path: str) -> bool:
    """Whether ``path`` is a plugin's own (``/mutate/<plugin>``)."""
    found = _PATH.search(path)
    return bool(found and found.group(2))


def _policy(hooks: Sequence[dict[str, Any]], default: FailurePolicy) -> FailurePolicy:
    value = hooks[0].get("failurePolicy") if hooks else None
    return "Ignore" if value == "Ignore" else "Fail" if value == "Fail" else default


def _namespaces(selector: dict[str, Any], namespace: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The excluded namespaces (but the installation's own) and the rest of the selector."""
    expressions = list(selector.get("matchExpressions") or [])
    excluded: tuple[str, ...] = DEFAULT_EXCLUDED_NAMESPACES
    if (
        expressions
        and expressions[0].get("key") == NAMESPACE_NAME_LABEL
        and expressions[0].get("operator") == "NotIn"
    ):
        excluded = tuple(str(v) for v in expressions[0].get("values") or [] if v != namespace)
        expressions = expressions[1:]
    rest: dict[str, Any] = {}
    if selector.get("matchLabels"):
        rest["matchLabels"] = dict(selector["matchLabels"])
    if expressions:
        rest["matchExpressions"] = expressions
    return excluded, rest


def _requesters(expression: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The users and groups the skipped-requester condition names."""
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    for part in expression.split(" && "):
        if "request.userInfo.username" in part:
            users = tuple(_QUOTED.findall(part))
        elif "request.userInfo.groups" in part:
            groups = tuple(_QUOTED.findall(part))
    return users, groups
