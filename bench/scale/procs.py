"""CPU and memory of a process and its descendants, read from /proc.

Why whole trees: ``serve`` is a gunicorn master with workers, Kyverno one process with
threads, kube-apiserver one process; a figure per installation has to add up every process
that answers its reviews. PSS (proportional set size) shares the pages forked workers have
in common among them, so it is what an installation really holds; RSS counts shared pages
once per process and overstates a pre-forked server.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces; the fields after it are fixed.
    return text[text.rindex(")") + 2 :].split()


def descendants(roots: Iterable[int]) -> list[int]:
    """``roots`` and every live process below them."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = [pid for pid in roots if _stat(pid) is not None]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def cpu_seconds(roots: Iterable[int]) -> float:
    """User plus system CPU seconds of ``roots`` and their descendants, so far.

    A worker that exited takes its own CPU with it (a reaped child's time moves to its
    parent's ``cutime`` only once waited for), so the parent's ``cutime``/``cstime`` are
    added too.
    """
    total = 0
    for pid in descendants(roots):
        fields = _stat(pid)
        if fields is not None:
            total += sum(int(value) for value in fields[11:15])
    return total / TICKS


def memory_kib(roots: Iterable[int]) -> tuple[int, int]:
    """(RSS, PSS) in KiB of ``roots`` and their descendants, now."""
    rss = pss = 0
    for pid in descendants(roots):
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1])
            elif line.startswith("Pss:"):
                pss += int(line.split()[1])
    return rss, pss


@dataclass(slots=True)
class PeakMemory:
    """The highest RSS and PSS a set of process trees reached while the sampler ran.

    Sampled every ``interval`` seconds from a thread: a peak between two samples is missed,
    which a half-second interval makes rare for servers whose memory moves in steps.
    """

    roots: dict[str, list[int]]
    interval: float = 0.5
    peaks: dict[str, tuple[int, int]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> PeakMemory:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()

    def _sample(self) -> None:
        for name, pids in self.roots.items():
            rss, pss = memory_kib(pids)
            old_rss, old_pss = self.peaks.get(name, (0, 0))
            self.peaks[name] = (max(rss, old_rss), max(pss, old_pss))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
