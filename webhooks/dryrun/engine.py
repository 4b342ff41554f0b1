"""Run the configured admission chain over manifests and collect findings.

For every request :mod:`~webhooks.dryrun.expand` builds, the engine calls
:meth:`Admission.decide` with both phases in one call, as ``review`` does: the mutating
plugins, then the validating ones on the mutated object. The server answers one phase per
endpoint, and the API server calls ``/mutate`` and then ``/validate`` with what the first
returned, which comes to the same decision. Then the engine runs the mutating phase once
more on the result: a second pass that changes anything is a
``convergence`` finding, because the API server may re-invoke webhooks and a suite that
keeps changing objects makes them drift. Findings carry the field path the plugin reported,
mapped back to the manifest (Pod paths onto the template) and to the YAML line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import jsonpatch

from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.plugin import PHASES
from webhooks.core.result import Outcome, Violation
from webhooks.dryrun.expand import (
    CONTEXT_KINDS,
    KINDS,
    Target,
    name_of,
    namespace_of,
    object_target,
    pod_target,
    template_field,
    template_pointer,
)
from webhooks.dryrun.report import (
    CONVERGENCE,
    SCHEMA,
    Checked,
    Finding,
    FindingType,
    Report,
    SchemaError,
)
from webhooks.k8s.podspec import (
    NODE,
    POD,
    POD_SPEC_PATHS,
    GroupKind,
    dotted,
    foreign,
    group_kind,
    kind_label,
)
from webhooks.k8s.tolerations import describe
from webhooks.manifests.reader import Document
from webhooks.manifests.tree import copy_tree

#: Field paths upstream reports somewhere other than where manifests write them, per kind;
#: why: node taint errors are built under ``metadata.taints`` (spec §10), YAML has
#: ``spec.taints``. Used only to find the line; the reported path stays upstream's.
FIELD_ALIASES: Mapping[GroupKind, tuple[tuple[str, str], ...]] = {
    NODE: (("metadata.taints", "spec.taints"),),
}


def foreign_reason(obj: Mapping[str, Any], key: GroupKind) -> str:
    """Why a kind of another group that takes a built-in's name is not admitted.

    Why say so per document: its name alone reads as a built-in that was checked, and no
    built-in's defaults or rules are known to hold for it (its controller makes its Pods,
    and those Pods are what the webhooks admit).
    """
    _, kind = key
    builtin = next(g for g, k in KINDS if k == kind)
    name = name_of(obj) or "<unnamed>"
    return (
        f"{kind} {name} ({obj.get('apiVersion')}) is not the built-in "
        f"{builtin or 'core'} {kind}; not admitted"
    )


class SchemaCheck(Protocol):
    """Validates objects against the Kubernetes OpenAPI schema (see :mod:`.schema`)."""

    def errors(self, obj: Mapping[str, Any]) -> list[SchemaError] | None:
        """The object's schema findings, or ``None`` when it is not checked at all."""

    def learn(self, objects: Iterable[Any]) -> None:
        """Take the schemas of the CustomResourceDefinitions among ``objects`` (the inputs)."""


def context_cluster(documents: Iterable[Document], base: StaticCluster) -> StaticCluster:
    """Add the Namespaces and RuntimeClasses found among the inputs to ``base``.

    Why from the inputs too: a chart that ships its own RuntimeClass or Namespace must be
    checked against it, as the cluster would see it once applied.
    """
    for doc in documents:
        if isinstance(doc.obj, dict) and group_kind(doc.obj) in CONTEXT_KINDS:
            base.add(doc.obj)
    return base


_TOLERATIONS = re.compile(r"/tolerations(/(\d+|-))?$")


def describe_patch(patch: Sequence[Mapping[str, Any]]) -> str:
    """A one-line human summary of a JSON Patch: ``adds toleration a:NoSchedule (Exists)``.

    Used when a plugin left no audit summary of its own, so every mutation still reads as a
    sentence rather than a pointer dump.
    """
    parts: list[str] = []
    for op in patch:
        path = str(op.get("path", ""))
        value = op.get("value")
        raw = value if isinstance(value, list) else [value]
        tolerations = [t for t in raw if isinstance(t, dict) and ("key" in t or "operator" in t)]
        is_tolerations = _TOLERATIONS.search(path) is not None and len(tolerations) == len(raw)
        if op.get("op") in ("add", "replace") and tolerations and is_tolerations:
            noun = "toleration" if len(tolerations) == 1 else "tolerations"
            parts.append(f"adds {noun} " + ", ".join(describe(t) for t in tolerations))
            continue
        if op.get("op") == "remove":
            parts.append(f"removes {path}")
        else:
            parts.append(f"sets {path}")
    return "; ".join(parts)


def _patch_manifest(obj: Any, patch: Sequence[Mapping[str, Any]]) -> Any:
    """Apply ``patch`` to a copy of ``obj``, creating missing parent objects for ``add``.

    An operation that cannot apply to the manifest is skipped: the patch was computed on
    the admitted view, and ``mutate`` prints the manifest with what does apply. Why parents
    are created:
    a patch computed on the admitted view (namespace filled in, defaults applied) may add
    under a ``metadata`` or template the manifest never wrote. The copy is made without
    recursion, because kubectl accepts manifests nested far deeper than ``deepcopy`` goes.
    """
    doc = copy_tree(obj)
    for op in patch:
        path = str(op.get("path", ""))
        try:
            if op.get("op") == "add":
                _add_parents(doc, path.split("/")[1:])
            doc = jsonpatch.apply_patch(doc, [dict(op)], in_place=True)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
            continue
    return doc


def _add_parents(doc: Any, parts: Sequence[str]) -> None:
    """Create the missing objects above the last of ``parts`` (JSON Pointer tokens).

    Raises ``JsonPointerException`` naming the first token that cannot hold a child: a list
    index out of range, or a scalar on the way.
    """
    node = doc
    for i, raw in enumerate(parts[:-1]):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            if not isinstance(node.get(token), dict | list):
                node[token] = {}
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise jsonpatch.JsonPointerException("/".join(parts[: i + 1]))


class Engine:
    """The configured chain, applied to manifest documents.

    ``namespace`` fills in objects that name none (``--namespace``); ``schema`` is a
    :class:`SchemaCheck` when ``--schema`` was given.
    """

    def __init__(
        self,
        admission: Admission,
        namespace: str = "default",
        schema: SchemaCheck | None = None,
    ) -> None:
        self.admission = admission
        self.namespace = namespace
        self.schema = schema
        # Resources some enabled plugin handles on CREATE; a request for any other resource
        # would run the chain to no effect, so it is not sent (a speed-up, same answers).
        self._handled = {
            resource
            for phase in PHASES
            for plugin in admission.plugins(phase)
            for half in (plugin.half(phase),)
            if half is not None and "CREATE" in half.operations
            for resource in half.resources
        }

    def admit(
        self,
        doc: Document,
        report: Report | None = None,
        *,
        user: Mapping[str, Any] | None = None,
    ) -> Checked | None:
        """Admit one document; ``None`` (counted in ``report``) when it is not ours to admit.

        The object is admitted first, and its Pods are built from the object *as stored*,
        because controllers create Pods from the stored template, mutations included.
        ``user`` is the requester of the object itself when known (the live audit knows
        which controller created a Pod); manifests have none.
        """
        obj = doc.obj
        if obj is None:
            return None
        key = group_kind(obj) if isinstance(obj, dict) else None
        if not isinstance(obj, dict) or key is None:
            if report is not None:
                report.skipped["(not a Kubernetes object)"] += 1
            return None
        group, kind = key
        info = KINDS.get(key)
        if info is None:
            checked = self._schema_only(doc, obj, key)
            if report is not None and key in CONTEXT_KINDS:
                report.context[kind] += 1
            elif report is not None and checked is None:
                report.skipped[kind_label(key)] += 1
            if report is not None and foreign(key):
                report.foreign.append((doc, foreign_reason(obj, key)))
            return checked
        namespace = namespace_of(obj, self.namespace) if info.namespaced else ""
        checked = Checked(doc, kind, namespace, name_of(obj), group)
        self._validate_schema(checked, obj, "")
        target = object_target(obj, key, namespace, user)
        stored = self._admit(checked, target)
        pods = pod_target(stored, key, namespace)
        if pods is not None:
            self._admit(checked, pods)
        if self.schema is not None and any(checked.patches.values()):
            self._validate_schema(checked, self.written_object(checked), "after mutation: ")
        return checked

    def _schema_only(self, doc: Document, obj: dict[str, Any], key: GroupKind) -> Checked | None:
        if self.schema is None:
            return None
        group, kind = key
        checked = Checked(doc, kind, namespace_of(obj, ""), name_of(obj), group, admitted=False)
        if not self._validate_schema(checked, obj, ""):
            return None
        return checked

    def _validate_schema(self, checked: Checked, obj: Mapping[str, Any], prefix: str) -> bool:
        if self.schema is None:
            return False
        errors = self.schema.errors(obj)
        if errors is None:
            return False
        before = {f.message for f in checked.findings if f.type == SCHEMA}
        for path, message, action in errors:
            if prefix and message in before:
                continue  # already reported on the manifest as written
            line = self._line(checked, path)
            checked.findings.append(
                Finding(SCHEMA, SCHEMA, prefix + message, line, path, action=action)
            )
        return True

    def _line(self, checked: Checked, path: str) -> int:
        for upstream, written in FIELD_ALIASES.get(checked.key, ()):
            if path == upstream or path.startswith((upstream + ".", upstream + "[")):
                path = written + path[len(upstream) :]
        return checked.document.line_of(path)

    def _admit(self, checked: Checked, target: Target) -> dict[str, Any]:
        """Run the chain for one request; record findings; return the object as stored."""
        request = target.request
        if request.group_resource not in self._handled:
            checked.stored[target.role] = request.object or {}
            return checked.stored[target.role]
        admission = self.admission
        # One run answers both questions: a denial keeps the patch the mutators made.
        mutation = admission.decide(request, PHASES)
        checked.outcomes[target.role] = mutation
        if mutation.violations:
            self._violations(checked, target, [(v, "enforce") for v in mutation.violations])
        if mutation.advisories:
            self._violations(checked, target, mutation.advisories)
        self._policy_notes(checked, target, mutation)
        self._warnings(checked, target, mutation)
        patch, stored = mutation.patch, mutation.obj
        if patch and stored is not None:
            checked.patches[target.role] = patch
            plugins = tuple(dict.fromkeys(mutation.changed_by))
            audit = mutation.audit_annotations
            fallback = "" if all(audit.get(p) for p in plugins) else describe_patch(patch)
            summaries = tuple(audit.get(p) or fallback for p in plugins)
            checked.findings.append(
                Finding(
                    "mutation",
                    plugins[0] if plugins else "",
                    "; ".join(summaries),
                    checked.document.line,
                    target=target.role,
                    plugins=plugins,
                    summaries=summaries,
                    patch=list(patch),
                )
            )
            again = admission.again(request, mutation)
            if again.patch:
                checked.findings.append(
                    Finding(
                        CONVERGENCE,
                        CONVERGENCE,
                        "a second mutating pass still changes the object ("
                        + ", ".join(dict.fromkeys(again.changed_by))
                        + "): "
                        + describe_patch(again.patch),
                        checked.document.line,
                        target=target.role,
                        plugins=tuple(dict.fromkeys(again.changed_by)),
                        patch=list(again.patch),
                    )
                )
        checked.stored[target.role] = stored if stored is not None else request.object or {}
        return checked.stored[target.role]

    def _skipped(self, exception: str, plugin: str) -> str:
        """What an exception skipped: the plugin, or the one of its halves in the chain that
        the exception covers.

        Why name the half: ``exemptNamespaces`` skips a plugin's validation only, and "the
        plugin skipped" beside the change its mutating half made would be false.
        """
        phases = next(
            (e.phases for e in self.admission.config.exceptions if e.name == exception), PHASES
        )
        halves = [p for p in PHASES if plugin in {x.name for x in self.admission.plugins(p)}]
        if len(halves) > 1 and phases == ("validate",):
            return f"{plugin} validation"
        if len(halves) > 1 and phases == ("mutate",):
            return f"{plugin} mutation"
        return plugin

    def _policy_notes(self, checked: Checked, target: Target, outcome: Outcome) -> None:
        """Exceptions that skipped or no longer skip a plugin, and monitored changes."""
        line = checked.document.line
        seen: set[tuple[str, str, tuple[str, ...]]] = {
            (f.type, f.rule, f.plugins) for f in checked.findings
        }
        notes: list[tuple[FindingType, str, tuple[str, ...], str]] = [
            (
                "excepted",
                exception,
                (plugin,),
                f"{self._skipped(exception, plugin)} skipped: exception {exception} covers "
                "this object",
            )
            for exception, plugin in outcome.excepted
        ]
        notes += [
            (
                "expired",
                exception,
                (plugin,),
                f"exception {exception} has expired and no longer exempts this object "
                f"from {plugin}",
            )
            for exception, plugin in outcome.expired
        ]
        notes += [
            ("monitored", plugin, (plugin,), f"monitor mode, not applied: {summary}")
            for plugin, summary in outcome.monitored
        ]
        for kind, rule, plugins, message in notes:
            if (kind, rule, plugins) not in seen:
                seen.add((kind, rule, plugins))
                checked.findings.append(
                    Finding(kind, rule, message, line, target=target.role, plugins=plugins)
                )

    def _warnings(self, checked: Checked, target: Target, outcome: Outcome) -> None:
        """The plugins' warnings (``plugin: text``), once per object; those that only repeat
        a violation admitted under ``warn`` are left out: that violation is reported."""
        advised = {f"{v.plugin}: {v.message}" for v, action in outcome.advisories}
        seen = {(f.rule, f.message) for f in checked.findings if f.type == "warning"}
        for text in outcome.warnings:
            if text in advised:
                continue
            rule, _, message = text.partition(": ")
            if (rule, message) in seen:
                continue
            seen.add((rule, message))
            line = self._template_line(checked) if target.role == "pod" else checked.document.line
            checked.findings.append(Finding("warning", rule, message, line, target=target.role))

    def _violations(
        self, checked: Checked, target: Target, violations: Sequence[tuple[Violation, str]]
    ) -> None:
        pod_role = target.role == "pod"
        seen = {(f.rule, f.field, f.message) for f in checked.findings if f.type == "violation"}
        seen_fields = {(rule, path) for rule, path, _ in seen if path}
        for violation, action in violations:
            path = violation.field
            if pod_role and path:
                path = template_field(checked.key, path)
            key = (violation.plugin, path, violation.message)
            if (violation.plugin, path) in seen_fields or key in seen:
                continue  # the template already reported it at the same place
            if not path:
                line = self._template_line(checked) if pod_role else checked.document.line
            else:
                line = self._line(checked, path)
            checked.findings.append(
                Finding(
                    "violation",
                    violation.plugin,
                    violation.message,
                    line,
                    path,
                    target.role,
                    action=action,
                )
            )

    def _template_line(self, checked: Checked) -> int:
        path = POD_SPEC_PATHS.get(checked.key)
        if path is None or checked.key == POD:
            return checked.document.line
        return checked.document.line_of(dotted(path[:-1]))

    @staticmethod
    def written_object(checked: Checked) -> Any:
        """The manifest as ``mutate`` prints it: as stored, plus what its Pods will receive.

        The object's own patch is applied to the manifest; the Pod patch is mapped onto the
        pod template (:func:`~webhooks.dryrun.expand.template_pointer`), so checking the
        result again finds nothing to change. Operations with no place in a template (a
        Pod's name, its owner) are left out, because the controller writes those.
        """
        obj = checked.document.obj
        own = checked.patches.get("object")
        if own:
            obj = _patch_manifest(obj, own)
        pod_patch = checked.patches.get("pod")
        if pod_patch:
            mapped = []
            for op in pod_patch:
                pointer = template_pointer(checked.key, str(op.get("path", "")))
                if pointer is not None:
                    mapped.append({**op, "path": pointer})
            obj = _patch_manifest(obj, mapped)
        return obj
