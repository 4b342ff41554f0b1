"""Every plain scalar of the generated corpus is read as kubectl reads it, on every parser path.

The corpus (:mod:`tests.manifests.plaincorpus`) writes each scalar made of YAML's indicator
characters in each context a manifest uses; kubectl's answers for it were written by
kubectl's own reader, built from the pinned release's modules (``make yaml-reference``), and
are stored beside the other texts read as kubectl reads them. Acceptance and values must
agree; the wording of a refusal is the reader's own (:mod:`webhooks.manifests.syntax`).
"""

from __future__ import annotations

import io
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.manifests.plaincorpus import CONTEXTS, LAST_CONTEXT, cases
from webhooks.manifests import parser
from webhooks.manifests.decode import decode

ANSWERS = Path(__file__).parents[1] / "fixtures" / "yamlref" / "plain-scalars.json"


@cache
def kubectl_answers() -> dict[str, tuple[list[Any], str | None]]:
    """kubectl's answer for each text: the documents it sends and the error that stopped it."""
    stored = json.loads(ANSWERS.read_text())
    return {text: (documents, error) for text, documents, error in stored["answers"]}


def test_the_stored_answers_are_for_the_corpus_as_generated_now() -> None:
    stored = [row[0] for row in json.loads(ANSWERS.read_text())["answers"]]
    generated = [text for _, text in cases()]
    assert stored == generated, "the corpus changed: run `make yaml-reference` and commit"


def test_the_corpus_has_scalars_kubectl_reads_and_scalars_it_refuses() -> None:
    refused = sum(error is not None for _, error in kubectl_answers().values())
    assert 0 < refused < len(kubectl_answers())


def disagreements(context: str) -> list[str]:
    """Each text of ``context`` the reader reads otherwise than kubectl, said in one line."""
    answers = kubectl_answers()
    found = []
    for where, text in cases():
        if where != context:
            continue
        documents, error = answers[text]
        decoded = decode(text)
        ours = [raw.value for raw in decoded.documents]
        if (decoded.error is None) != (error is None):
            said = f"kubectl: {error}" if error else f"we: {decoded.error}"
            found.append(f"{text!r}: accepted by one only ({said})")
        elif error is None and ours != documents:
            found.append(f"{text!r}: kubectl {documents}, we {ours}")
    return found


@pytest.mark.parametrize(
    "context",
    [pytest.param(name, id=name) for name in [*(name for name, _ in CONTEXTS), LAST_CONTEXT]],
)
def test_every_plain_scalar_is_accepted_and_resolved_as_kubectl_does(
    context: str, parser_path: str
) -> None:
    assert disagreements(context) == []


STREAMED = [
    pytest.param(
        "k: {" + ", ".join(f"key{i}{'x' * (i % 7)}: v{i}" for i in range(2000)) + "}\n",
        id="a flow mapping of 2,000 keys, so some key's colon is the last character read",
    ),
    pytest.param("k: [" + "a:" * 10_000 + "]\n", id="one scalar of 20,000 characters"),
    pytest.param(
        "k:\n" + "".join(f"  key{i}{'x' * (i % 5)}: a:b\n" for i in range(2000)),
        id="a block mapping of 2,000 keys",
    ),
]


@pytest.mark.parametrize("text", STREAMED)
def test_a_stream_read_a_piece_at_a_time_gives_the_events_of_the_whole_text(text: str) -> None:
    # The pure-Python parser reads a stream in pieces; whether a ":" ends a plain scalar
    # depends on the character after it, which may come only in the next piece.
    def events(source: Any) -> list[Any]:
        loader = parser.PURE(source)
        try:
            found = []
            while loader.check_event():
                event = loader.get_event()
                found.append((type(event).__name__, getattr(event, "value", None)))
            return found
        finally:
            loader.dispose()

    assert events(io.StringIO(text)) == events(text)
