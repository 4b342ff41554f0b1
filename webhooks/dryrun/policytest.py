"""Declarative policy tests: suites of expectations about what admission does to manifests.

A suite is a YAML document in a file named ``*.test.yaml``::

    name: gpu team pinning               # required
    config: ../placement.yaml            # a path relative to this file, or the config inline;
                                         # absent: the defaults
    objects: [namespaces.yaml]           # cluster objects (Namespaces, RuntimeClasses)
    resources: [workloads/]              # required: the manifests to admit
    expect:                              # required: at least one expectation
      - resource: {kind: Pod, namespace: ml, name: train-pod}
        plugin: dedicated-nodes          # optional; without it, the whole chain
        result: pass                     # required: pass | fail | warn | skip
        object:                          # optional: a subset the admitted object must contain
          spec: {tolerations: [{key: dedicated, value: gpu}]}

Paths are relative to the suite's file. Why a library: ``placement-webhooks test`` only finds
paths, prints and exits; loading, admitting and judging are here, on the same
:func:`~webhooks.dryrun.run.dry_run` as ``check``, so a suite cannot pass on an answer the
server would not give.

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
  (to either half), or the config leaves the plugin disabled, or the plugin does not handle
  this kind at all (``dedicated-nodes`` judges Pods, never a Deployment itself). Without
  ``plugin``: no enabled plugin handles the kind, or exceptions skipped every one that does.
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

**Unusable input** (exit 2 in the CLI) is a :class:`ManifestError` ``file:line: reason``: a
path that does not exist, a file that does not parse, a suite without ``name``,
``resources`` or ``expect``, an unknown key, plugin or result, a config that does not load,
objects or resources that cannot be read. Other suites still run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from webhooks.cluster.files import StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.config import Config, ConfigError, load_config
from webhooks.core.plugin import PODS, GroupResource, Plugin
from webhooks.dryrun.engine import Checked, Report
from webhooks.dryrun.expand import CONTEXT_KINDS, KINDS, Role
from webhooks.dryrun.run import dry_run
from webhooks.manifests.errors import ManifestError, show
from webhooks.manifests.reader import Document, Manifests, load, read, split
from webhooks.plugins import REGISTRY

Result = Literal["pass", "fail", "warn", "skip"]
RESULTS: Final[tuple[Result, ...]] = ("pass", "fail", "warn", "skip")

#: How suite files are named; other files under a PATH directory are resources, not suites.
SUFFIX: Final = ".test.yaml"
#: The suffix that names the Pod a workload's controller would create.
POD_SUFFIX: Final = "-pod"

SUITE_KEYS: Final = ("name", "config", "objects", "resources", "expect")
EXPECTATION_KEYS: Final = ("resource", "plugin", "result", "object")
RESOURCE_KEYS: Final = ("kind", "namespace", "name")


@dataclass(frozen=True, slots=True)
class Resource:
    """The object an expectation is about: kind, namespace (``""`` if cluster-scoped), name."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return (
            f"{self.kind} {self.namespace}/{self.name}"
            if self.namespace
            else f"{self.kind} {self.name}"
        )


@dataclass(frozen=True, slots=True)
class Expectation:
    """One entry of ``expect``: which object, judged by which plugin, and what must hold.

    ``plugin`` ``None`` means the whole chain; ``object`` ``None`` means no subset is given.
    ``line`` is where the entry starts in the suite's file, so a failure points at it.
    """

    resource: Resource
    result: Result
    line: int
    plugin: str | None = None
    object: Mapping[str, Any] | None = None

    @property
    def label(self) -> str:
        """``Pod ml/train-pod [dedicated-nodes]: fail + object``: what it asserts, in one line.

        Why one spelling: the text report and JUnit test case names must read the same.
        """
        by = f" [{self.plugin}]" if self.plugin else ""
        extra = " + object" if self.object is not None else ""
        return f"{self.resource}{by}: {self.result}{extra}"


@dataclass(slots=True)
class Suite:
    """A loaded suite: what to admit, under which config and cluster, and what to expect."""

    name: str
    path: str
    line: int
    config: Config
    cluster: StaticCluster
    resources: Manifests
    expectations: list[Expectation]


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


@dataclass(slots=True)
class Results:
    """Every verdict in suite and expectation order, and every unusable input."""

    verdicts: list[Verdict] = field(default_factory=list)
    problems: list[ManifestError] = field(default_factory=list)
    suites: int = 0

    @property
    def failed(self) -> list[Verdict]:
        """The expectations that do not hold."""
        return [v for v in self.verdicts if not v.passed]

    def exit_code(self) -> int:
        """0 every expectation holds; 1 one does not; 2 some input was unusable.

        Why 2 wins: a suite that could not be read proves nothing, whatever the others say.
        """
        if self.problems:
            return 2
        return 1 if self.failed else 0


class SuiteError(Exception):
    """A suite that cannot be run; ``problems`` are its ``file:line: reason`` lines."""

    def __init__(self, problems: Sequence[ManifestError]) -> None:
        super().__init__(*problems)
        self.problems = list(problems)


# --- finding and loading suites ---------------------------------------------------------------


def _walk(directory: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and name.endswith(SUFFIX):
                yield Path(root) / name


def discover(paths: Sequence[str]) -> tuple[list[str], list[ManifestError]]:
    """The suite files under ``paths``: files as named, ``*.test.yaml`` under directories.

    Directories are walked recursively in sorted order, hidden entries skipped, as the
    manifest reader walks them. Why a PATH that holds no suite is unusable: a CI job pointed
    at the wrong directory must fail rather than pass having tested nothing.
    """
    files: list[str] = []
    problems: list[ManifestError] = []
    for path in paths:
        target = Path(path)
        if target.is_dir():
            found = [str(p) for p in _walk(target)]
            if not found:
                problems.append(ManifestError(path, 0, f"no test suites found: no *{SUFFIX} file"))
            files.extend(found)
        elif target.exists():
            files.append(path)
        else:
            problems.append(ManifestError(path, 0, "no such file or directory"))
    return list(dict.fromkeys(files)), problems


def load_file(path: str) -> tuple[list[Suite], list[ManifestError]]:
    """Every suite in one file (one per YAML document), and what made any unusable.

    Through the one manifest reader, so a suite is read as a manifest is and every field
    has a line to point at. A file that does not parse yields no suite at all.
    """
    sources, problems = read([path])
    suites: list[Suite] = []
    for source in sources:
        docs, problem = split(source)
        if problem is not None:
            problems.append(problem)
            continue
        docs = [doc for doc in docs if doc.obj is not None]
        if not docs:
            problems.append(ManifestError(path, 0, "no test suite: the file is empty"))
        for doc in docs:
            try:
                suites.append(suite_of(doc))
            except ManifestError as exc:
                problems.append(exc)
            except SuiteError as exc:
                problems.extend(exc.problems)
    return suites, problems


def _error(doc: Document, at: str, reason: str) -> ManifestError:
    return ManifestError(doc.path, doc.line_of(at) if at else doc.line, reason)


def _unknown_keys(doc: Document, item: Mapping[str, Any], at: str, known: Sequence[str]) -> None:
    for key in item:
        if key not in known:
            where = f"{at}.{key}" if at else str(key)
            raise _error(doc, where, f"{where}: unknown key (known keys: {', '.join(known)})")


def suite_of(doc: Document) -> Suite:
    """Load one suite document: its config, cluster objects, resources and expectations.

    Raises :class:`ManifestError` (or :class:`SuiteError` for resources that cannot be
    read) at the line of the offending key. Why everything is loaded before anything runs:
    a typo in the last expectation must not surface only after a long run.
    """
    obj = doc.obj
    if not isinstance(obj, dict):
        raise _error(doc, "", "a test suite must be a mapping with name, resources and expect")
    _unknown_keys(doc, obj, "", SUITE_KEYS)
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _error(doc, "name", "name: required: a non-empty string that names the suite")
    base = Path(doc.path).parent
    config = _config(doc, obj.get("config"), base)
    try:
        cluster = read_objects(_paths(doc, obj, "objects", base, required=False))
    except ManifestError as exc:
        raise SuiteError([exc]) from None
    resources = load(_paths(doc, obj, "resources", base, required=True))
    if resources.problems:
        raise SuiteError(resources.problems)
    expect = obj.get("expect")
    if not isinstance(expect, list) or not expect:
        raise _error(doc, "expect", "expect: required: a list of expectations")
    expectations = [_expectation(doc, item, f"expect[{i}]") for i, item in enumerate(expect)]
    return Suite(name, doc.path, doc.line, config, cluster, resources, expectations)


def _config(doc: Document, value: Any, base: Path) -> Config:
    if isinstance(value, str) and value:
        try:
            return read_config(os.path.normpath(base / value))
        except ConfigError as exc:
            raise _error(doc, "config", f"config: {exc}") from None
    if value is None or isinstance(value, dict):
        try:
            return load_config(value, REGISTRY)
        except ConfigError as exc:
            key = str(exc).split(": ", 1)[0]
            raise _error(doc, f"config.{key}", f"config.{exc}") from None
    raise _error(doc, "config", "config: must be a path relative to this file, or a mapping")


def _paths(
    doc: Document, obj: Mapping[str, Any], key: str, base: Path, *, required: bool
) -> list[str]:
    value = obj.get(key)
    if value is None:
        if required:
            raise _error(doc, "", f"{key}: required: a list of paths relative to this file")
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) and i for i in items):
        raise _error(doc, key, f"{key}: must be a list of paths relative to this file")
    out: list[str] = []
    for i, item in enumerate(items):
        full = os.path.normpath(base / item)
        if not Path(full).exists():
            at = f"{key}[{i}]" if isinstance(value, list) else key
            raise _error(doc, at, f"{key}: {item}: no such file or directory ({full})")
        out.append(full)
    return out


def _expectation(doc: Document, item: Any, at: str) -> Expectation:
    if not isinstance(item, dict):
        raise _error(doc, at, f"{at}: must be a mapping with resource and result")
    _unknown_keys(doc, item, at, EXPECTATION_KEYS)
    resource = _resource(doc, item.get("resource"), f"{at}.resource")
    plugin = item.get("plugin")
    if plugin is not None and (not isinstance(plugin, str) or plugin not in REGISTRY):
        raise _error(
            doc,
            f"{at}.plugin",
            f"{at}.plugin: unknown plugin {plugin!r} (known plugins: {', '.join(REGISTRY.names)})",
        )
    result = item.get("result")
    if result not in RESULTS:
        shown = "nothing" if result is None else repr(result)
        raise _error(
            doc, f"{at}.result", f"{at}.result: must be one of {', '.join(RESULTS)}, got {shown}"
        )
    subset = item.get("object")
    if "object" in item and not isinstance(subset, dict):
        raise _error(doc, f"{at}.object", f"{at}.object: must be a mapping (a part of the object)")
    return Expectation(resource, result, doc.line_of(at), plugin, subset)


def _resource(doc: Document, value: Any, at: str) -> Resource:
    if not isinstance(value, dict):
        raise _error(doc, at, f"{at}: required: a mapping with kind, name and namespace")
    _unknown_keys(doc, value, at, RESOURCE_KEYS)
    fields: dict[str, str] = {}
    for key in RESOURCE_KEYS:
        raw = value.get(key)
        if raw is None and key == "namespace":
            continue
        if raw is not None and not isinstance(raw, str):
            # YAML reads y, no, on and numbers as other types, as kubectl does.
            reason = f"{at}.{key}: must be a string, got {show(raw)} (quote the value)"
            raise _error(doc, f"{at}.{key}", reason)
        if not raw:
            raise _error(doc, f"{at}.{key}", f"{at}.{key}: required: a non-empty string")
        fields[key] = raw
    kind = fields["kind"]
    info = KINDS.get(kind)
    default = "default" if info is None or info.namespaced else ""
    return Resource(kind, fields.get("namespace", default), fields["name"])


# --- judging ----------------------------------------------------------------------------------

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
        key = (checked.kind, checked.namespace, checked.name)
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
    if resource.kind in CONTEXT_KINDS:
        return (
            f"no {resource}: {resource.kind} objects are cluster context (objects), "
            "not admitted; name the objects admitted in them"
        )
    if resource.kind not in KINDS:
        return f"no {resource}: kind {resource.kind} is not admitted (admitted: {', '.join(KINDS)})"
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
    info = KINDS[checked.kind]
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


def run_suite(suite: Suite) -> tuple[list[Verdict], list[ManifestError]]:
    """Admit the suite's resources once and judge every expectation against the result.

    Why a suite whose resources could not all be admitted yields no verdicts: an answer
    about half the input is no answer.
    """
    report = dry_run(
        suite.resources.documents, suite.config, suite.cluster, files=suite.resources.files
    )
    if report.problems:
        return [], list(report.problems)
    index = index_of(report)
    verdicts: list[Verdict] = []
    for expectation in suite.expectations:
        try:
            verdicts.append(verdict(suite, expectation, index))
        except RecursionError:
            reason = "object: nested too deeply to compare"
            return [], [ManifestError(suite.path, expectation.line, reason)]
    return verdicts, []


def run(paths: Sequence[str]) -> Results:
    """Find, load and run every suite under ``paths``; unusable ones are reported, not run.

    Why the others still run: one broken suite should not hide what the rest would say.
    """
    files, problems = discover(paths)
    results = Results(problems=problems)
    for path in files:
        suites, found = load_file(path)
        results.problems.extend(found)
        for suite in suites:
            verdicts, unusable = run_suite(suite)
            results.suites += 1
            results.verdicts.extend(verdicts)
            results.problems.extend(unusable)
    return results
