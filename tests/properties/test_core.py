"""Property tests over the transport-free core: ``Admission.handle`` with bytes.

Every body goes through every target (each phase and both, the whole chain with every
plugin enabled and each plugin alone) and every answer keeps the invariants listed in
:mod:`tests.properties.invariants`.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from tests.properties.hostile import any_clusters, hostile_bodies, hostile_clusters, raw_bytes
from tests.properties.invariants import ALL_ENABLED, check_everywhere
from tests.properties.strategies import clusters, configs, reviews
from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import Config, load_config
from webhooks.plugins import REGISTRY

#: (body, whether it is valid-shaped): realistic reviews and hostile bodies, mixed.
any_bodies = st.one_of(
    reviews().map(lambda r: (orjson.dumps(r), True)),
    hostile_bodies.map(lambda b: (b, False)),
)


@given(configs(), clusters(), reviews())
def test_realistic_reviews_keep_every_invariant_and_never_get_an_internal_error(
    config: Config, cluster: StaticCluster, review: dict[str, Any]
) -> None:
    admission = Admission(REGISTRY, config, cluster)
    check_everywhere(admission, orjson.dumps(review), valid_shape=True, schema=True)


@given(configs(), any_clusters, hostile_bodies)
def test_hostile_bodies_get_a_well_formed_review_or_a_one_line_400(
    config: Config, cluster: StaticCluster, body: bytes
) -> None:
    check_everywhere(Admission(REGISTRY, config, cluster), body, valid_shape=False)


@given(raw_bytes)
def test_bytes_that_are_not_a_review_get_a_one_line_400(body: bytes) -> None:
    check_everywhere(Admission(REGISTRY, ALL_ENABLED), body, valid_shape=False)


@given(hostile_clusters(), reviews(("Pod",)))
def test_damaged_cluster_objects_never_hurt_a_pod_review(
    cluster: StaticCluster, review: dict[str, Any]
) -> None:
    admission = Admission(REGISTRY, ALL_ENABLED, cluster)
    check_everywhere(admission, orjson.dumps(review), valid_shape=False)


@given(clusters(), any_bodies)
def test_the_default_configuration_keeps_every_invariant(
    cluster: StaticCluster, body: tuple[bytes, bool]
) -> None:
    admission = Admission(REGISTRY, load_config(None, REGISTRY), cluster)
    check_everywhere(admission, body[0], valid_shape=body[1])
