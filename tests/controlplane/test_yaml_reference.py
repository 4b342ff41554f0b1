"""The stored kubectl answers for the plain-scalar corpus are the pinned release's own.

``make test`` compares the manifest reader with answers stored in the repository
(``tests/manifests/test_plain_scalars.py``); this is where those answers are asked again of
kubectl's reader, built from the pinned release's modules, so answers left behind by a new
release or by a changed corpus fail here instead of standing for kubectl.
"""

from __future__ import annotations

import json

import pytest

from controlplane.build import BuildError
from tests.controlplane.conftest import FIGURES
from tests.controlplane.yamlreference import ANSWERS, fresh


def test_the_stored_plain_scalar_answers_are_what_kubectls_reader_answers_now() -> None:
    try:
        text = fresh()
    except BuildError as exc:
        pytest.fail(str(exc), pytrace=False)
    answers = json.loads(text)["answers"]
    refused = sum(error is not None for _, _, error in answers)
    FIGURES.append(
        f"yaml reference: {len(answers)} plain-scalar cases asked of kubectl's reader "
        f"({len(answers) - refused} read, {refused} refused)"
    )
    assert ANSWERS.read_text() == text, "stale answers: run `make yaml-reference` and commit"
