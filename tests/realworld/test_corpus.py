"""The real-world corpus: every class of manifest that public repositories showed ``check``
and ``mutate`` getting wrong comes out right, under the default config and the full one.

Why through the sweep: it makes the same library calls as the commands (``check``,
``mutate`` twice, ``check --fail-on-mutation`` on the output), so a case here is the case
a user's CI would hit; the per-surface tests pin each rule in detail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realworld.sweep import FAILURES, configurations, sweep
from webhooks.cluster.files import StaticCluster
from webhooks.core.config import Config

HERE = Path(__file__).resolve().parent
CONFIGS = configurations(["default", "full"])


@pytest.mark.parametrize(
    ("name", "config", "cluster"),
    CONFIGS,
    ids=[
        f"under the {name} config the corpus reads, settles and reads back" for name, *_ in CONFIGS
    ],
)
def test_the_corpus_reads_settles_and_reads_back(
    name: str, config: Config, cluster: StaticCluster | None
) -> None:
    row = sweep(str(HERE / "corpus"), name, config, cluster)
    assert {c: row.counts[c] for c in FAILURES} == dict.fromkeys(FAILURES, 0), row.details
    assert row.counts["refused"] == 0, row.details
    assert row.counts["denials"] == 0, row.details
    assert row.counts["docs"] == sum(1 for _ in _documents(HERE / "corpus"))


def _documents(directory: Path) -> list[str]:
    return [
        part
        for path in sorted(directory.glob("*.yaml"))
        for part in path.read_text().split("\n---\n")
        if any(line and not line.startswith("#") for line in part.splitlines())
    ]


def test_a_document_that_is_only_text_is_refused_as_kubectl_refuses_it() -> None:
    (name, config, cluster) = CONFIGS[0]
    row = sweep(str(HERE / "refused"), name, config, cluster)
    assert row.counts["refused"] == 1, row.details
    assert "kubectl" in row.details[0], row.details
