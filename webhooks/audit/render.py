"""An audit for people, scripts and test dashboards: ``text``, ``json`` and ``junit``.

Why formats of its own rather than ``check``'s: an audit's subject is an object in the
cluster (with a pod count), not a line in a file, and it has outcomes a dry run has not
(drift, pods not admitted at all). The wording follows ``check``'s: the subject, the
plugin, and the message, with ``warning:`` before what does not fail the run.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from webhooks.audit.results import Audit, Result, Skipped

#: The word before a message, by outcome; a failure has none, as in ``check``.
_TAGS = {"error": "error: ", "note": "note: "}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def subject(result: Result | Skipped) -> str:
    """``Kind namespace/name``, with ``(3 pods)`` when pods were counted on it.

    Why the count: "this Deployment" and "its 5,000 pods" call for different urgency.
    """
    text = result.ref.subject
    if not result.pods or result.ref.kind == "Pod":  # a pod counted on itself
        return text
    return f"{text} ({_plural(result.pods, 'pod')})"


def tag(result: Result) -> str:
    """``""`` for a failure; ``warning:``, ``drift:``, ``skipped <rule>:``, ``note:`` otherwise.

    Why a skip names its rule: an exception that covers both halves of a plugin skips its
    drift and its violations, and the two lines must not read alike.
    """
    if result.outcome == "warn":
        return "drift: " if result.rule == "drift" else "warning: "
    if result.outcome == "skip":
        return f"skipped {result.rule}: "
    return _TAGS.get(result.outcome, "")


def line(result: Result) -> str:
    """One result as ``subject: plugin: [tag] message``.

    Why this shape: it is ``check``'s ``path:line: plugin: message`` with the object in place
    of the file, so one habit reads both.
    """
    return f"{subject(result)}: {result.policy}: {tag(result)}{result.message}"


def summary(audit: Audit) -> str:
    """The closing line: what was admitted, what it came to, what was not admitted.

    Kinds are counted so "nothing found" can be told from "nothing scanned".
    """
    objects = sum(audit.objects.values())
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(audit.objects.items()))
    text = f"{_plural(objects, 'object')} audited" + (f" ({kinds})" if kinds else "")
    drift = sum(r.outcome == "warn" and r.rule == "drift" for r in audit.results.values())
    parts = [
        f"{audit.count('fail'):,} failed",
        _plural(audit.count("warn") - drift, "warning"),
        f"{drift:,} drift",
        f"{audit.count('skip'):,} skipped by exceptions",
    ]
    if audit.count("error"):
        parts.append(_plural(audit.count("error"), "error"))
    text += ": " + ", ".join(parts)
    covered = ", ".join(f"{kind} {n:,}" for kind, n in sorted(audit.covered.items()))
    if covered:
        text += f"; through their owners: {covered}"
    idle = sum(s.pods for s in audit.skipped.values())
    if idle:
        text += f"; {_plural(idle, 'pod')} not admitted (mirror or finished)"
    if audit.namespaces is not None:
        text += f"; namespaces: {', '.join(audit.namespaces)}"
    if audit.excluded:
        text += f"; left out: {', '.join(audit.excluded)} (the webhooks never see them)"
    return text


def text(audit: Audit) -> str:
    """One line per result (what fails first), the pods not admitted, then the summary."""
    out = [line(r) for r in audit.ordered()]
    out += [f"{subject(s)}: skipped: {s.reason}" for s in _skipped(audit)]
    out.append(summary(audit))
    return "\n".join(out) + "\n"


def _skipped(audit: Audit) -> list[Skipped]:
    return sorted(
        audit.skipped.values(), key=lambda s: (s.ref.kind, s.ref.namespace, s.ref.name, s.reason)
    )


def _object(result: Result | Skipped) -> dict[str, Any]:
    ref = result.ref
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "uid": ref.uid,
    }


def json(audit: Audit) -> str:
    """Every result with its subject, outcome, severity and pod count, plus totals.

    Scripts get everything the text says, keyed, and the exit code the run ends with.
    """
    data = {
        "summary": {
            "objects": dict(sorted(audit.objects.items())),
            "throughOwners": dict(sorted(audit.covered.items())),
            "namespaces": list(audit.namespaces) if audit.namespaces is not None else None,
            "excluded": list(audit.excluded),
            "fail": audit.count("fail"),
            "error": audit.count("error"),
            "warn": audit.count("warn"),
            "skip": audit.count("skip"),
            "notAdmitted": sum(s.pods for s in audit.skipped.values()),
            "exitCode": audit.exit_code(),
        },
        "results": [
            {
                **_object(r),
                "policy": r.policy,
                "rule": r.rule,
                "result": r.outcome,
                "severity": r.severity,
                "message": r.message,
                "pods": r.pods,
                "properties": r.properties,
            }
            for r in audit.ordered()
        ],
        "notAdmitted": [
            {**_object(s), "reason": s.reason, "pods": s.pods} for s in _skipped(audit)
        ],
    }
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"


def junit(audit: Audit) -> str:
    """A test suite per namespace (``cluster`` for cluster-scoped objects), a case per subject.

    As with ``check``: failures and errors are one ``<failure>`` holding every line, a case
    with only warnings (drift included) is ``<skipped>`` with them, the rest goes to
    ``<system-out>``.
    """
    root = ET.Element("testsuites", name="placement-webhooks audit")
    cases: dict[tuple[str, str, str], list[Result]] = {}
    for result in audit.ordered():
        ref = result.ref
        cases.setdefault((ref.namespace, ref.kind, ref.name), []).append(result)
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for (namespace, _, _), results in sorted(cases.items()):
        name = namespace or "cluster"
        suite = suites.get(name)
        if suite is None:
            suite = suites[name] = ET.SubElement(
                root, "testsuite", name=name, tests="0", failures="0", errors="0", skipped="0"
            )
        case = ET.SubElement(
            suite, "testcase", classname=name, name=subject(max(results, key=lambda r: r.pods))
        )
        _bump(suite, totals, "tests")
        failing = [r for r in results if r.outcome in ("fail", "error")]
        warned = [r for r in results if r.outcome == "warn"]
        if failing:
            _bump(suite, totals, "failures")
            ET.SubElement(
                case, "failure", message=failing[0].message, type=failing[0].policy
            ).text = "\n".join(line(r) for r in failing)
        elif warned:
            _bump(suite, totals, "skipped")
            ET.SubElement(case, "skipped", message=warned[0].message).text = "\n".join(
                line(r) for r in warned
            )
        rest = [r for r in results if r not in failing]
        if rest:
            ET.SubElement(case, "system-out").text = "\n".join(line(r) for r in rest)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _bump(suite: ET.Element, totals: dict[str, int], key: str) -> None:
    suite.set(key, str(int(suite.get(key, "0")) + 1))
    totals[key] += 1


FORMATS: Mapping[str, Callable[[Audit], str]] = {"text": text, "json": json, "junit": junit}
