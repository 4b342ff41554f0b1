"""What CEL the running release's API server accepts in a new admission policy, against the
table (:data:`webhooks.k8s.releases.CEL_LIBRARIES`, ``Release.cel_environment``).

Why on the real API server: ``export`` refuses a plugin's half on a release whose new-policy
CEL lacks a library the half calls (1.34 compiles new expressions against the 1.33
environment, which has no ``lists.range``), and that rests on reading
``k8s.io/apiserver``'s ``pkg/cel/environment``. Each library is tried in a ValidatingAdmissionPolicy
created with ``dryRun``: accepted exactly where the table says the release offers it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane.harness import ControlPlaneOptions, running
from controlplane.harness.nativepolicies import API
from controlplane.harness.rest import Rest
from controlplane.release import RELEASE
from tests.controlplane.native.pair import native_options
from webhooks.export.cel import library_calls
from webhooks.k8s.releases import (
    CEL_LIBRARIES,
    CEL_LISTS,
    CEL_OPTIONAL,
    CEL_QUANTITY,
    CEL_STRINGS,
    CEL_TWO_VARIABLE,
)

#: One expression per library, calling it as the translators do.
CALLS = {
    CEL_OPTIONAL: "object.metadata.?labels.orValue({}).size() >= 0",
    CEL_QUANTITY: "quantity('100m').compareTo(quantity('1')) < 0",
    CEL_STRINGS: "'a/b'.substring('a/b'.lastIndexOf('/') + 1) == 'b'",
    CEL_TWO_VARIABLE: "{'a': 1}.transformMap(k, v, string(v)).size() == 1",
    CEL_LISTS: "lists.range(2).filter(i, i > 0).size() == 1",
}


@pytest.fixture(scope="module")
def rest() -> Iterator[Rest]:
    """One API server of the running release, nothing else."""
    options = ControlPlaneOptions(
        apiservers=(native_options(),), scheduler=False, controller_manager=None
    )
    with running(options) as plane:
        yield Rest(plane.api)


def _policy(name: str, expression: str) -> dict[str, object]:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "validations": [{"expression": expression}],
        },
    }


def test_every_library_of_the_table_has_an_expression_here() -> None:
    assert set(CALLS) == set(CEL_LIBRARIES)
    for library, expression in CALLS.items():
        assert library in library_calls(expression)


@pytest.mark.parametrize("library", list(CALLS), ids=[f"CEL {name}" for name in CALLS])
def test_a_new_policy_may_call_a_library_exactly_where_the_table_says(
    rest: Rest, library: str
) -> None:
    name = f"cel-{list(CALLS).index(library)}"
    answer = rest.create(
        f"/apis/{API}/validatingadmissionpolicies?dryRun=All", _policy(name, CALLS[library])
    )
    offered = RELEASE.cel_offers(library)
    assert answer.allowed is offered, (RELEASE.name, library, answer.message)
    if not offered:
        assert answer.status == 422
        assert "undeclared reference" in answer.message or "no matching overload" in answer.message
