"""Policy test suites: finding ``*.test.yaml`` files and reading them into what to run.

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

Paths are relative to the suite's file. Why apart from the judging: everything a suite
names is loaded, and every mistake in it reported at its line, before anything runs, so a
typo in the last expectation does not surface only after a long run; what the results mean
is :mod:`.judging`'s.

**Unusable input** (exit 2 in the CLI) is a :class:`ManifestError` ``file:line: reason``: a
path that does not exist, a file that does not parse, a suite without ``name``,
``resources`` or ``expect``, an unknown key, plugin or result, a config that does not load,
objects or resources that cannot be read. Other suites still run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from webhooks.cluster.files import StaticCluster, read_objects
from webhooks.configfile import read_config
from webhooks.core.config import Config, ConfigError, load_config
from webhooks.dryrun.expand import KIND_NAMES
from webhooks.manifests.errors import ManifestError, show
from webhooks.manifests.reader import EMPTY_PATH, Document, Manifests, load, read, split, walk
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


class SuiteError(Exception):
    """A suite that cannot be run; ``problems`` are its ``file:line: reason`` lines."""

    def __init__(self, problems: Sequence[ManifestError]) -> None:
        super().__init__(*problems)
        self.problems = list(problems)


# --- finding and loading suites ---------------------------------------------------------------


def discover(paths: Sequence[str]) -> tuple[list[str], list[ManifestError]]:
    """The suite files under ``paths``: files as named, ``*.test.yaml`` under directories.

    Directories are walked as the manifest reader walks them (kubectl's order, hidden
    entries included). Why a PATH that holds no suite is unusable: a CI job pointed at the
    wrong directory must fail rather than pass having tested nothing.
    """
    files: list[str] = []
    problems: list[ManifestError] = []
    for path in paths:
        target = Path(path)
        if not path:
            problems.append(ManifestError('""', 0, EMPTY_PATH))
        elif target.is_dir():
            found = [str(p) for p in walk(target, (SUFFIX,))]
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
    info = KIND_NAMES.get(kind)
    default = "default" if info is None or info.namespaced else ""
    return Resource(kind, fields.get("namespace", default), fields["name"])
