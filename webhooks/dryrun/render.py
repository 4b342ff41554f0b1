"""Rendering a :class:`~webhooks.dryrun.report.Report`: text, JSON, JUnit, SARIF, GitHub.

Every format says the same things in the shape its consumer reads: people (``text``, the
compiler convention ``path:line: plugin: message``), scripts (``json``), test dashboards
(``junit``), code scanning (``sarif`` 2.1.0) and workflow annotations (``github``).
Failing findings are enforced violations, schema errors and convergence failures, plus
mutations under ``--fail-on-mutation``. Violations of plugins whose action is warn or audit,
and exceptions that have expired, are warnings: every format shows them as such (SARIF
level ``warning``, ``::warning``, a JUnit ``<skipped>`` with the message) and they never fail
a run. SARIF and GitHub annotations carry failing findings and warnings only, because a
mutation admission would make is information, not a problem at a line. A document of a
kind of another group that takes a built-in's name (``Report.foreign``) is said to be
skipped in every format (a ``skipped:`` line, a JSON ``skipped`` entry, a JUnit
``<skipped>`` case, a SARIF note notification, a GitHub notice), because its name alone
reads as a built-in that was checked.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

import orjson

from webhooks.dryrun.report import CONVERGENCE, INFORMATION, SCHEMA, Checked, Finding, Report
from webhooks.manifests.errors import ManifestError as Problem
from webhooks.manifests.reader import Document

#: SGR codes of the text format's colours (the ones terminals and CI log viewers all show).
BOLD, DIM, RED, YELLOW, CYAN = "1", "2", "31", "33", "36"

#: The word every format uses for a document of a foreign kind that was not admitted.
SKIPPED = "skipped"

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT = "placementWebhooks/v1"
BUILTIN_RULES: tuple[tuple[str, str], ...] = (
    (SCHEMA, "The object must match the Kubernetes OpenAPI schema (strict: no unknown fields)."),
    (CONVERGENCE, "A second mutating pass over the admitted object must change nothing."),
)


@dataclass(frozen=True, slots=True)
class Options:
    """How to render: failing mutations, colour, the rules (plugins) and the tool version."""

    fail_on_mutation: bool = False
    color: bool = False
    rules: tuple[tuple[str, str], ...] = ()
    tool_version: str = ""


@dataclass(frozen=True, slots=True)
class Line:
    """One reportable item: a finding, or one plugin's part of a mutation, and its level."""

    checked: Checked
    finding: Finding
    rule: str
    message: str
    level: str

    @property
    def failing(self) -> bool:
        """Whether this item fails the run."""
        return self.level == "error"


def lines(report: Report, options: Options) -> Iterator[Line]:
    """Findings flattened to one item per rule, in input order, messages with their subject.

    Why one flattening for every format: a mutation by two plugins must be two lines in
    text and two results in SARIF, and the wording must not drift between formats.
    """
    mutation_level = "error" if options.fail_on_mutation else "note"
    for checked in report.checked:
        for finding in checked.findings:
            pods = f"pods of {checked.subject}"
            if finding.type == "mutation":
                subject = pods if finding.target == "pod" else checked.subject
                for plugin, summary in zip(finding.plugins, finding.summaries, strict=True):
                    message = f"{subject}: {summary}"
                    yield Line(checked, finding, plugin, message, mutation_level)
            elif finding.type in INFORMATION:
                subject = pods if finding.target == "pod" else checked.subject
                yield Line(checked, finding, finding.rule, f"{subject}: {finding.message}", "note")
            else:
                suffix = f" ({pods})" if finding.target == "pod" else ""
                message = finding.message + suffix
                yield Line(checked, finding, finding.rule, message, finding.level)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary(report: Report) -> str:
    """The closing line: counts of objects, findings, skipped kinds and unusable inputs.

    Skipped kinds are listed so a user can tell "nothing wrong" from "nothing checked".
    """
    parts = [_plural(report.count("violation", "error"), "violation")]
    if report.warnings():
        parts.append(_plural(report.warnings(), "warning"))
    parts.append(_plural(report.count("mutation"), "mutation"))
    if report.count("excepted"):
        parts.append(f"{report.count('excepted')} skipped by exceptions")
    if report.count("monitored"):
        parts.append(f"{report.count('monitored')} monitored")
    if report.count(CONVERGENCE):
        parts.append(_plural(report.count(CONVERGENCE), "convergence failure"))
    if report.count(SCHEMA, "error"):
        parts.append(_plural(report.count(SCHEMA, "error"), "schema error"))
    text = (
        f"{_plural(len(report.checked), 'object')} checked in {_plural(report.files, 'file')}: "
        + ", ".join(parts)
    )
    for label, counter in (("context", report.context), ("skipped", report.skipped)):
        if counter:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(counter.items()))
            text += f"; {label}: {kinds}"
    if report.problems:
        text += f"; {_plural(len(report.problems), 'unusable input')}"
    return text


def text(report: Report, options: Options) -> str:
    """``path:line: rule: message`` per finding, then a summary line; colour when asked.

    The compiler convention lets editors and CI log viewers jump to the line.
    """

    def style(value: str, code: str) -> str:
        return f"\x1b[{code}m{value}\x1b[0m" if options.color else value

    out = []
    for item in lines(report, options):
        where = style(f"{item.checked.document.path}:{item.finding.line}:", BOLD)
        colour = RED if item.failing else YELLOW if item.level == "warning" else CYAN
        tag = "warning: " if item.level == "warning" else ""
        out.append(f"{where} {style(item.rule + ':', colour)} {tag}{item.message}")
    for doc, reason in report.foreign:
        where = style(f"{doc.path}:{doc.line}:", BOLD)
        out.append(f"{where} {style(SKIPPED + ':', CYAN)} {reason}")
    out.append(style(summary(report), DIM))
    return "\n".join(out) + "\n"


def _object(checked: Checked) -> dict[str, Any]:
    doc = checked.document
    entry: dict[str, Any] = {"path": doc.path, "document": doc.index}
    if doc.item is not None:
        entry["item"] = doc.item
    obj = doc.obj
    entry.update(
        line=doc.line,
        apiVersion=obj.get("apiVersion"),
        kind=checked.kind,
        namespace=checked.namespace,
        name=checked.name,
        admitted=checked.admitted,
        violations=[
            {
                "rule": f.rule,
                "type": f.type,
                "level": f.level,
                **({"action": f.action} if f.type == "violation" else {}),
                "target": f.target,
                "field": f.field,
                "line": f.line,
                "message": f.message,
                **({"patch": f.patch} if f.patch else {}),
            }
            for f in checked.findings
            if f.type not in ("mutation", *INFORMATION)
        ],
        exceptions=[
            {"exception": f.rule, "plugin": f.plugins[0], "target": f.target}
            for f in checked.findings
            if f.type == "excepted"
        ],
        monitored=[
            {"plugin": f.rule, "target": f.target, "message": f.message}
            for f in checked.findings
            if f.type == "monitored"
        ],
        mutations=[
            {
                "target": f.target,
                "plugins": list(f.plugins),
                "summaries": list(f.summaries),
                "line": f.line,
                "patch": f.patch,
            }
            for f in checked.findings
            if f.type == "mutation"
        ],
    )
    return entry


def _skipped(doc: Document, reason: str) -> dict[str, Any]:
    """A document of a kind of another group that takes a built-in's name, as JSON."""
    obj = doc.obj if isinstance(doc.obj, dict) else {}
    entry: dict[str, Any] = {"path": doc.path, "document": doc.index}
    if doc.item is not None:
        entry["item"] = doc.item
    entry.update(
        line=doc.line, apiVersion=obj.get("apiVersion"), kind=obj.get("kind"), message=reason
    )
    return entry


def json(report: Report, options: Options) -> str:
    """Every object with its violations and mutations (patches included), plus totals.

    Scripts get everything the other formats summarise, including the exact JSON patches.
    """
    data = {
        "summary": {
            "objects": len(report.checked),
            "files": report.files,
            "violations": report.count("violation", "error"),
            "warnings": report.warnings(),
            "mutations": report.count("mutation"),
            "excepted": report.count("excepted"),
            "monitored": report.count("monitored"),
            "convergence": report.count(CONVERGENCE),
            "schema": report.count(SCHEMA, "error"),
            "context": dict(sorted(report.context.items())),
            "skipped": dict(sorted(report.skipped.items())),
            "exitCode": report.exit_code(options.fail_on_mutation),
        },
        "problems": [
            {"path": p.path, "line": p.line, "message": p.reason} for p in report.problems
        ],
        "objects": [_object(c) for c in report.checked],
        "skipped": [_skipped(doc, reason) for doc, reason in report.foreign],
    }
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"


def junit(report: Report, options: Options) -> str:
    """A test suite per file and a test case per object; failures carry every finding.

    Why one ``<failure>`` per case holding all lines: the common JUnit schemas allow one,
    and dashboards then show the whole story of the object in one place.
    """
    root = ET.Element("testsuites", name="placement-webhooks")
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def suite(path: str) -> ET.Element:
        if path not in suites:
            suites[path] = ET.SubElement(
                root, "testsuite", name=path, tests="0", failures="0", errors="0", skipped="0"
            )
        return suites[path]

    def bump(element: ET.Element, key: str) -> None:
        element.set(key, str(int(element.get(key, "0")) + 1))
        totals[key] += 1

    by_object: dict[int, list[Line]] = {}
    for item in lines(report, options):
        by_object.setdefault(id(item.checked), []).append(item)
    for checked in report.checked:
        parent = suite(checked.document.path)
        bump(parent, "tests")
        for outcome in _junit_case(parent, checked, by_object.get(id(checked), [])):
            bump(parent, outcome)
    for doc, reason in report.foreign:
        parent = suite(doc.path)
        case = ET.SubElement(
            parent, "testcase", classname=doc.path, name=SKIPPED, file=doc.path, line=str(doc.line)
        )
        ET.SubElement(case, "skipped", message=reason)
        bump(parent, "tests")
        bump(parent, "skipped")
    for problem in report.problems:
        parent = suite(problem.path)
        junit_input_error(parent, problem, "read")
        bump(parent, "tests")
        bump(parent, "errors")
    return junit_text(root, totals)


def _junit_case(parent: ET.Element, checked: Checked, items: list[Line]) -> list[str]:
    """Add one object's test case under ``parent``; the counters it adds to (``failures``,
    ``skipped``), which the caller bumps on the suite and the totals."""
    doc = checked.document
    case = ET.SubElement(
        parent,
        "testcase",
        classname=doc.path,
        name=checked.subject,
        file=doc.path,
        line=str(doc.line),
    )
    counted: list[str] = []
    failing = [i for i in items if i.failing]
    if failing:
        counted.append("failures")
        body = "\n".join(f"{doc.path}:{i.finding.line}: {i.rule}: {i.message}" for i in failing)
        ET.SubElement(case, "failure", message=failing[0].message, type=failing[0].rule).text = body
    warned = [i for i in items if i.level == "warning"]
    if warned and not failing:
        counted.append("skipped")
        ET.SubElement(case, "skipped", message=warned[0].message).text = "\n".join(
            f"{doc.path}:{i.finding.line}: {i.rule}: warning: {i.message}" for i in warned
        )
    info = [i for i in items if not i.failing]
    if info:
        ET.SubElement(case, "system-out").text = "\n".join(
            f"{doc.path}:{i.finding.line}: {i.rule}: {i.message}" for i in info
        )
    return counted


def junit_input_error(parent: ET.Element, problem: Problem, name: str) -> None:
    """A JUnit test case ``name`` in error for an input that could not be used.

    Why a case and not only a log line: dashboards count errors, and a suite that could not
    read its input must show red, not empty.
    """
    case = ET.SubElement(parent, "testcase", classname=problem.path, name=name, file=problem.path)
    ET.SubElement(case, "error", message=problem.reason, type="input").text = str(problem)


def junit_text(root: ET.Element, totals: Mapping[str, int]) -> str:
    """The JUnit document: ``totals`` on the root, indented, with its XML declaration."""
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _uri(path: str) -> str:
    pure = PurePath(path)
    if pure.is_absolute():
        return "file://" + quote(pure.as_posix())
    return quote(pure.as_posix())


def fingerprint(item: Line) -> str:
    """A stable identity for a finding across runs: rule, file, object, field and message.

    Lines are left out on purpose so that editing above a finding does not make code
    scanning report it as new.
    """
    c, f = item.checked, item.finding
    parts = (item.rule, c.document.path, c.kind, c.namespace, c.name, f.target, f.field)
    return hashlib.sha256("\0".join((*parts, item.message)).encode()).hexdigest()


def _location(path: str, line: int) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path)},
            "region": {"startLine": max(line, 1)},
        }
    }


def sarif(report: Report, options: Options) -> str:
    """SARIF 2.1.0: rules are the plugins (plus ``schema`` and ``convergence``), one result
    per failing finding at its line, with a stable fingerprint; unusable inputs become tool
    execution notifications."""
    rules = [*options.rules, *BUILTIN_RULES]
    index = {rule_id: i for i, (rule_id, _) in enumerate(rules)}
    results = []
    for item in lines(report, options):
        if item.level == "note":
            continue
        if item.rule not in index:
            index[item.rule] = len(rules)
            rules.append((item.rule, item.rule))
        c = item.checked
        location = _location(c.document.path, item.finding.line)
        location["logicalLocations"] = [
            {"fullyQualifiedName": "/".join(p for p in (c.kind, c.namespace, c.name) if p)}
        ]
        results.append(
            {
                "ruleId": item.rule,
                "ruleIndex": index[item.rule],
                "level": item.level,
                "message": {"text": item.message},
                "locations": [location],
                "partialFingerprints": {FINGERPRINT: fingerprint(item)},
            }
        )
    driver: dict[str, Any] = {"name": "placement-webhooks"}
    if options.tool_version:
        driver["version"] = options.tool_version
    driver["rules"] = [
        {
            "id": rule_id,
            "shortDescription": {"text": description},
            "defaultConfiguration": {"level": "error"},
        }
        for rule_id, description in rules
    ]
    invocation: dict[str, Any] = {"executionSuccessful": not report.problems}
    notifications = [
        {
            "level": "error",
            "message": {"text": p.reason},
            "locations": [_location(p.path, p.line)],
        }
        for p in report.problems
    ]
    # Not results: nothing is wrong with such an object, it was not looked at.
    notifications += [
        {
            "level": "note",
            "message": {"text": reason},
            "locations": [_location(doc.path, doc.line)],
        }
        for doc, reason in report.foreign
    ]
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    data = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "invocations": [invocation], "results": results}],
    }
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"


def _escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(report: Report, options: Options) -> str:
    """GitHub Actions workflow commands: ``::error file=…,line=…,title=<rule>::<message>``.

    Warnings (warn- and audit-mode violations, expired exceptions) are ``::warning``.

    The runner turns these into annotations on the pull request's diff at those lines.
    """
    out = []
    for p in report.problems:
        props = f"file={_escape(p.path, prop=True)}"
        if p.line > 0:
            props += f",line={p.line}"
        out.append(f"::error {props},title=unusable input::{_escape(p.reason)}")
    for doc, reason in report.foreign:
        props = f"file={_escape(doc.path, prop=True)},line={max(doc.line, 1)}"
        out.append(f"::notice {props},title={SKIPPED}::{_escape(reason)}")
    for item in lines(report, options):
        if item.level == "note":
            continue
        path = _escape(item.checked.document.path, prop=True)
        title = _escape(item.rule, prop=True)
        out.append(
            f"::{item.level} file={path},line={max(item.finding.line, 1)},title={title}::"
            + _escape(item.message)
        )
    return "".join(line + "\n" for line in out)


FORMATS: Mapping[str, Callable[[Report, Options], str]] = {
    "text": text,
    "json": json,
    "junit": junit,
    "sarif": sarif,
    "github": github,
}


def render(name: str, report: Report, options: Options) -> str:
    """Render ``report`` in format ``name`` (a key of :data:`FORMATS`).

    One entry point keeps the CLI free of per-format branches.
    """
    return FORMATS[name](report, options)


def rules_of(plugins: Sequence[Any]) -> tuple[tuple[str, str], ...]:
    """SARIF rules for registry plugins: ``(name, summary)`` in chain order.

    Every plugin is a rule whether it fired or not, so rule indexes stay stable across runs.
    """
    return tuple((p.name, p.summary) for p in plugins)
