"""Property tests over what the certificate sidecar reads: any Secret data is repaired in one
step without an exception, and PEM blocks are found as they are, in one pass.

The Secret's values are drawn from pieces of real material (a CA, its key, a leaf, its key,
another CA's key), cut, joined, relabelled, re-encoded or replaced by garbage, so the
examples reach the checks past base64 and PEM that random bytes alone never would.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from webhooks.certs import pki
from webhooks.certs.managed import read_secret, to_secret
from webhooks.certs.rotation import MAX_BUNDLE_CERTS, Material, Policy, plan

NOW = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
POLICY = Policy(hosts=tuple(pki.service_hosts("pw", "placement")))
KEYS = ("ca.crt", "ca.key", "next-ca.key", "next-ca.since", "tls.crt", "tls.key")


@functools.cache
def _pieces() -> tuple[bytes, ...]:
    """PEM a Secret may hold, right or wrong: certificates and keys of two CAs and a leaf."""
    material, _ = plan(Material(), POLICY, NOW, published=False)
    assert material.leaf is not None and material.signing_key is not None
    other = pki.new_ca("other CA", days=30, now=NOW)
    return (
        material.bundle[0],
        material.signing_key,
        material.leaf.cert,
        material.leaf.key,
        other.cert,
        other.key,
        b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
        b"-----BEGIN CERTIFICATE-----\n",
        b"-----END CERTIFICATE-----\n",
        NOW.isoformat().encode(),
        b"2027-06-01T00:00:00",
    )


@st.composite
def _pem_value(draw: st.DrawFn) -> bytes:
    """Pieces joined, some cut short, relabelled or with bytes flipped."""
    pieces = _pieces()
    parts: list[bytes] = []
    for _ in range(draw(st.integers(0, 3))):
        piece = pieces[draw(st.integers(0, len(pieces) - 1))]
        mutation = draw(st.sampled_from(["keep", "cut", "relabel", "flip", "repeat"]))
        if mutation == "cut":
            piece = piece[: draw(st.integers(0, len(piece)))]
        elif mutation == "relabel":
            piece = piece.replace(b"PRIVATE KEY", b"CERTIFICATE")
        elif mutation == "flip" and piece:
            at = draw(st.integers(0, len(piece) - 1))
            piece = piece[:at] + bytes([piece[at] ^ 0x20]) + piece[at + 1 :]
        elif mutation == "repeat":
            piece = piece * draw(st.integers(2, MAX_BUNDLE_CERTS + 2))
        parts.append(piece)
    parts.append(draw(st.binary(max_size=40)))
    return b"".join(parts)


_values = st.one_of(
    _pem_value().map(lambda raw: base64.b64encode(raw).decode()),
    st.text(max_size=40),
    st.integers(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)


@st.composite
def secret_data(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 20)) == 0:
        return draw(st.one_of(st.lists(st.text(max_size=5), max_size=3), st.text(max_size=10)))
    return {key: draw(_values) for key in KEYS if draw(st.booleans())}


@given(secret_data())
def test_any_secret_is_repaired_in_one_step_without_an_exception(data: Any) -> None:
    read = read_secret(data)
    repaired, changes = plan(read.material, POLICY, NOW, published=True)
    assert all("\n" not in line and len(line) < 300 for line in (*read.problems, *changes))
    # What is written back reads clean and needs nothing more: the next step is quiet.
    again = read_secret(to_secret(repaired))
    assert again.problems == ()
    assert plan(again.material, POLICY, NOW, published=True) == (again.material, [])
    assert repaired.leaf is not None and repaired.signing_key is not None


@given(st.lists(st.sampled_from((*_pieces()[6:9], b"x", b"\n", b"-----")), max_size=60))
def test_pem_spans_are_ordered_blocks_with_their_markers(parts: list[bytes]) -> None:
    data = b"".join(parts)
    spans = list(pki.pem_spans(data))
    ends = [0] + [end for _, end in spans]
    for (start, end), previous in zip(spans, ends, strict=False):
        assert previous <= start < end
        block = data[start:end]
        assert block.startswith(b"-----BEGIN CERTIFICATE-----")
        assert block.endswith(b"-----END CERTIFICATE-----")
        assert block.count(b"-----BEGIN CERTIFICATE-----") == 1
