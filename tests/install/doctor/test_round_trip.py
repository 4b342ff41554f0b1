"""``round-trip``: a probe's outcome judged (the dialling itself: test_dialing.py)."""

from __future__ import annotations

import pytest

from webhooks.install.doctor import round_trip
from webhooks.install.doctor.findings import Status
from webhooks.install.probe import Outcome, Target

TARGET = Target("https://pw.ns.svc:443/validate", b"PEM", ("validate.pw.svc",))


@pytest.mark.parametrize(
    ("outcome", "status", "words"),
    [
        pytest.param(Outcome(TARGET, "", 0.012, True), Status.OK, "allowed in 12 ms",
                     id="an allowed answer is ok"),
        pytest.param(Outcome(TARGET, "no answer: [Errno 111] Connection refused", 0.0),
                     Status.WARN, "not reachable from here", id="a refused connection warns"),
        pytest.param(Outcome(TARGET, "no complete answer within the 5 s timeout (...)", 5.0),
                     Status.WARN, "not reachable from here", id="a timeout warns"),
        pytest.param(Outcome(TARGET, "no answer: [SSL: TLSV1_ALERT_INTERNAL_ERROR] alert", 0.0),
                     Status.FAIL, "SSL", id="a TLS alert is the server's fault"),
        pytest.param(Outcome(TARGET, "HTTP 500: boom", 0.1), Status.FAIL, "HTTP 500",
                     id="an HTTP error fails"),
        pytest.param(Outcome(TARGET, "the answer's uid is not the request's", 0.1), Status.FAIL,
                     "uid", id="an answer the API server would refuse fails"),
    ],
)  # fmt: skip
def test_judging_an_outcome(outcome: Outcome, status: Status, words: str) -> None:
    finding = round_trip.judge(outcome, "pw")
    assert finding.check == "round-trip"
    assert finding.status is status, finding.line()
    assert words in finding.reason
    assert "validate.pw.svc" in finding.reason
    if status is Status.FAIL:
        assert "placement-webhooks probe --name pw" in finding.fix
