"""A hybrid installation (``serve --native``): its webhooks register only the halves native
admission policies do not do, and ``configurations`` compares against exactly those."""

from __future__ import annotations

from tests.install.doctor.building import charted
from webhooks.cli.doctor import _with_native_halves
from webhooks.install.doctor import configurations
from webhooks.install.doctor.findings import Status


def test_a_native_release_matches_the_render_of_the_halves_its_server_keeps() -> None:
    installation = _with_native_halves(charted({"native": {"enabled": True}}))
    assert installation.served_halves is not None
    [finding] = configurations.check(installation)
    assert finding.status is Status.OK, finding.line()
    assert "matches the render" in finding.reason


def test_without_the_kept_halves_every_half_would_be_expected() -> None:
    """What the CLI adds is what makes the difference: the plain render expects more."""
    findings = configurations.check(charted({"native": {"enabled": True}}))
    assert Status.FAIL in {f.status for f in findings}


def test_a_release_without_native_is_left_as_it_is() -> None:
    installation = charted(None)
    assert _with_native_halves(installation) is installation
