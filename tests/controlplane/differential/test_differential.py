"""Differential conformance: the corpus through in-tree plugins and through the webhooks.

For each config group, API servers on one etcd: ``in-tree`` (the reference: upstream's
plugins configured from the file), ``webhooks`` (the six in-tree twins off, ``serve`` with
the file) and, where a managed cluster could run the file, ``managed`` (DefaultTolerationSeconds,
ExtendedResourceToleration and RuntimeClass in tree with upstream's defaults, ``serve``
behind them). Every case goes to each; every observation is compared with in-tree's.
A difference is a bug, unless :data:`EXPLAINED` names it as a deliberate, documented
extension (docs/conformance.md), which its own test pins.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from controlplane.harness import ControlPlaneOptions
from controlplane.harness.modes import apiserver_options
from tests.controlplane.conftest import started_plane
from tests.controlplane.differential import apply
from tests.controlplane.differential.corpus import FIELDS, Case, Observed, cases, compare
from tests.controlplane.differential.report import REPORTS, Report

#: A file to append every difference to (explained ones too), for reading a whole run.
REPORT_ENV = "DIFFERENTIAL_REPORT"
CONFIGS = Path(__file__).parents[1] / "configs" / "differential"


@dataclass(frozen=True, slots=True)
class Group:
    """One config file, the modes compared with in-tree under it, and its corpus."""

    name: str
    config: Path
    modes: tuple[str, ...]
    seed: int
    count: int


GROUPS = (
    Group("namespaces", CONFIGS / "namespaces.yaml", ("webhooks", "managed"), 20, 330),
    Group("cluster", CONFIGS / "cluster.yaml", ("webhooks",), 25, 230),
)

Explanation = Callable[[str, Case, Observed, Observed], bool]
WHITELIST_REFUSAL = "pod tolerations (possibly merged with namespace default tolerations)"
OVERHEAD_REFUSALS = (
    "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
)


def _forbidden_not_500(mode: str, case: Case, reference: Observed, other: Observed) -> bool:
    """The whitelist refusal: upstream returns a plain error, which the API server answers
    as HTTP 500; ours is a policy denial, 403 Forbidden (PRODUCT.md), the same words."""
    return (
        (reference.code, other.code) == (500, 403)
        and reference.message == other.message
        and reference.message.startswith(WHITELIST_REFUSAL)
    )


def _unreadable_annotation(mode: str, case: Case, reference: Observed, other: Observed) -> bool:
    """A namespace annotation that does not parse: upstream answers 500 with Go's parser
    error; ours 403, naming the namespace and the annotation, then the parser's reason."""
    namespace = case.namespace["metadata"]["name"]
    return (
        not reference.allowed
        and (reference.code, other.code) == (500, 403)
        and other.message.startswith(f"namespace {namespace!r} annotation scheduler.alpha.")
    )


def _empty_overhead(mode: str, case: Case, reference: Observed, other: Observed) -> bool:
    """``overhead: {}``: the in-tree plugin sees a set (empty) map and refuses; a webhook is
    sent the pod as JSON, where an empty map is omitted, so it cannot tell it from none."""
    return (
        case.request.pod["spec"].get("overhead") == {}
        and not reference.allowed
        and reference.message.endswith(OVERHEAD_REFUSALS)
        and other.allowed
    )


def _managed_order(mode: str, case: Case, reference: Observed, other: Observed) -> bool:
    """A managed cluster runs its in-tree DefaultTolerationSeconds, ExtendedResourceToleration
    and RuntimeClass before every webhook: an extended-resource toleration lands before what
    PodTolerationRestriction merges in, and of several refusals another comes first."""
    if mode != "managed":
        return False
    if not reference.allowed and not other.allowed:
        return True
    if not (reference.allowed and other.allowed):
        return False
    if any(reference.stored[f] != other.stored[f] for f in FIELDS if f != "tolerations"):
        return False
    ours, theirs = reference.stored["tolerations"] or [], other.stored["tolerations"] or []
    return sorted(map(json.dumps, ours)) == sorted(map(json.dumps, theirs))


#: Deliberate or inherent differences (docs/conformance.md): (name, plugin, predicate).
EXPLAINED: tuple[tuple[str, str, Explanation], ...] = (
    ("403-not-500", "pod-toleration-restriction", _forbidden_not_500),
    ("unreadable-annotation", "", _unreadable_annotation),
    ("empty-overhead", "runtime-class", _empty_overhead),
    ("managed-order", "(managed chain)", _managed_order),
)


def explain(mode: str, case: Case, reference: Observed, other: Observed) -> tuple[str, str]:
    """The deliberate difference this is and the plugin it belongs to, or ``("", "")``."""
    for name, plugin, matches in EXPLAINED:
        if matches(mode, case, reference, other):
            if plugin:
                return name, plugin
            selector = "scheduler.alpha.kubernetes.io/node-selector" in other.message
            return name, "pod-node-selector" if selector else "pod-toleration-restriction"
    return "", ""


def _reason(message: str) -> str:
    """A refusal's reason without the object's name, to count refusals by kind."""
    return re.sub(r'^[Pp]ods? "[^"]*" (is forbidden|is invalid): ', "", message)[:70]


def _applies(name: str, group: Group) -> bool:
    return name != "managed-order" or "managed" in group.modes


@pytest.mark.parametrize("group", GROUPS, ids=[f"{g.name} config group" for g in GROUPS])
def test_the_webhooks_answer_every_case_as_the_in_tree_plugins_do(group: Group) -> None:
    corpus = list(cases(group.seed, group.count, prefix=f"{group.name[0]}-"))
    modes = ("in-tree", *group.modes)
    options = ControlPlaneOptions(
        apiservers=tuple(apiserver_options(m, group.config) for m in modes),
        scheduler=False,
        controller_manager=None,
    )
    what = f"differential {group.name}: {len(modes)} API servers"
    with started_plane(options, what) as plane, ThreadPoolExecutor(len(modes)) as pool:
        runs = dict(
            zip(
                modes,
                pool.map(lambda m: apply.run(plane.apiservers[m], corpus), modes),
                strict=True,
            )
        )
    report = Report(group.name, len(corpus))
    report.refusals.update(
        _reason(seen.message) for seen in runs["in-tree"].values() if not seen.allowed
    )
    report.refused = sum(report.refusals.values())
    for mode in group.modes:
        for case in corpus:
            reference, other = runs["in-tree"][case.id], runs[mode][case.id]
            differences = compare(reference, other)
            why = explain(mode, case, reference, other) if differences else ("", "")
            report.add(mode, case, differences, why, reference, other)
    REPORTS.append(report)
    if os.environ.get(REPORT_ENV):
        with Path(os.environ[REPORT_ENV]).open("a", encoding="utf-8") as out:
            out.write("\n\n".join(report.every_difference()) + "\n")
    found = {d[3] for d in report.differences}
    missing = [name for name, _, _ in EXPLAINED if name not in found and _applies(name, group)]
    unexplained = report.unexplained()
    assert not unexplained, "\n\n".join(unexplained[:15]) + f"\n\n{len(unexplained)} unexplained"
    # Each deliberate difference is pinned by the corpus: one that no case shows any more has
    # gone away (or the corpus stopped reaching it), and docs/conformance.md must say so.
    assert not missing, f"deliberate differences no case showed: {missing}"
