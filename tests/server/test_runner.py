"""The master's reload decisions, without processes: which config a SIGHUP applies or
refuses, and when the old workers are told to stop. gunicorn's own machinery (forking,
signals) is replaced by stand-ins that record what was asked of them; the real master is
in tests/e2e/test_reloads.py."""

from __future__ import annotations

import logging
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from gunicorn.arbiter import Arbiter

from webhooks.configfile import read_config
from webhooks.server import runner
from webhooks.server.reloadcheck import REASON_CHARS, Refused
from webhooks.server.runner import DrainingArbiter, ServeOptions, _pre_fork

GOOD = "plugins:\n  default-toleration-seconds:\n    notReadySeconds: {seconds}\n"


class Heartbeat:
    """A worker's heartbeat file: its stamp changes once the worker serves."""

    def __init__(self) -> None:
        self.stamp = 1_800_000_000.0

    def last_update(self) -> float:
        return self.stamp

    def beat(self) -> None:
        self.stamp = 12.5


@dataclass
class FakeWorker:
    age: int
    pid: int
    tmp: Heartbeat = field(default_factory=Heartbeat)


@dataclass
class FakeConfig:
    enable_backlog_metric: bool = False


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Master:
    """A DrainingArbiter whose workers, clock and signals are stand-ins."""

    arbiter: DrainingArbiter
    clock: Clock
    killed: list[tuple[int, int, float]]
    reaps: list[float]
    events: dict[int, Any]


def master(monkeypatch: pytest.MonkeyPatch, workers: list[FakeWorker]) -> Master:
    clock = Clock()
    monkeypatch.setattr(runner.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(runner.time, "sleep", clock.sleep)
    arbiter = DrainingArbiter.__new__(DrainingArbiter)
    arbiter.WORKERS = {}
    for worker in workers:
        _pre_fork(arbiter, worker)
        arbiter.WORKERS[worker.pid] = worker
    arbiter._num_workers = 2
    arbiter._last_logged_active_worker_count = None
    arbiter.timeout = 30
    arbiter.cfg = FakeConfig()
    arbiter.log = logging.getLogger("test-master")
    arbiter.LISTENERS = []
    made = Master(arbiter, clock, [], [], {})

    def kill_worker(pid: int, sig: int) -> None:
        made.killed.append((pid, sig, clock.now))

    def reap_workers() -> None:
        made.reaps.append(clock.now)
        event = made.events.get(len(made.reaps))
        if event is not None:
            event(arbiter)

    arbiter.kill_worker = kill_worker
    arbiter.reap_workers = reap_workers
    return made


def generations() -> list[FakeWorker]:
    """Two old workers (ages 1 and 2) and the two a reload has just started (3 and 4)."""
    return [FakeWorker(1, 101), FakeWorker(2, 102), FakeWorker(3, 103), FakeWorker(4, 104)]


def test_a_reload_stops_the_old_workers_only_once_every_new_one_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers = generations()
    m = master(monkeypatch, workers)
    m.events = {3: lambda _: workers[2].tmp.beat(), 6: lambda _: workers[3].tmp.beat()}
    m.arbiter.reloading = True
    m.arbiter.manage_workers()
    assert [pid for pid, _, _ in m.killed] == [101, 102]
    assert all(sig == signal.SIGTERM for _, sig, _ in m.killed)
    assert len(m.reaps) == 6, "not before the last new worker's first heartbeat"
    assert all(at >= m.reaps[-1] for _, _, at in m.killed)


def test_new_workers_that_never_serve_keep_the_old_ones_no_longer_than_the_worker_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = master(monkeypatch, generations())
    start = m.clock.now
    m.arbiter.reloading = True
    m.arbiter.manage_workers()
    assert [pid for pid, _, _ in m.killed] == [101, 102]
    assert start + 30 <= m.killed[0][2] <= start + 30.1


def test_a_new_worker_that_died_while_booting_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers = generations()
    m = master(monkeypatch, workers)
    workers[3].tmp.beat()
    m.events = {2: lambda arbiter: arbiter.WORKERS.pop(103)}
    m.arbiter.reloading = True
    m.arbiter.manage_workers()
    assert len(m.reaps) == 2
    assert [pid for pid, _, _ in m.killed] == [101]


def test_outside_a_reload_the_oldest_extra_worker_stops_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = master(monkeypatch, generations())
    m.arbiter.manage_workers()
    assert [pid for pid, _, _ in m.killed] == [101, 102]
    assert m.reaps == []


# ------------------------------------------------------------------ SIGHUP


@dataclass
class FakeApp:
    options: ServeOptions


class Counted:
    def __init__(self) -> None:
        self.outcomes: list[str] = []

    def count(self, outcome: str) -> None:
        self.outcomes.append(outcome)


def hup_master(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[DrainingArbiter, list[bool], Counted]:
    path = tmp_path / "config.yaml"
    path.write_text(GOOD.format(seconds=42), encoding="utf-8")
    arbiter = DrainingArbiter.__new__(DrainingArbiter)
    arbiter.app = FakeApp(
        ServeOptions(cert_dir=tmp_path, config_path=str(path), config=read_config(path))
    )
    arbiter.log = logging.getLogger("test-master")
    arbiter.reloads = counted = Counted()
    reloaded: list[bool] = []
    monkeypatch.setattr(Arbiter, "handle_hup", lambda self: reloaded.append(self.reloading))
    return arbiter, reloaded, counted


def _machinery_fails(check: Any, **_: Any) -> Any:
    raise OSError(11, "Resource temporarily unavailable")


def _answer_garbled(check: Any, **_: Any) -> Any:
    raise EOFError("Ran out of input")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda p: p.write_bytes(b"plugins: {}\n# \xff\n"), "not UTF-8 text"),
        (lambda p: (p.unlink(), p.mkdir()), "a directory, not a regular file"),
        (lambda p: p.write_text(GOOD.format(seconds="soon")), "must be an integer"),
        (_machinery_fails, "BlockingIOError: [Errno 11] Resource temporarily unavailable"),
        (_answer_garbled, "EOFError: Ran out of input"),
    ],
    ids=[
        "a file that is not UTF-8",
        "a directory instead of a file",
        "a value a plugin rejects",
        "the check cannot even start (fork fails)",
        "the check's answer cannot be read",
    ],
)
def test_a_sighup_that_cannot_get_a_usable_config_refuses_the_reload_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    change: Any,
    reason: str,
) -> None:
    arbiter, reloaded, counted = hup_master(monkeypatch, tmp_path)
    before = arbiter.app.options
    path = Path(before.config_path or "")
    if change in (_machinery_fails, _answer_garbled):
        monkeypatch.setattr(runner, "run_checked", change)
    else:
        change(path)
    with caplog.at_level(logging.ERROR, logger="test-master"):
        arbiter.handle_hup()
    assert reloaded == [], "no new workers"
    assert arbiter.app.options is before, "the last good config stays"
    assert counted.outcomes == ["refused"]
    [line] = caplog.messages
    assert line.startswith(f"SIGHUP: config reload refused, keeping the running workers: {path}")
    assert reason in line


def test_a_long_reason_is_cut_once_and_says_how_long_it_was(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    arbiter, _, _ = hup_master(monkeypatch, tmp_path)
    path = Path(arbiter.app.options.config_path or "")
    # Config errors quote bounded excerpts, so a reason this long takes a check of its own
    # (the child is forked: the replaced function is what it runs).
    long_reason = Refused(f"{path}: cluster.source: {'x' * 2000}")

    def refuse(_: str) -> Any:
        raise long_reason

    monkeypatch.setattr(runner, "config_for_reload", refuse)
    whole = long_reason
    with caplog.at_level(logging.ERROR, logger="test-master"):
        arbiter.handle_hup()
    [line] = caplog.messages
    assert line.endswith(f"… ({len(str(whole))} characters)")
    assert len(line) < 100 + len(str(path)) + REASON_CHARS


def test_a_sighup_with_a_usable_config_applies_it_and_starts_new_workers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    arbiter, reloaded, counted = hup_master(monkeypatch, tmp_path)
    path = Path(arbiter.app.options.config_path or "")
    path.write_text(GOOD.format(seconds=60), encoding="utf-8")
    arbiter.handle_hup()
    assert reloaded == [True], "gunicorn's reload ran, as a reload"
    assert arbiter.reloading is False
    assert arbiter.app.options.config == read_config(path)
    assert counted.outcomes == ["applied"]


def test_refused_is_what_a_check_raises_for_a_config_the_server_cannot_use(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(GOOD.format(seconds="soon"), encoding="utf-8")
    with pytest.raises(Refused, match="notReadySeconds: must be an integer"):
        runner.config_for_reload(str(path))
