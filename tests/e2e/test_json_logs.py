"""``serve --log-format json`` under real gunicorn: every line written is one JSON object.

Start-up, worker boots, reviews, a refused and an applied SIGHUP reload, a worker's exit
and the master's shutdown are each written by another logger (gunicorn's in the master,
in each worker, the review log); none of them may leave a line a collector cannot parse.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.serving import serving, stop
from tests.reviews import pod, review

pytestmark = pytest.mark.e2e

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _wait_for(log: Path, text: str, count: int = 1, deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while log.read_text(errors="replace").count(text) < count:
        assert time.monotonic() < end, f"no {text!r} in:\n{log.read_text(errors='replace')}"
        time.sleep(0.1)


def test_every_line_of_a_served_life_is_a_json_object(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("plugins: {}\n")
    with serving(tmp_path, "--config", str(config), "--log-format", "json") as server:
        hostile = review(pod(), uid="u-1")
        hostile["request"]["name"] = 'x\n"}{' + "y" * 100_000
        assert server.request("POST", "/mutate", hostile)[0] == 200
        assert server.request("POST", "/mutate/no-such-plugin", review(pod()))[0] == 404
        config.write_text("plugins: {nope: 1}\n")
        os.kill(server.process.pid, signal.SIGHUP)
        _wait_for(server.log, "config reload refused")
        config.write_text("plugins: {}\n")
        os.kill(server.process.pid, signal.SIGHUP)
        _wait_for(server.log, "new workers serving")
        assert server.request("POST", "/validate", review(pod(), uid="u-2"))[0] == 200
        stop(server.process)
    lines: list[dict[str, Any]] = [json.loads(raw) for raw in server.output().split("\n") if raw]
    assert all(
        RFC3339.match(line["time"]) and line["level"] and "message" in line for line in lines
    )
    reviews = {line.get("uid"): line for line in lines if line["message"] == "review"}
    assert reviews["u-1"]["name"].endswith("...[100005 characters]")
    assert reviews["u-2"]["decision"] == "allowed"
    messages = [line["message"] for line in lines]
    assert any(m.startswith("Booting worker") for m in messages)
    assert any(m.startswith("SIGHUP: config reload refused") for m in messages)
    assert any(m == "Shutting down: Master" for m in messages)
