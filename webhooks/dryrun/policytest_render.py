"""Rendering policy test results (:mod:`.policytest`): text for people, JUnit for dashboards.

Text is one line per expectation, ``PASS`` or ``FAIL`` then ``file:line: suite: what``, so
editors and CI log viewers jump to the expectation; a failure is followed by indented lines
that say what was expected and what was found. JUnit has a test suite per suite and a test
case per expectation, the same lines in its ``<failure>``. Values are shown in YAML's flow
style, the way test files write them, and cut short when long: a whole pod spec would bury
the one field that differs.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any, Final

from webhooks.dryrun.judging import Difference, Verdict
from webhooks.dryrun.policytest import Results
from webhooks.dryrun.render import junit_input_error, junit_text

#: Characters of one rendered value before it is cut; elements of a found list shown.
VALUE_LIMIT: Final = 200
LIST_LIMIT: Final = 12
#: Nesting shown before ``{…}``; why a bound: stored objects may nest thousands of levels.
DEPTH_LIMIT: Final = 12

_PLAIN = re.compile(r"^[A-Za-z_/][\w./@+-]*$")
_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _flow(value: Any, depth: int, out: list[str], budget: list[int]) -> None:
    if budget[0] <= 0:
        return
    if isinstance(value, dict | list) and depth >= DEPTH_LIMIT:
        piece = "{…}" if isinstance(value, dict) else "[…]"
        out.append(piece)
        budget[0] -= len(piece)
        return
    if isinstance(value, dict):
        out.append("{")
        budget[0] -= 1
        for i, (key, item) in enumerate(value.items()):
            if budget[0] <= 0:
                return
            head = ("" if i == 0 else ", ") + _scalar(key) + ": "
            out.append(head)
            budget[0] -= len(head)
            _flow(item, depth + 1, out, budget)
        out.append("}")
        budget[0] -= 1
        return
    if isinstance(value, list):
        out.append("[")
        budget[0] -= 1
        for i, item in enumerate(value):
            if budget[0] <= 0:
                return
            if i:
                out.append(", ")
                budget[0] -= 2
            _flow(item, depth + 1, out, budget)
        out.append("]")
        budget[0] -= 1
        return
    piece = _scalar(value)
    out.append(piece)
    budget[0] -= len(piece)


def flow(value: Any, limit: int = VALUE_LIMIT) -> str:
    """``value`` in YAML flow style (``{key: dedicated, operator: Exists}``), cut after ``limit``.

    Why flow YAML and not JSON: it is how test files write expectations, so the expected
    and found lines of a failure can be compared with the file at a glance.
    """
    out: list[str] = []
    _flow(value, 0, out, [limit])
    text = "".join(out)
    return text if len(text) <= limit else text[:limit] + "…"


def _difference(diff: Difference) -> list[str]:
    where = diff.where or "(the object itself)"
    if diff.problem == "missing":
        keys = ", ".join(diff.siblings[:20]) or "none"
        return [
            f"object {where}: missing",
            f"  expected: {flow(diff.expected)}",
            f"  found:    no such key (keys there: {keys})",
        ]
    if diff.problem == "no element":
        found: list[Any] = diff.found if isinstance(diff.found, list) else []
        lines = [
            f"object {where}: no element contains the expected one",
            f"  expected: {flow(diff.expected)}",
            f"  found:    {len(found)} element{'' if len(found) == 1 else 's'}"
            + (":" if found else ""),
        ]
        lines += [f"    - {flow(item)}" for item in found[:LIST_LIMIT]]
        if len(found) > LIST_LIMIT:
            lines.append(f"    … and {len(found) - LIST_LIMIT} more")
        return lines
    return [
        f"object {where}: different",
        f"  expected: {flow(diff.expected)}",
        f"  found:    {flow(diff.found)}",
    ]


def summary_of(verdict: Verdict) -> str:
    """What is wrong with a failed expectation, in one line (JUnit's ``message``).

    Dashboards list failures by this line, so it names the result or the paths that differ.
    """
    expected = verdict.expectation.result
    if verdict.found is None:
        return verdict.reasons[0]
    if verdict.found != expected:
        return f"expected {expected}, found {verdict.found}"
    where = ", ".join(dict.fromkeys(d.where or "(the object itself)" for d in verdict.differences))
    return f"object differs at {where}"


def details(verdict: Verdict) -> list[str]:
    """What was expected and what was found, as lines; empty for an expectation that holds.

    The result line names the request judged (the workload, or its Pods) and every reason,
    each violation's message included, because "found pass" alone does not help anyone.
    """
    if verdict.passed:
        return []
    if verdict.found is None:
        return [f"resource: {reason}" for reason in verdict.reasons]
    lines: list[str] = []
    expected = verdict.expectation.result
    if verdict.found != expected:
        lines.append(f"result: expected {expected}, found {verdict.found} ({verdict.subject})")
        lines += [f"  {reason}" for reason in verdict.reasons]
    else:
        lines.append(f"result: {expected}, as expected ({verdict.subject})")
    for diff in verdict.differences:
        lines += _difference(diff)
    return lines


def _where(verdict: Verdict) -> str:
    return f"{verdict.suite.path}:{verdict.expectation.line}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary(results: Results) -> str:
    """The closing line: expectations, suites, how many passed and failed, unusable inputs.

    Why the suites are counted: "0 expectations" must read as "nothing was tested".
    """
    failed = len(results.failed)
    passed = len(results.verdicts) - failed
    text = (
        f"{_plural(len(results.verdicts), 'expectation')} in {_plural(results.suites, 'suite')}: "
        f"{passed} passed, {failed} failed"
    )
    if results.problems:
        text += f"; {_plural(len(results.problems), 'unusable input')}"
    return text


def text(results: Results) -> str:
    """``PASS|FAIL file:line: suite: expectation`` per expectation, details, a summary line.

    The ``file:line`` is the expectation's, so an editor or CI log viewer jumps to it.
    """
    out: list[str] = []
    for verdict in results.verdicts:
        status = "PASS" if verdict.passed else "FAIL"
        out.append(f"{status} {_where(verdict)}: {verdict.suite.name}: {verdict.expectation.label}")
        out += [f"    {line}" for line in details(verdict)]
    out.append(summary(results))
    return "\n".join(out) + "\n"


def junit(results: Results) -> str:
    """A ``<testsuite>`` per suite, a ``<testcase>`` per expectation; unusable inputs are errors.

    Why failures carry the same lines as the text: a dashboard reader should not have to
    open the CI log to see what differed.
    """
    root = ET.Element("testsuites", name="placement-webhooks test")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    suites: dict[tuple[str, int], ET.Element] = {}

    def suite_element(name: str, path: str, line: int) -> ET.Element:
        key = (path, line)
        if key not in suites:
            suites[key] = ET.SubElement(
                root, "testsuite", name=name, file=path, tests="0", failures="0", errors="0"
            )
        return suites[key]

    def bump(element: ET.Element, key: str) -> None:
        element.set(key, str(int(element.get(key, "0")) + 1))
        totals[key] += 1

    for verdict in results.verdicts:
        suite = verdict.suite
        parent = suite_element(suite.name, suite.path, suite.line)
        case = ET.SubElement(
            parent,
            "testcase",
            classname=suite.name,
            name=verdict.expectation.label,
            file=suite.path,
            line=str(verdict.expectation.line),
        )
        bump(parent, "tests")
        if not verdict.passed:
            bump(parent, "failures")
            body = "\n".join([f"{_where(verdict)}: {verdict.expectation.label}", *details(verdict)])
            failure = ET.SubElement(
                case, "failure", message=summary_of(verdict), type="expectation"
            )
            failure.text = body
    for problem in results.problems:
        parent = suite_element(problem.path, problem.path, -1)
        junit_input_error(parent, problem, "load")
        bump(parent, "tests")
        bump(parent, "errors")
    return junit_text(root, totals)


FORMATS: Mapping[str, Callable[[Results], str]] = {"text": text, "junit": junit}


def render(name: str, results: Results) -> str:
    """Render ``results`` in format ``name`` (a key of :data:`FORMATS`).

    One entry point keeps the CLI free of per-format branches.
    """
    return FORMATS[name](results)
