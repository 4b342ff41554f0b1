"""One case sent to one API server, and what came back, in a form two servers can compare.

A case is a Namespace (labels, annotations), an object (a Pod or a DaemonSet) and, for an
UPDATE, a change made to the stored object. What is recorded is what a user sees: allowed
or refused, the refusal's reason in the plugin's words, the warnings, and the stored
fields admission decides (tolerations in order, nodeSelector, affinity, overhead).

The wrappers differ by design and are taken off before comparing: a webhook's refusal reads
``admission webhook "<name>" denied the request: <reason>`` and its warnings
``<plugin>: <text>``; a policy's refusal reads ``ValidatingAdmissionPolicy '<name>' with
binding '<name>' denied request: <reason>`` and its warnings ``Validation failed for
ValidatingAdmissionPolicy '<name>' with binding '<name>': <text>``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from controlplane.harness.nativepolicies import ensure_namespace
from controlplane.harness.rest import Answer, Rest, collection

_WEBHOOK_DENIAL = re.compile(r'^admission webhook "[^"]+" denied the request: ')
_POLICY_DENIAL = re.compile(
    r"^ValidatingAdmissionPolicy '[^']+' with binding '[^']+' denied request: "
)
_POLICY_WARNING = re.compile(
    r"^Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': "
)
_PLUGIN_WARNING = re.compile(r"^[a-z]+(-[a-z]+)+: ")
#: What ``errors.NewForbidden`` puts before a reason: the webhook's own text has it, and the
#: API server adds it around a policy's refusal with reason Forbidden.
_FORBIDDEN = re.compile(r'^pods( "[^"]*")? is forbidden: ')

POD_FIELDS = ("tolerations", "nodeSelector", "affinity", "overhead")


@dataclass(frozen=True, slots=True)
class Case:
    """One request to compare. ``update``: fields merged into the stored object for an UPDATE
    (``labels`` into its labels, ``tolerations`` appended), ``None`` for a CREATE."""

    id: str
    namespace: dict[str, Any]
    obj: dict[str, Any]
    update: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What one API server did with one case.

    ``rule`` is the plugin whose policy refused (native) and ``warned`` the plugins that
    warned, in the order of ``warnings``; a webhook's refusal names no plugin, and its
    warnings carry the plugin as their prefix.
    """

    allowed: bool
    status: int
    reason: str
    warnings: tuple[str, ...]
    fields: dict[str, Any] = field(default_factory=dict)
    rule: str = ""
    warned: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for a failure message."""
        if not self.allowed:
            return f"refused {self.status}: {self.reason}"
        return f"allowed {self.fields} warnings={list(self.warnings)}"


#: Phrases only one rule's refusals contain, by the name of the policy that holds the rule
#: natively (``placement-webhooks-<name>``): which rules a webhook's reason comes from.
RULE_PHRASES: dict[str, tuple[str, ...]] = {
    "runtime-class-scheduling": (
        "conflict: runtimeClass.scheduling",
        "Pod's Overhead doesn't match",
    ),
    "runtime-class": ("pod rejected: Pod Overhead set without", "Pod's Overhead doesn't match"),
    "pod-node-selector": ("pod node label selector", "scheduler.alpha.kubernetes.io/node-selector"),
    "anti-affinity-topology": ("affinity.PodAntiAffinity.RequiredDuringScheduling",),
    "dedicated-nodes-pinning": ("can never match the nodes of group",),
    "dedicated-nodes-foreign-tolerations": (
        "lets this pod onto the nodes dedicated to group",
        "dedicated taint of every",
    ),
    "extended-resource-toleration": ("lets this pod onto nodes reserved for",),
    "taint-toleration-rules": (": Unsupported value: ",),
}
_POLICY_NAME = re.compile(r"ValidatingAdmissionPolicy 'placement-webhooks-([a-z-]+)' with binding")
_ACTION = re.compile(r"-(enforce|warn|audit)$")


def rules_in(reason: str) -> set[str]:
    """The rules whose refusals ``reason`` (a webhook's, perhaps several joined) contains."""
    return {rule for rule, phrases in RULE_PHRASES.items() if any(p in reason for p in phrases)}


def policy_rule(text: str) -> str:
    """The rule a native refusal or warning came from: its policy's name, without an
    action's suffix (``actionOverrides``) or the paramless RuntimeClass policy's."""
    found = _POLICY_NAME.search(text)
    if found is None:
        return ""
    return _ACTION.sub("", found.group(1)).removesuffix("-overhead")


def plugin_of_rule(rule: str) -> str:
    """The plugin a rule belongs to (``dedicated-nodes-pinning`` → ``dedicated-nodes``)."""
    for suffix in ("-scheduling", "-pinning", "-foreign-tolerations"):
        rule = rule.removesuffix(suffix)
    return rule


def reason_of(message: str) -> str:
    """A refusal's reason without the webhook's or the policy's wrapper."""
    inner = _POLICY_DENIAL.sub("", _FORBIDDEN.sub("", _WEBHOOK_DENIAL.sub("", message)))
    return _FORBIDDEN.sub("", inner)


def warning_of(text: str) -> str:
    """A warning without the policy's wrapper or the webhook's plugin prefix."""
    stripped = _POLICY_WARNING.sub("", text)
    return _FORBIDDEN.sub("", stripped if stripped != text else _PLUGIN_WARNING.sub("", text))


def stored_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The fields admission decides: a Pod's, or a DaemonSet template's tolerations."""
    if obj.get("kind") == "DaemonSet":
        spec = obj["spec"]["template"]["spec"]
        return {"tolerations": spec.get("tolerations")}
    spec = obj.get("spec", {})
    return {name: spec.get(name) for name in POD_FIELDS}


def _warned(text: str) -> str:
    plugin = _PLUGIN_WARNING.match(text)
    return plugin_of_rule(policy_rule(text)) or (plugin.group(0)[:-2] if plugin else "")


def _observe(answer: Answer) -> Observation:
    if not answer.allowed:
        rule = policy_rule(answer.message)
        return Observation(False, answer.status, reason_of(answer.message), (), rule=rule)
    warnings = tuple(warning_of(w) for w in answer.warnings)
    warned = tuple(_warned(w) for w in answer.warnings)
    return Observation(True, answer.status, "", warnings, stored_fields(answer.body), warned=warned)


def _updated(stored: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(stored)
    labels = obj["metadata"].setdefault("labels", {})
    labels.update(change.get("labels", {}))
    if change.get("tolerations"):
        spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
        spec["tolerations"] = [*(spec.get("tolerations") or []), *change["tolerations"]]
    return obj


def run(rest: Rest, case: Case, namespace: str) -> Observation:
    """Send ``case`` to the API server behind ``rest`` in ``namespace`` (created here).

    An UPDATE creates the object first; when that CREATE is refused, its refusal is the
    observation (both servers must then refuse it alike).
    """
    metadata = copy.deepcopy(case.namespace)
    namespace = metadata.pop("name", namespace)
    ensure_namespace(rest, namespace, metadata)
    obj = copy.deepcopy(case.obj)
    obj["metadata"]["namespace"] = namespace
    created = rest.create(collection(obj), obj)
    if case.update is None or not created.allowed:
        return _observe(created)
    path = collection(obj) + "/" + obj["metadata"]["name"]
    return _observe(rest.call("PUT", path, _updated(created.body, case.update)))


def differences(webhook: Observation, native: Observation) -> list[str]:
    """How the native answer differs from the webhook's ([] when they agree).

    Compared: allowed or refused; the stored fields of an admitted object; the plugins that
    warn, and the text of a plugin's one warning; the reason of a refusal. A webhook names
    every validating refusal at once (``[a, b]``) and stops at the first mutating one; the
    API server names the first policy that refused, in an order of its own. So a native
    reason agrees when it is the webhook's, is one of the webhook's, or comes from another
    plugin than the webhook's reason (several rules refused the object).
    """
    found = []
    if webhook.allowed != native.allowed:
        found.append(f"allowed: webhook {webhook.summary()} | native {native.summary()}")
        return found
    if not webhook.allowed:
        inner = native.reason[1:-1] if native.reason.startswith("[") else native.reason
        same = native.reason == webhook.reason or inner in webhook.reason
        other = native.rule not in rules_in(webhook.reason)
        if not (same or other):
            found.append(f"reason: webhook {webhook.reason!r} | native {native.reason!r}")
        return found
    for name in sorted(set(webhook.fields) | set(native.fields)):
        if webhook.fields.get(name) != native.fields.get(name):
            found.append(
                f"{name}: webhook {webhook.fields.get(name)} | native {native.fields.get(name)}"
            )
    if sorted(set(webhook.warned)) != sorted(set(native.warned)):
        found.append(f"warnings: webhook {list(webhook.warnings)} | native {list(native.warnings)}")
    else:
        for plugin in set(webhook.warned):
            ours = [w for w, p in zip(webhook.warnings, webhook.warned, strict=True) if p == plugin]
            theirs = [w for w, p in zip(native.warnings, native.warned, strict=True) if p == plugin]
            if len(ours) == 1 and ours != theirs:
                found.append(f"warning of {plugin}: webhook {ours} | native {theirs}")
    return found
