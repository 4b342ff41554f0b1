"""Judging a policy test's expectations against what admission did to the suite's resources.

Why apart from reading suites: this is what a result *means*, the part a user argues with
when a suite fails, and it must follow the chain's own outcome for each request exactly.

**Which object.** ``resource`` is ``kind``, ``name`` and ``namespace`` (``default`` when
omitted, none for a Node). A workload, a Pod or a Node means that manifest as admission
stores it. A Pod named ``<workload>-pod`` means the Pod the workload's controller would
create, as ``check`` admits it ("pods of Job ml/train"): the workload of that name in the
same namespace. A Pod manifest literally named so wins. A resource that names no admitted
object, or more than one, is a failed expectation that says which.

**Results**, judged on that one request (the workload's own, or its Pod's), for ``plugin``,
or without one for every plugin of the chain:

* ``fail``: a violation whose action is ``enforce`` (or one that no action admits: a cluster
  lookup that failed, an object of the wrong kind). Admission refuses the object.
* ``warn``: a violation under ``warn`` or ``audit``, and no enforced one. Admitted, and told.
* ``skip``: nothing judged it. Either an exception applied to the plugin for this object
  (to either half the config runs), or the config leaves the plugin disabled, or the plugin
  does not handle this kind at all (``dedicated-nodes`` judges Pods, never a Deployment
  itself). Without ``plugin``: no enabled plugin handles the kind, or exceptions skipped
  every one that does.
* ``pass``: judged, and none of the above.

The first that holds wins, in that order, so an exception for one half of a plugin never
hides a denial by its other half. A disabled plugin is ``skip``, not ``pass``: a suite must
stop passing when someone switches the plugin it tests off. An expired exception, a
monitored mutation and a convergence finding change no result (an expired exception no
longer applies, so the violation it would have hidden decides). Exceptions expire by the
clock of the run: a suite expecting ``skip`` from one fails once it has expired.

**``object``** must be contained in the object as stored: maps key by key, recursively;
each element of an expected list must equal, or be a subset of, some element of the actual
list, whatever the order and whatever else the list holds; scalars must be equal and of the
same type (``"300"`` is not ``300``; quantities compare as written). A key the stored object
lacks never matches, whatever the expected value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from webhooks.core.config import Config
from webhooks.core.plugin import PODS, GroupResource, Plugin
from webhooks.dryrun.expand import CONTEXT_KINDS, KIND_NAMES, KINDS, Role
from webhooks.dryrun.report import Checked, Report
from webhooks.dryrun.suites import POD_SUFFIX, Expectation, Resource, Result, Suite
from webhooks.k8s.podspec import kind_label
from webhooks.plugins import REGISTRY


@dataclass(frozen=True, slots=True)
class Difference:
    """Where the stored object does not contain the expected subset, and how.

    ``where`` is the field path inside the object (``""`` for the object itself);
    ``problem`` is ``missing`` (``found`` is ``None`` and ``siblings`` lists the keys that
    are there), ``no element`` (``expected`` is the list element nothing matched, ``found``
    the whole actual list) or ``different`` (another value, or another type).
    """

    where: str
    problem: Literal["missing", "no element", "different"]
    expected: Any
    found: Any = None
    siblings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """One expectation judged: the result found, why, and any difference in the object.

    ``found`` is ``None`` when ``resource`` named no single admitted object (``reasons``
    says why); ``subject`` names the request judged ("pods of Job ml/train").
    """

    suite: Suite
    expectation: Expectation
    found: Result | None
    reasons: tuple[str, ...]
    subject: str = ""
    differences: tuple[Difference, ...] = ()

    @property
    def passed(self) -> bool:
        """The result is the expected one and the object contains the expected subset."""
        return self.found == self.expectation.result and not self.differences


#: Admitted objects by (kind, namespace, name): each with the request that stands for it.
Index = dict[tuple[str, str, str], list[tuple[Checked, Role]]]


def index_of(report: Report) -> Index:
    """Every admitted object by the name an expectation uses, workloads' Pods included.

    Why a literal Pod wins over ``<workload>-pod``: a name the user wrote in a manifest is
    the more specific of the two.
    """
    index: Index = {}
    pods: Index = {}
    for checked in report.checked:
        key = (kind_label(checked.key), checked.namespace, checked.name)
        index.setdefault(key, []).append((checked, "object"))
        if "pod" in checked.stored:
            pod_key = ("Pod", checked.namespace, checked.name + POD_SUFFIX)
            pods.setdefault(pod_key, []).append((checked, "pod"))
    for key, found in pods.items():
        index.setdefault(key, found)
    return index


def _subject(checked: Checked, role: Role) -> str:
    return f"pods of {checked.subject}" if role == "pod" else checked.subject


def _not_found(resource: Resource, index: Index) -> str:
    """Why ``resource`` names nothing, with the names that are there to compare against."""
    if resource.kind in {kind for _, kind in CONTEXT_KINDS}:
        return (
            f"no {resource}: {resource.kind} objects are cluster context (objects), "
            "not admitted; name the objects admitted in them"
        )
    if resource.kind not in KIND_NAMES:
        admitted = ", ".join(KIND_NAMES)
        return f"no {resource}: kind {resource.kind} is not admitted (admitted: {admitted})"
    same = sorted(
        f"{ns}/{name}" if ns else name for kind, ns, name in index if kind == resource.kind
    )
    shown = ", ".join(same[:10]) + (f" and {len(same) - 10} more" if len(same) > 10 else "")
    there = f"{resource.kind} objects there: {shown}" if same else f"no {resource.kind} there"
    hint = ""
    if resource.kind == "Pod":
        hint = f"; a workload's Pods are named <workload>{POD_SUFFIX}"
    return f"no {resource} among the resources ({there}){hint}"


def _resource_of(checked: Checked, role: Role) -> GroupResource:
    if role == "pod":
        return PODS
    info = KINDS[checked.key]
    return (info.group, info.resource)


def _shown(resource: GroupResource) -> str:
    group, name = resource
    return f"{name}.{group}" if group else name


def _handles(plugin: Plugin, resource: GroupResource) -> bool:
    halves = (plugin.mutate, plugin.validate)
    return any(
        h is not None and resource in h.resources and "CREATE" in h.operations for h in halves
    )


def _handled_by(plugin: Plugin) -> str:
    found = {r for h in (plugin.mutate, plugin.validate) if h is not None for r in h.resources}
    return ", ".join(sorted(_shown(r) for r in found))


def judge(
    checked: Checked, role: Role, plugin: str | None, config: Config
) -> tuple[Result, tuple[str, ...]]:
    """The result of one request for ``plugin`` (``None``: every plugin), and why.

    Why from the request's own chain outcome and not the findings: a workload and its Pods
    are separate admissions, and findings are deduplicated across them for display. The
    module docstring says what each result means and why they are tried in this order.
    """
    outcome = checked.outcomes.get(role)
    resource = _resource_of(checked, role)
    mine = (lambda name: True) if plugin is None else (lambda name: name == plugin)
    if outcome is not None:
        enforced = [v for v in outcome.violations if mine(v.plugin)]
        if enforced:
            return "fail", tuple(f"{v.plugin}: {v.message}" for v in enforced)
        advised = [(v, action) for v, action in outcome.advisories if mine(v.plugin)]
        if advised:
            return "warn", tuple(f"{v.plugin} ({action}): {v.message}" for v, action in advised)
    excepted = [(e, p) for e, p in (outcome.excepted if outcome else ()) if mine(p)]
    if plugin is not None:
        if not config.plugins[plugin].enabled:
            return "skip", (f"{plugin} is not enabled in the config",)
        found = REGISTRY.get(plugin)
        if not _handles(found, resource):
            what = f"{plugin} does not admit {_shown(resource)} (it admits {_handled_by(found)})"
            return "skip", (what,)
        if excepted:
            return "skip", tuple(f"exception {e} skips {p} for this object" for e, p in excepted)
        return "pass", (f"{plugin} found nothing to refuse",)
    handling = [
        p.name for p in REGISTRY if config.plugins[p.name].enabled and _handles(p, resource)
    ]
    if not handling:
        return "skip", (f"no enabled plugin admits {_shown(resource)}",)
    skipped = {p for _, p in excepted}
    if skipped.issuperset(handling):
        return "skip", tuple(f"exception {e} skips {p} for this object" for e, p in excepted)
    changed = outcome.changed_by if outcome is not None else ()
    note = f"; changed by {', '.join(changed)}" if changed else ""
    return "pass", (f"admitted with no violation{note}",)


def _same(expected: Any, actual: Any) -> bool:
    # YAML's true is not 1: a boolean equals only a boolean.
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(expected == actual)


def _join(where: str, key: Any) -> str:
    text = str(key)
    if text and all(c.isalnum() or c in "_-" for c in text):
        return f"{where}.{text}" if where else text
    return f"{where}[{text}]"


def differences(expected: Any, actual: Any, where: str = "") -> list[Difference]:
    """Where ``actual`` does not contain ``expected`` (empty: it does); see the module docs.

    Why lists match by containment, in any order: admission appends to lists (tolerations,
    affinity expressions), and a test must not break when another plugin adds one more.
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [Difference(where, "different", expected, actual)]
        out: list[Difference] = []
        for key, value in expected.items():
            path = _join(where, key)
            if key not in actual:
                out.append(Difference(path, "missing", value, siblings=tuple(map(str, actual))))
            else:
                out.extend(differences(value, actual[key], path))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [Difference(where, "different", expected, actual)]
        return [
            Difference(where, "no element", item, actual)
            for item in expected
            if not any(not differences(item, element, where) for element in actual)
        ]
    return [] if _same(expected, actual) else [Difference(where, "different", expected, actual)]


def verdict(suite: Suite, expectation: Expectation, index: Index) -> Verdict:
    """Judge one expectation against the admitted objects of its suite.

    Why a resource that names nothing is a verdict and not unusable input: a renamed
    workload is exactly the kind of change a suite exists to catch.
    """
    resource = expectation.resource
    found = index.get((resource.kind, resource.namespace, resource.name), [])
    if not found:
        return Verdict(suite, expectation, None, (_not_found(resource, index),))
    if len(found) > 1:
        where = ", ".join(f"{c.document.path}:{c.document.line}" for c, _ in found)
        reason = (
            f"{resource} names {len(found)} admitted objects ({where}); give each a unique name"
        )
        return Verdict(suite, expectation, None, (reason,))
    checked, role = found[0]
    result, reasons = judge(checked, role, expectation.plugin, suite.config)
    diffs: tuple[Difference, ...] = ()
    if expectation.object is not None:
        diffs = tuple(differences(expectation.object, checked.stored.get(role, {})))
    return Verdict(suite, expectation, result, reasons, _subject(checked, role), diffs)
