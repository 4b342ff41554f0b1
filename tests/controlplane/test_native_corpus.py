"""The exported policies on the shared differential corpus: the same cases the webhooks are
checked on against the in-tree plugins (tests/controlplane/differential), sent to a native
API server and to one in ``MODE=webhooks``, for each of the differential groups' configs.

Two comparisons per group:

* ``native``: the policies ``export`` prints, alone. The groups turn
  pod-toleration-restriction on, which is not exported (its annotations are JSON), so both
  servers read the group's config with that plugin off: what is compared is every plugin
  the report calls ``exact`` or ``exact except``. The one difference allowed is the report's
  ``exact except`` for runtime-class that the corpus reaches: a pod naming a RuntimeClass
  that does not exist (test_native_differential.py shows it on its own).
* ``hybrid``: ``export --hybrid`` plus ``serve --native`` registered with ``webhook-config
  --native``, with the group's config as it is. Nothing may differ: the halves kept on the
  webhook run there as one chain (one mutating webhook, one validating), so the API server
  cannot reinvoke one of them apart from the others. (Before, each kept half was a webhook
  of its own, and with pod-toleration-restriction on the API server reinvoked its merge
  after ExtendedResourceToleration's webhook changed the pod: 1 case of the 330 differed.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.controlplane.conftest import FIGURES, STARTS
from tests.controlplane.differential import apply
from tests.controlplane.differential.corpus import FIELDS, RUNTIME_CLASSES, Observed, cases
from tests.controlplane.native.observe import policy_rule, reason_of, rules_in
from tests.controlplane.native.pair import Pair, pair

CONFIGS = Path(__file__).parent / "configs" / "differential"
NOT_FOUND = 'pod rejected: RuntimeClass "missing" not found'


@dataclass(frozen=True, slots=True)
class Group:
    """A differential group: its config, and its corpus's seed and size (as the webhooks')."""

    name: str
    config: Path
    seed: int
    count: int


GROUPS = (
    Group("namespaces", CONFIGS / "namespaces.yaml", 20, 330),
    Group("cluster", CONFIGS / "cluster.yaml", 25, 230),
)


def without_unexported(config: Path, directory: Path) -> Path:
    """``config`` with pod-toleration-restriction off (the plugin ``export`` leaves out)."""
    document = yaml.safe_load(config.read_text())
    document["plugins"]["pod-toleration-restriction"] = {"enabled": False}
    written = directory / config.name
    written.write_text(yaml.safe_dump(document))
    return written


def different(webhook: Observed, native: Observed) -> list[str]:
    """What differs: the stage, allowed or refused, the stored fields, the refusal's reason.

    A refusal's wrapper differs by design (the webhook's ``admission webhook ... denied the
    request``, the policy's ``ValidatingAdmissionPolicy ... denied request``, and the codes
    each uses); the reason inside is compared. A webhook names every validating refusal at
    once, the API server the first policy that refused, so a native reason agrees when it
    is one of the webhook's or comes from another rule than the webhook's.
    """
    if webhook.stage != native.stage or webhook.allowed != native.allowed:
        return [
            f"stage/allowed: webhook {webhook.stage} {webhook.allowed} {webhook.message!r}"
            f" | native {native.stage} {native.allowed} {native.message!r}"
        ]
    if webhook.allowed:
        return [
            f"{name}: webhook {webhook.stored.get(name)} | native {native.stored.get(name)}"
            for name in FIELDS
            if webhook.stored.get(name) != native.stored.get(name)
        ]
    ours, theirs = reason_of(webhook.message), reason_of(native.message)
    inner = theirs[1:-1] if theirs.startswith("[") else theirs
    if theirs == ours or inner in ours or policy_rule(native.message) not in rules_in(ours):
        return []
    return [f"reason: webhook {ours!r} | native {theirs!r}"]


def explained(webhook: Observed, native: Observed) -> bool:
    """The report's ``exact except`` for runtime-class: a missing RuntimeClass is admitted."""
    return not webhook.allowed and reason_of(webhook.message) == NOT_FOUND and native.allowed


@pytest.fixture(
    scope="module",
    params=[
        pytest.param((group, variant), id=f"{group.name}, {variant}")
        for group in GROUPS
        for variant in ("native", "hybrid")
    ],
)
def setup(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Group, str, Pair]]:
    """A native (or hybrid) and a webhook API server for one group's config."""
    group, variant = request.param
    config = group.config
    if variant == "native":
        config = without_unexported(config, tmp_path_factory.mktemp(group.name))
    # The corpus's RuntimeClasses exist before the policies: their param informer lists them.
    with pair(config, list(RUNTIME_CLASSES), hybrid=variant == "hybrid") as started:
        STARTS.append((f"{variant} + webhooks, 2 API servers", started.plane.started_in or 0))
        yield group, variant, started


def test_the_shared_corpus_is_answered_as_the_webhooks_answer_it(
    setup: tuple[Group, str, Pair], capsys: pytest.CaptureFixture[str]
) -> None:
    group, variant, both = setup
    corpus = list(cases(group.seed, group.count))
    servers = ("webhooks", "native")
    with ThreadPoolExecutor(2) as pool:
        webhooks, native = pool.map(lambda s: apply.run(both.plane.apiservers[s], corpus), servers)
    tally: Counter[str] = Counter()
    unexplained = []
    for case in corpus:
        found = different(webhooks[case.id], native[case.id])
        if not found:
            tally["agree"] += 1
        elif variant == "native" and explained(webhooks[case.id], native[case.id]):
            tally["explained: a RuntimeClass that does not exist"] += 1
        else:
            tally["unexplained"] += 1
            unexplained.append(f"case {case.id} ({case.request.operation}): " + "; ".join(found))
    figure = (
        f"native corpus {group.name} / {variant} vs webhooks: {len(corpus)} cases, {dict(tally)}"
    )
    FIGURES.append(figure)
    with capsys.disabled():
        print("\n" + figure)
    assert unexplained == []
