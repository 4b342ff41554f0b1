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

from tests.controlplane.native.install import ensure_namespace
from tests.controlplane.native.rest import Answer, Rest, collection

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
    """What one API server did with one case."""

    allowed: bool
    status: int
    reason: str
    warnings: tuple[str, ...]
    fields: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for a failure message."""
        if not self.allowed:
            return f"refused {self.status}: {self.reason}"
        return f"allowed {self.fields} warnings={list(self.warnings)}"


def reason_of(message: str) -> str:
    """A refusal's reason without the webhook's or the policy's wrapper."""
    return _FORBIDDEN.sub(
        "", _POLICY_DENIAL.sub("", _FORBIDDEN.sub("", _WEBHOOK_DENIAL.sub("", message)))
    )


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


def _observe(answer: Answer) -> Observation:
    if not answer.allowed:
        return Observation(False, answer.status, reason_of(answer.message), ())
    warnings = tuple(warning_of(w) for w in answer.warnings)
    return Observation(True, answer.status, "", warnings, stored_fields(answer.body))


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
    ensure_namespace(rest, namespace, copy.deepcopy(case.namespace))
    obj = copy.deepcopy(case.obj)
    obj["metadata"]["namespace"] = namespace
    created = rest.create(collection(obj), obj)
    if case.update is None or not created.allowed:
        return _observe(created)
    path = collection(obj) + "/" + obj["metadata"]["name"]
    return _observe(rest.call("PUT", path, _updated(created.body, case.update)))


def differences(webhook: Observation, native: Observation) -> list[str]:
    """How the native answer differs from the webhook's ([] when they agree).

    Compared: allowed or refused; the reason of a refusal; the stored fields; and the
    warnings (the same texts, in any order, once the wrappers are taken off).
    """
    found = []
    if webhook.allowed != native.allowed:
        found.append(f"allowed: webhook {webhook.summary()} | native {native.summary()}")
        return found
    if not webhook.allowed:
        if webhook.reason != native.reason:
            found.append(f"reason: webhook {webhook.reason!r} | native {native.reason!r}")
        return found
    for name in sorted(set(webhook.fields) | set(native.fields)):
        if webhook.fields.get(name) != native.fields.get(name):
            found.append(
                f"{name}: webhook {webhook.fields.get(name)} | native {native.fields.get(name)}"
            )
    if sorted(webhook.warnings) != sorted(native.warnings):
        found.append(f"warnings: webhook {list(webhook.warnings)} | native {list(native.warnings)}")
    return found
