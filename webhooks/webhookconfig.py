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
can always register) and the suite's own objects.

Injection writes only ``clientConfig.caBundle`` with server-side apply under the field
manager ``placement-webhooks``: that field then has one owner, and a ``helm upgrade`` whose
templates leave ``caBundle`` out does not reset it.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from webhooks.core.plugin import PHASES, Phase, Registry
from webhooks.k8s.podspec import MIRROR_POD_ANNOTATION

FIELD_MANAGER: Final = "placement-webhooks"
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
        table.append(row)
    return table


def rules(table: PluginTable, phase: Phase, names: Iterable[str]) -> list[dict[str, Any]]:
    """Admission rules covering exactly what the named plugins' ``phase`` halves handle.

    Why merged: one webhook serves every plugin of a phase, so a resource handled by two
    plugins is listed once with the union of their operations, and resources of one API
    group with the same operations share a rule. The ordering (by ``group|operations``, then
    resource) is what the chart's template produces too.
    """
    wanted = set(names)
    by_resource: dict[str, set[str]] = {}
    for row in table:
        if row["name"] in wanted:
            for key, ops in (row.get(phase) or {}).items():
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

    def __post_init__(self) -> None:
        if not 1 <= self.timeout_seconds <= 30:
            raise ValueError("timeout must be between 1 and 30 seconds (API server limit)")
        if self.url:
            parts = urlsplit(self.url)
            if parts.scheme != "https" or not parts.hostname:
                raise ValueError(f"url must be https://HOST[:PORT][/PATH], got {self.url!r}")
            if parts.query or parts.fragment or "@" in parts.netloc:
                raise ValueError("url must not contain a query, a fragment or user info")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"port must be between 1 and 65535, got {self.port}")


def match_conditions(settings: WebhookSettings) -> list[dict[str, str]]:
    """CEL conditions the API server evaluates before calling the suite.

    Why CEL rather than only selectors: conditions see the object and the user, they still
    apply while the suite is down, and they cost the API server microseconds. Mirror pods
    cannot be changed (the kubelet owns them), kubelet requests must never wait on the suite
    (or a node could not register while the suite's own pods are pending), and the suite
    must not admit its own pods.
    """
    return [
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


def namespace_selector(settings: WebhookSettings) -> dict[str, Any]:
    """Never send objects of the suite's namespace, ``kube-system`` or ``kube-node-lease``.

    Why: a failing webhook must not block the control plane's own namespaces or the suite's
    restart (the self-deadlock the Kubernetes docs warn about).
    """
    excluded = [settings.namespace]
    excluded += [ns for ns in settings.exclude_namespaces if ns not in excluded]
    return {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded},
        ]
    }


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
    settings: WebhookSettings, phase: Phase, name: str, path: str, rule_list: list[dict[str, Any]]
) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": _client_config(settings, path),
        "rules": rule_list,
        "failurePolicy": (
            settings.mutating_failure_policy
            if phase == "mutate"
            else settings.validating_failure_policy
        ),
        "matchPolicy": "Equivalent",
        "namespaceSelector": namespace_selector(settings),
        "sideEffects": "None",
        "timeoutSeconds": settings.timeout_seconds,
    }
    if settings.match_conditions:
        hook["matchConditions"] = match_conditions(settings)
    if phase == "mutate":
        hook["reinvocationPolicy"] = settings.reinvocation_policy
    return hook


def webhooks_for(
    settings: WebhookSettings, table: PluginTable, phase: Phase, enabled: Sequence[str]
) -> list[dict[str, Any]]:
    """The webhook entries of one configuration: one for the phase, or one per plugin.

    Why one by default: every webhook is one more HTTPS call per admission, so all plugins
    of a phase share ``/mutate`` or ``/validate``; per-plugin webhooks (``/mutate/<plugin>``)
    trade that for a failure policy and a metric per plugin. A webhook that would match
    nothing is left out.
    """
    hooks: list[dict[str, Any]] = []
    if settings.per_plugin:
        for row in table:
            if row["name"] in enabled and row.get(phase):
                name = f"{row['name']}.{phase}.{settings.name}.svc"
                path = f"/{phase}/{row['name']}"
                only = rules(table, phase, [row["name"]])
                hooks.append(_webhook(settings, phase, name, path, only))
    else:
        rule_list = rules(table, phase, enabled)
        if rule_list:
            name = f"{phase}.{settings.name}.svc"
            hooks.append(_webhook(settings, phase, name, f"/{phase}", rule_list))
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


def inject_ca_bundle(
    api: Any,
    ca_bundle: str,
    targets: Sequence[tuple[str, str]],
    timeout: float = 10.0,
    *,
    only_if_different: bool = False,
) -> list[Injected]:
    """Write ``ca_bundle`` into every webhook of the existing configurations in ``targets``.

    ``targets`` holds (kind, name) pairs. Why read first: server-side apply needs the webhook
    names (the list is keyed by name), and an apply that names only ``caBundle`` leaves every
    other field to its owner (Helm, kubectl). ``force`` takes the field over from whoever set
    it before, which is the point: one owner from now on. ``only_if_different`` skips the
    write when every webhook already carries ``ca_bundle`` (a watch loop's periodic check).
    """
    from kubernetes.client import AdmissionregistrationV1Api
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    admission = AdmissionregistrationV1Api(api)
    results: list[Injected] = []
    for kind, name in targets:
        snake = "mutating" if kind == KINDS["mutate"] else "validating"
        read = getattr(admission, f"read_{snake}_webhook_configuration")
        patch = getattr(admission, f"patch_{snake}_webhook_configuration")
        try:
            current = _json(read(name, _preload_content=False, _request_timeout=timeout))
            names = tuple(str(hook["name"]) for hook in current.get("webhooks") or [])
            if not names:
                raise InjectError(f"{kind} {name} has no webhooks to inject a caBundle into")
            if only_if_different and all(
                (hook.get("clientConfig") or {}).get("caBundle") == ca_bundle
                for hook in current.get("webhooks") or []
            ):
                results.append(Injected(kind, name, names, False))
                continue
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
        results.append(Injected(kind, name, names, before != after))
    return results


def _json(response: Any) -> dict[str, Any]:
    data = json.loads(response.data or b"{}")
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
