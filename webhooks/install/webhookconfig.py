"""Webhook configurations for the suite: rules from the registry, safe defaults, caBundle injection.

Why one module: the Helm chart and ``placement-webhooks webhook-config`` must register exactly
the same webhooks. The rules are computed from what each plugin's halves declare (resources
and operations), so a plugin added to the registry is registered everywhere at once; the
chart carries the same table (``files/plugins.yaml``) and a test keeps the two equal.

The defaults follow the Kubernetes webhook good practices: the mutating webhook fails open
(``Ignore``) and the validating one closed (``Fail``); ``sideEffects: None`` so dry-run
requests are sent rather than refused; the suite's own namespace, ``kube-system`` and
``kube-node-lease`` are never sent to it; and CEL ``matchConditions``, evaluated by the API
server even while the suite is down, skip mirror pods, requests made by kubelets (so a node
can always register), the suite's own objects and UPDATEs that change no placement field
(a label, a finalizer, a replica count: what controllers write all day, and in incidents).

Nodes are not registered by default. The API server validates Node taints itself with the
very rules ``taint-toleration-rules`` applies, so a webhook adds nothing there but a way to
fail, and a fail-closed one would stop the node lifecycle controller from tainting a node
that is not ready while the suite's own pods are down. Opting in (``nodes``) registers Nodes
in a webhook of their own, with its own failure policy (``Ignore`` by default) and without
the node controllers' requests.

Injection writes only ``clientConfig.caBundle`` with server-side apply under the field
manager ``placement-webhooks``: that field then has one owner, and a ``helm upgrade`` whose
templates leave ``caBundle`` out does not reset it.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from webhooks.core.config import Config
from webhooks.core.plugin import PHASES, Phase, Registry
from webhooks.k8s.podspec import MIRROR_POD_ANNOTATION, POD, TEMPLATE_KINDS, GroupKind

FIELD_MANAGER: Final = "placement-webhooks"
#: The field manager of failure policies set once the webhooks answer (``probe``). Its own:
#: server-side apply removes fields a manager owned and no longer applies, so one manager
#: must never apply caBundles in one request and failure policies in another.
POLICY_FIELD_MANAGER: Final = "placement-webhooks-install"
API_GROUP: Final = "admissionregistration.k8s.io"
API_VERSION: Final = f"{API_GROUP}/v1"
KINDS: Final[dict[Phase, str]] = {
    "mutate": "MutatingWebhookConfiguration",
    "validate": "ValidatingWebhookConfiguration",
}
PLURALS: Final[dict[str, str]] = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}

#: The order operations are listed in, so output is stable and diffs stay small.
OPERATION_ORDER: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")

#: The version registered per API group; with ``matchPolicy: Equivalent`` the API server
#: converts requests made in other versions to this one, which is the shape plugins read.
GROUP_VERSIONS: Final[dict[str, str]] = {"": "v1", "apps": "v1", "batch": "v1"}

DEFAULT_EXCLUDED_NAMESPACES: Final = ("kube-system", "kube-node-lease")
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
APP_NAME_LABEL: Final = "app.kubernetes.io/name"

#: Resources registered only in the opt-in Node webhook (:data:`NODE_WEBHOOK_PREFIX`).
NODE_RESOURCES: Final = frozenset({"nodes"})
NODE_WEBHOOK_PREFIX: Final = "nodes"
#: The name of the match condition that leaves out pods no validating check can judge.
JUDGED_PODS: Final = "a-pod-a-validating-check-can-judge"

#: Who writes Nodes for Kubernetes itself: the node lifecycle, IPAM and cloud node
#: controllers share the ``node-controller`` service account; without
#: ``--use-service-account-credentials`` the controller manager uses its own name. Their
#: taints are Kubernetes' response to incidents (not-ready, unreachable, shut down), which
#: must never wait on the suite.
NODE_CONTROLLER_USERS: Final = (
    "system:serviceaccount:kube-system:node-controller",
    "system:kube-controller-manager",
)

#: Template kinds whose UPDATE is sent when more than the pod template changes: a CronJob
#: when anything of its job template does (the Job's own fields included).
_WATCHED: Final[dict[GroupKind, tuple[str, ...]]] = {("batch", "CronJob"): ("spec", "jobTemplate")}

#: Workload resource → where its pod template lives (from the one table of template kinds);
#: an UPDATE that leaves it equal cannot change what any plugin decides about the pods it
#: makes.
TEMPLATE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    kind.resource: _WATCHED.get(key, kind.template)
    for key, kind in TEMPLATE_KINDS.items()
    if key != POD
}

#: Label selector operators the API server accepts in a namespace or object selector.
SELECTOR_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})

FailurePolicy = Literal["Ignore", "Fail"]
PluginTable = list[dict[str, Any]]


class InjectError(RuntimeError):
    """The caBundle could not be written; the message is one line saying why."""


# --------------------------------------------------------------------------- rules


def resource_key(group: str, resource: str) -> str:
    """``pods`` for the core group, ``apps/daemonsets`` otherwise.

    Why: the same spelling is used as a YAML key in the chart's table, where a tuple cannot
    appear.
    """
    return f"{group}/{resource}" if group else resource


def plugin_table(registry: Registry) -> PluginTable:
    """What each plugin handles, per phase, in chain order: the chart's ``files/plugins.yaml``.

    Why a table and not rules: enabling or disabling a plugin changes the rules, so both the
    chart and :func:`rules` derive them from this per-plugin data at render time.
    """
    table: PluginTable = []
    for plugin in registry:
        row: dict[str, Any] = {"name": plugin.name}
        for phase in PHASES:
            half = plugin.half(phase)
            if half is None:
                continue
            keys = sorted(resource_key(g, r) for g, r in half.resources)
            ops = [op for op in OPERATION_ORDER if op in half.operations]
            row[phase] = {key: list(ops) for key in keys}
        check = plugin.validate
        if check is not None and check.active is not None:
            default = check.active(plugin.settings())
            row["validateActive"] = {"key": check.active_key, "default": default}
        if check is not None and check.live_pods is not None:
            row["validatePods"] = check.live_pods
        table.append(row)
    return table


def skips_unjudged_pods(settings: WebhookSettings, mutating: bool) -> bool:
    """Whether the validating webhook leaves out the pods no validating check can judge
    (``mutating``: whether a mutating webhook is registered for pods too).

    Only when no mutating call can fail open: with a mutating webhook whose
    ``failurePolicy`` is ``Ignore``, a pod whose mutating call failed is admitted without
    the defaults unless the fail-closed validating call refuses it, so that call is every
    pod's guard. With ``Fail`` a failed mutating call refuses the pod by itself; with no
    mutating webhook (every mutation native, ``--native``) nothing can fail open. Then a
    validating call no check can answer but "allowed" adds nothing but a round trip.
    """
    return settings.skip_unjudged_pods and (
        not mutating or settings.mutating_failure_policy == "Fail"
    )


def inactive_halves(registry: Registry, config: Config) -> set[tuple[str, str]]:
    """The validating halves that check nothing under ``config`` (``Validator.active``).

    Why they are left out of the webhooks: a call whose answer is always "allowed" costs the
    API server a round trip per object; and a half that is left out contributes no resource
    and no condition. The chart decides the same from its values (``validateActive`` in its
    plugin table: the key and its default).
    """
    return {
        (plugin.name, "validate")
        for plugin in registry
        if plugin.validate is not None
        and plugin.validate.active is not None
        and not plugin.validate.active(config.plugins[plugin.name].settings)
    }


def judged_pods_condition(table: PluginTable, names: Iterable[str]) -> str | None:
    """The CEL condition under which a pod can get any answer from the named plugins'
    validating halves on a live API server, or ``None`` when every pod can.

    Why: most pods meet no validating check the API server has not already applied (see
    :attr:`~webhooks.core.plugin.Validator.live_pods`), and leaving them out of the
    validating webhook halves what each pod costs the API server. Other resources are
    always sent. ``None`` also when no named half handles pods.
    """
    wanted = set(names)
    parts = []
    for row in table:
        if row["name"] in wanted and "pods" in (row.get("validate") or {}):
            if "validatePods" not in row:
                return None
            parts.append(f"({row['validatePods']})")
    if not parts:
        return None
    return "request.resource.resource != 'pods' || " + " || ".join(parts)


def without_halves(table: PluginTable, halves: Iterable[tuple[str, str]]) -> PluginTable:
    """``table`` without the (plugin, phase) halves given: what is left for webhooks when
    native admission policies do the rest (``webhook-config --native``).

    Why a table and not a flag per plugin: a plugin's two halves can part ways (its
    mutation native, its refusal of a missing RuntimeClass on the webhook).
    """
    gone = set(halves)
    return [
        {key: value for key, value in row.items() if (row["name"], key) not in gone}
        for row in table
    ]


def rules(
    table: PluginTable,
    phase: Phase,
    names: Iterable[str],
    *,
    exclude: frozenset[str] = frozenset(),
    only: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """Admission rules covering exactly what the named plugins' ``phase`` halves handle.

    Why merged: one webhook serves every plugin of a phase, so a resource handled by two
    plugins is listed once with the union of their operations, and resources of one API
    group with the same operations share a rule. The ordering (by ``group|operations``, then
    resource) is what the chart's template produces too. ``exclude`` and ``only`` (resource
    keys such as ``nodes``) split resources between webhooks with different failure
    policies.
    """
    wanted = set(names)
    by_resource: dict[str, set[str]] = {}
    for row in table:
        if row["name"] in wanted:
            for key, ops in (row.get(phase) or {}).items():
                if key in exclude or (only is not None and key not in only):
                    continue
                by_resource.setdefault(key, set()).update(ops)
    groups: dict[str, tuple[str, list[str], list[str]]] = {}
    for key in sorted(by_resource):
        group, _, resource = key.rpartition("/")
        if group not in GROUP_VERSIONS:
            raise ValueError(f"no API version known for group {group!r} (resource {key})")
        ops = [op for op in OPERATION_ORDER if op in by_resource[key]]
        groups.setdefault(f"{group}|{','.join(ops)}", (group, ops, []))[2].append(resource)
    return [
        {
            "apiGroups": [group],
            "apiVersions": [GROUP_VERSIONS[group]],
            "operations": ops,
            "resources": resources,
        }
        for _, (group, ops, resources) in sorted(groups.items())
    ]


# --------------------------------------------------------------------------- configurations


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """How the webhooks are registered; the defaults are the chart's defaults.

    ``name`` names both configurations and is the stem of the webhook names; ``url``, when
    set, replaces the Service reference (a server outside the cluster); an empty
    ``ca_bundle`` (base64 PEM) is left out, for cert-manager's CA injector or ``--inject``.
    """

    name: str = "placement-webhooks"
    namespace: str = "placement-webhooks"
    service: str = "placement-webhooks"
    port: int = 443
    url: str = ""
    ca_bundle: str = ""
    per_plugin: bool = False
    timeout_seconds: int = 5
    mutating_failure_policy: FailurePolicy = "Ignore"
    validating_failure_policy: FailurePolicy = "Fail"
    reinvocation_policy: Literal["IfNeeded", "Never"] = "IfNeeded"
    exclude_namespaces: tuple[str, ...] = DEFAULT_EXCLUDED_NAMESPACES
    match_conditions: bool = True
    app_name: str = "placement-webhooks"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    #: A label selector on namespaces, ANDed with the built-in exclusions.
    namespace_selector: dict[str, Any] = field(default_factory=dict)
    object_selector: dict[str, Any] = field(default_factory=dict)
    #: Register Node taint validation, in a webhook of its own with this failure policy.
    nodes: bool = False
    nodes_failure_policy: FailurePolicy = "Ignore"
    #: The match condition that skips UPDATEs changing no placement field.
    skip_unchanged_updates: bool = True
    #: Users and groups whose requests are never sent (an autoscaler, a descheduler).
    skip_users: tuple[str, ...] = ()
    skip_groups: tuple[str, ...] = ()
    #: The match condition that leaves out of the validating webhook the pods no enabled
    #: validating check can judge (:func:`judged_pods_condition`), when the mutating webhook
    #: fails closed (:func:`skips_unjudged_pods`).
    skip_unjudged_pods: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.timeout_seconds <= 30:
            raise ValueError("timeout must be between 1 and 30 seconds (API server limit)")
        for what, selector in (
            ("namespace selector", self.namespace_selector),
            ("object selector", self.object_selector),
        ):
            problem = selector_problem(selector)
            if problem:
                raise ValueError(f"{what}: {problem}")
        for value in (*self.skip_users, *self.skip_groups):
            if not value or "'" in value or "\\" in value:
                raise ValueError(
                    f"a skipped user or group must be non-empty, without ' or \\: {value!r}"
                )
        if self.url:
            parts = urlsplit(self.url)
            if parts.scheme != "https" or not parts.hostname:
                raise ValueError(f"url must be https://HOST[:PORT][/PATH], got {self.url!r}")
            if parts.query or parts.fragment or "@" in parts.netloc:
                raise ValueError("url must not contain a query, a fragment or user info")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"port must be between 1 and 65535, got {self.port}")


def selector_problem(selector: dict[str, Any]) -> str:
    """Why ``selector`` is not a label selector the API server accepts, or ``""``.

    Why check here: a misspelt key (``matchLabel``) would otherwise reach the API server as
    an unknown field and be dropped, silently widening what the webhooks see.
    """
    unknown = sorted(set(selector) - {"matchLabels", "matchExpressions"})
    if unknown:
        return f"unknown key {unknown[0]!r} (matchLabels, matchExpressions)"
    labels = selector.get("matchLabels", {})
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        return "matchLabels must map label names to string values"
    expressions = selector.get("matchExpressions", [])
    if not isinstance(expressions, list):
        return "matchExpressions must be a list"
    for expression in expressions:
        if not isinstance(expression, dict) or not isinstance(expression.get("key"), str):
            return "each matchExpression needs a key"
        operator = expression.get("operator")
        if operator not in SELECTOR_OPERATORS:
            return f"operator must be one of {', '.join(sorted(SELECTOR_OPERATORS))}"
        values = expression.get("values") or []
        if (operator in ("In", "NotIn")) != bool(values):
            return f"{operator} needs values" if values == [] else f"{operator} takes no values"
    return ""


def _cel_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _or_empty(root: str, path: tuple[str, ...], empty: str) -> str:
    """``root.a.b`` when every step is present, else ``empty``: CEL errors on a missing key,
    and an error in a match condition is a failed call (``failurePolicy`` decides)."""
    steps = [f"{root}.{'.'.join(path[: i + 1])}" for i in range(len(path))]
    guard = " && ".join(f"has({step})" for step in steps)
    return f"({guard} ? {steps[-1]} : {empty})"


def _changed(path: tuple[str, ...], empty: str = "{}") -> str:
    return f"({_or_empty('object', path, empty)} != {_or_empty('oldObject', path, empty)})"


def unchanged_update_expression() -> str:
    """CEL: true unless the request is an UPDATE that changes no field a plugin reads.

    What counts per resource: a Pod's whole ``spec`` (tolerations, nodeSelector, affinity,
    runtimeClassName, overhead, container resources, resourceClaims; the API server lets an
    UPDATE change little else there, so comparing all of it costs nothing and stays right
    when a plugin starts reading another field); a workload's pod template
    (:data:`TEMPLATE_FIELDS`); a Node's ``spec.taints``. Other resources are always sent.
    Why: labels, annotations, finalizers, owner references, replica counts and status are
    what controllers write most, also in incidents, and none of them changes a decision.
    Cheap on purpose: a few map lookups and one deep comparison of the changed object.
    """
    workloads = [r for r, path in TEMPLATE_FIELDS.items() if path == ("spec", "template")]
    others = [(r, path) for r, path in TEMPLATE_FIELDS.items() if path != ("spec", "template")]
    branch = "true"
    branch = (
        f"(request.resource.resource == 'nodes' ? {_changed(('spec', 'taints'), '[]')} : {branch})"
    )
    for resource, path in reversed(others):
        branch = f"(request.resource.resource == '{resource}' ? {_changed(path)} : {branch})"
    branch = (
        f"(request.resource.resource in {_cel_list(workloads)} ? "
        f"{_changed(('spec', 'template'))} : {branch})"
    )
    branch = f"(request.resource.resource == 'pods' ? {_changed(('spec',))} : {branch})"
    return f"request.operation != 'UPDATE' || {branch}"


def skipped_requesters_expression(users: Sequence[str], groups: Sequence[str]) -> str:
    """CEL: true unless the request comes from one of ``users`` or a member of ``groups``."""
    parts = []
    if users:
        parts.append(f"!(request.userInfo.username in {_cel_list(users)})")
    if groups:
        parts.append(f"!request.userInfo.groups.exists(g, g in {_cel_list(groups)})")
    return " && ".join(parts)


def match_conditions(settings: WebhookSettings, *, nodes: bool = False) -> list[dict[str, str]]:
    """CEL conditions the API server evaluates before calling the suite (``nodes``: the Node
    webhook's, which also leave out the node controllers).

    Why CEL rather than only selectors: conditions see the object and the user, they still
    apply while the suite is down, and they cost the API server microseconds. Mirror pods
    cannot be changed (the kubelet owns them), kubelet requests must never wait on the suite
    (or a node could not register while the suite's own pods are pending), the suite must
    not admit its own pods, and an UPDATE that changes no placement field cannot change a
    decision (:func:`unchanged_update_expression`). Every expression guards absent fields
    with ``has()``: an evaluation error counts as a failed call.
    """
    conditions = [
        {
            "name": "not-a-mirror-pod",
            "expression": (
                "request.resource.resource != 'pods' || !has(object.metadata.annotations) || "
                f"!('{MIRROR_POD_ANNOTATION}' in object.metadata.annotations)"
            ),
        },
        {
            "name": "not-from-a-kubelet",
            "expression": "!('system:nodes' in request.userInfo.groups)",
        },
        {
            "name": "not-the-suite-itself",
            "expression": (
                f"request.namespace != '{settings.namespace}' || "
                "!has(object.metadata.labels) || "
                f"!('{APP_NAME_LABEL}' in object.metadata.labels) || "
                f"object.metadata.labels['{APP_NAME_LABEL}'] != '{settings.app_name}'"
            ),
        },
    ]
    if settings.skip_users or settings.skip_groups:
        conditions.append(
            {
                "name": "not-from-a-skipped-requester",
                "expression": skipped_requesters_expression(
                    settings.skip_users, settings.skip_groups
                ),
            }
        )
    if settings.skip_unchanged_updates:
        conditions.append(
            {
                "name": "not-an-update-leaving-placement-unchanged",
                "expression": unchanged_update_expression(),
            }
        )
    if nodes:
        conditions.append(
            {
                "name": "not-from-a-node-controller",
                "expression": f"!(request.userInfo.username in {_cel_list(NODE_CONTROLLER_USERS)})",
            }
        )
    return conditions


def namespace_selector(settings: WebhookSettings) -> dict[str, Any]:
    """Never send objects of the suite's namespace, ``kube-system`` or ``kube-node-lease``;
    of the others, only those ``settings.namespace_selector`` selects.

    Why merged rather than replaced: the exclusions protect the control plane's own
    namespaces and the suite's restart (the self-deadlock the Kubernetes docs warn about),
    so a selector an operator adds narrows the scope further and can never undo them.
    """
    excluded = [settings.namespace]
    excluded += [ns for ns in settings.exclude_namespaces if ns not in excluded]
    selector: dict[str, Any] = {}
    if settings.namespace_selector.get("matchLabels"):
        selector["matchLabels"] = dict(settings.namespace_selector["matchLabels"])
    selector["matchExpressions"] = [
        {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded},
        *settings.namespace_selector.get("matchExpressions", []),
    ]
    return selector


def _client_config(settings: WebhookSettings, path: str) -> dict[str, Any]:
    config: dict[str, Any]
    if settings.url:
        config = {"url": settings.url.rstrip("/") + path}
    else:
        config = {
            "service": {
                "name": settings.service,
                "namespace": settings.namespace,
                "path": path,
                "port": settings.port,
            }
        }
    if settings.ca_bundle:
        config["caBundle"] = settings.ca_bundle
    return config


def _webhook(
    settings: WebhookSettings,
    phase: Phase,
    name: str,
    path: str,
    rule_list: list[dict[str, Any]],
    *,
    nodes: bool = False,
    judged: str | None = None,
) -> dict[str, Any]:
    if nodes:
        policy = settings.nodes_failure_policy
    elif phase == "mutate":
        policy = settings.mutating_failure_policy
    else:
        policy = settings.validating_failure_policy
    hook: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": _client_config(settings, path),
        "rules": rule_list,
        "failurePolicy": policy,
        "matchPolicy": "Equivalent",
        "namespaceSelector": namespace_selector(settings),
        "sideEffects": "None",
        "timeoutSeconds": settings.timeout_seconds,
    }
    if settings.object_selector:
        hook["objectSelector"] = dict(settings.object_selector)
    if settings.match_conditions:
        hook["matchConditions"] = match_conditions(settings, nodes=nodes)
        if judged is not None and phase == "validate":
            hook["matchConditions"].append({"name": JUDGED_PODS, "expression": judged})
    if phase == "mutate":
        hook["reinvocationPolicy"] = settings.reinvocation_policy
    return hook


def webhooks_for(
    settings: WebhookSettings, table: PluginTable, phase: Phase, enabled: Sequence[str]
) -> list[dict[str, Any]]:
    """The webhook entries of one configuration: one for the phase, or one per plugin, then
    the Node webhook when ``settings.nodes`` asks for it.

    Why one by default: every webhook is one more HTTPS call per admission, so all plugins
    of a phase share ``/mutate`` or ``/validate``; per-plugin webhooks (``/mutate/<plugin>``)
    trade that for a failure policy and a metric per plugin. Nodes never share a webhook with
    pods: their failure policy and match conditions differ. A webhook that would match
    nothing is left out.
    """
    hooks: list[dict[str, Any]] = []
    mutating = bool(rules(table, "mutate", enabled, exclude=NODE_RESOURCES))
    skip = phase == "validate" and skips_unjudged_pods(settings, mutating)
    if settings.per_plugin:
        for row in table:
            if row["name"] in enabled and row.get(phase):
                only = rules(table, phase, [row["name"]], exclude=NODE_RESOURCES)
                if only:
                    name = f"{row['name']}.{phase}.{settings.name}.svc"
                    path = f"/{phase}/{row['name']}"
                    judged = judged_pods_condition(table, [row["name"]]) if skip else None
                    hooks.append(_webhook(settings, phase, name, path, only, judged=judged))
    else:
        rule_list = rules(table, phase, enabled, exclude=NODE_RESOURCES)
        if rule_list:
            name = f"{phase}.{settings.name}.svc"
            judged = judged_pods_condition(table, enabled) if skip else None
            hooks.append(_webhook(settings, phase, name, f"/{phase}", rule_list, judged=judged))
    if settings.nodes:
        node_rules = rules(table, phase, enabled, only=NODE_RESOURCES)
        if node_rules:
            name = f"{NODE_WEBHOOK_PREFIX}.{phase}.{settings.name}.svc"
            hooks.append(_webhook(settings, phase, name, f"/{phase}", node_rules, nodes=True))
    return hooks


def configurations(
    settings: WebhookSettings, table: PluginTable, enabled: Sequence[str]
) -> list[dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration objects, as plain dicts.

    Why plain dicts: they are printed as YAML and compared with the chart's rendering; a
    configuration with no webhooks (every plugin of its phase disabled) is left out rather
    than registered empty.
    """
    objects: list[dict[str, Any]] = []
    for phase in PHASES:
        hooks = webhooks_for(settings, table, phase, enabled)
        if not hooks:
            continue
        metadata: dict[str, Any] = {"name": settings.name}
        if settings.labels:
            metadata["labels"] = dict(settings.labels)
        if settings.annotations:
            metadata["annotations"] = dict(settings.annotations)
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": KINDS[phase],
                "metadata": metadata,
                "webhooks": hooks,
            }
        )
    return objects


def ca_bundle_of(pem: bytes) -> str:
    """The ``caBundle`` value for PEM certificates: base64 of the PEM bytes.

    Why a function: the API field is ``[]byte``, so JSON carries base64 of the PEM text (not
    of the DER), a frequent mistake when it is built by hand.
    """
    return base64.b64encode(pem).decode("ascii")


# --------------------------------------------------------------------------- injection


@dataclass(frozen=True, slots=True)
class Injected:
    """The outcome for one configuration: its webhooks and whether anything changed."""

    kind: str
    name: str
    webhooks: tuple[str, ...]
    changed: bool


def api_client(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A ``kubernetes`` API client from a kubeconfig, or in-cluster credentials.

    Why this order: like kubectl, an explicit ``--kubeconfig`` or ``$KUBECONFIG`` wins, then
    ``~/.kube/config``; a Job inside the cluster has neither and uses its service account.
    """
    from kubernetes import client
    from kubernetes import config as kubeconfig_loader

    config: Any = kubeconfig_loader  # its loaders are untyped
    configuration = client.Configuration()
    home_config = Path("~/.kube/config").expanduser()
    use_file = kubeconfig or os.environ.get("KUBECONFIG") or home_config.is_file()
    try:
        if use_file or not os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            config.load_incluster_config(client_configuration=configuration)
    except (config.ConfigException, OSError, TypeError, ValueError) as exc:
        raise InjectError(f"no usable cluster credentials: {_one_line(exc)}") from None
    return client.ApiClient(configuration)


def read_configurations(
    api: Any, targets: Sequence[tuple[str, str]], timeout: float = 10.0
) -> list[dict[str, Any]]:
    """The configurations in ``targets`` ((kind, name) pairs) that exist, as plain dicts.

    Why missing ones are left out rather than an error: a configuration is not rendered when
    no enabled plugin has a half of its phase; callers that need one check for it.
    """
    from kubernetes.client import AdmissionregistrationV1Api
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    admission = AdmissionregistrationV1Api(api)
    found: list[dict[str, Any]] = []
    for kind, name in targets:
        read = getattr(admission, f"read_{_snake(kind)}_webhook_configuration")
        try:
            found.append(_json(read(name, _preload_content=False, _request_timeout=timeout)))
        except ApiException as exc:
            if exc.status != 404:
                raise InjectError(f"{kind} {name}: {_api_message(exc)}") from None
        except (HTTPError, OSError) as exc:
            raise InjectError(f"{kind} {name}: API server unreachable: {_one_line(exc)}") from None
    return found


def set_failure_policies(
    api: Any,
    kind: str,
    name: str,
    policies: Mapping[str, FailurePolicy],
    timeout: float = 10.0,
) -> bool:
    """Set each named webhook's ``failurePolicy`` with server-side apply; True if it changed.

    Why two applies under :data:`POLICY_FIELD_MANAGER`: the first, forced, writes only those
    fields (everything else keeps its owner). The second gives up every ``Fail`` it holds:
    ``Fail`` is the API's default, so the field keeps its value with no owner, and the next
    ``helm upgrade`` or ``rollback`` (Helm 4 applies server-side) owns it again. A policy
    this manager kept would make any later render of another value a conflict: ``helm
    rollback`` to the fail-open install revision failed exactly so on a real API server.
    An ``Ignore`` set by hand is kept (it is not the default, and giving it up would reset it).
    """
    from kubernetes.client import AdmissionregistrationV1Api
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    admission = AdmissionregistrationV1Api(api)
    patch = getattr(admission, f"patch_{_snake(kind)}_webhook_configuration")

    def apply(hooks: Mapping[str, str], *, force: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name}}
        if hooks:
            body["webhooks"] = [{"name": hook, "failurePolicy": p} for hook, p in hooks.items()]
        return _json(
            patch(
                name,
                body,
                field_manager=POLICY_FIELD_MANAGER,
                force=force or None,
                _content_type="application/apply-patch+yaml",
                _preload_content=False,
                _request_timeout=timeout,
            )
        )

    try:
        before = read_configurations(api, [(kind, name)], timeout)
        applied = apply(policies, force=True)
        kept = {
            hook: policy
            for hook, policy in _owned_policies(applied, POLICY_FIELD_MANAGER).items()
            if policy != "Fail"
        }
        updated = apply(kept, force=False)
    except ApiException as exc:
        raise InjectError(f"{kind} {name}: {_api_message(exc)}") from None
    except (HTTPError, OSError) as exc:
        raise InjectError(f"{kind} {name}: API server unreachable: {_one_line(exc)}") from None
    old = before[0].get("metadata", {}).get("resourceVersion") if before else None
    return bool(old != updated.get("metadata", {}).get("resourceVersion"))


def _owned_policies(configuration: Mapping[str, Any], manager: str) -> dict[str, str]:
    """``{webhook: failurePolicy}`` for the policies ``manager`` owns by server-side apply.

    Read from ``metadata.managedFields`` (``f:webhooks`` / ``k:{"name":...}`` /
    ``f:failurePolicy``), with the values from the object itself.
    """
    values = {
        str(hook.get("name")): str(hook.get("failurePolicy"))
        for hook in configuration.get("webhooks") or []
    }
    owned: dict[str, str] = {}
    for entry in configuration.get("metadata", {}).get("managedFields") or []:
        if entry.get("manager") != manager or entry.get("operation") != "Apply":
            continue
        for key, fields in ((entry.get("fieldsV1") or {}).get("f:webhooks") or {}).items():
            if not key.startswith("k:") or "f:failurePolicy" not in (fields or {}):
                continue
            try:
                hook = str(json.loads(key[2:])["name"])
            except (ValueError, KeyError, TypeError):
                continue
            if hook in values:
                owned[hook] = values[hook]
    return owned


def _snake(kind: str) -> str:
    return "mutating" if kind == KINDS["mutate"] else "validating"


def inject_ca_bundle(
    api: Any,
    ca_bundle: str,
    targets: Sequence[tuple[str, str]],
    timeout: float = 10.0,
    *,
    only_if_different: bool = False,
    missing_ok: bool = False,
) -> list[Injected]:
    """Write ``ca_bundle`` into every webhook of the existing configurations in ``targets``.

    ``targets`` holds (kind, name) pairs. Why read first: server-side apply needs the webhook
    names (the list is keyed by name), and an apply that names only ``caBundle`` leaves every
    other field to its owner (Helm, kubectl). ``force`` takes the field over from whoever set
    it before, which is the point: one owner from now on. ``only_if_different`` skips the
    write when every webhook already carries ``ca_bundle`` (a watch loop's periodic check);
    ``missing_ok`` skips a configuration that does not exist (none of its plugins enabled).
    """
    from kubernetes.client import AdmissionregistrationV1Api

    admission = AdmissionregistrationV1Api(api)
    results: list[Injected] = []
    for kind, name in targets:
        done = _inject_one(admission, kind, name, ca_bundle, timeout, only_if_different, missing_ok)
        if done is not None:
            results.append(done)
    return results


def _inject_one(
    admission: Any,
    kind: str,
    name: str,
    ca_bundle: str,
    timeout: float,
    only_if_different: bool,
    missing_ok: bool,
) -> Injected | None:
    """:func:`inject_ca_bundle` for one configuration; ``None`` when it is missing and may be."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    snake = _snake(kind)
    read = getattr(admission, f"read_{snake}_webhook_configuration")
    patch = getattr(admission, f"patch_{snake}_webhook_configuration")
    try:
        try:
            current = _json(read(name, _preload_content=False, _request_timeout=timeout))
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return None
            raise
        names = tuple(str(hook["name"]) for hook in current.get("webhooks") or [])
        if not names:
            raise InjectError(f"{kind} {name} has no webhooks to inject a caBundle into")
        if only_if_different and all(
            (hook.get("clientConfig") or {}).get("caBundle") == ca_bundle
            for hook in current.get("webhooks") or []
        ):
            return Injected(kind, name, names, False)
        body = {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": {"name": name},
            "webhooks": [{"name": n, "clientConfig": {"caBundle": ca_bundle}} for n in names],
        }
        updated = _json(
            patch(
                name,
                body,
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type="application/apply-patch+yaml",
                _preload_content=False,
                _request_timeout=timeout,
            )
        )
    except ApiException as exc:
        raise InjectError(f"{kind} {name}: {_api_message(exc)}") from None
    except (HTTPError, OSError) as exc:
        raise InjectError(f"{kind} {name}: API server unreachable: {_one_line(exc)}") from None
    before = current.get("metadata", {}).get("resourceVersion")
    after = updated.get("metadata", {}).get("resourceVersion")
    return Injected(kind, name, names, before != after)


def _json(response: Any) -> dict[str, Any]:
    try:
        data = json.loads(response.data or b"{}")
    except ValueError:
        raise InjectError("the API server's answer is not JSON") from None
    return data if isinstance(data, dict) else {}


def _api_message(exc: Any) -> str:
    try:
        status = json.loads(exc.body)
        message = status.get("message") or exc.reason
    except (TypeError, ValueError, AttributeError):
        message = exc.reason
    return f"{_one_line(message)} (HTTP {exc.status})"


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
