"""Child processes of the harness: started in their own process group, logged, always stopped.

Why process groups: etcd and the Kubernetes components are single processes, but ``serve``
runs gunicorn, whose workers must go with their master; signalling the group stops all of
them. Why ``PR_SET_PDEATHSIG``: when the Python process that started them is killed outright
(SIGKILL, an OOM kill), no ``finally`` runs, and without it the components would keep their
ports and temp dirs forever. Why log files: a component that dies or never becomes ready is
explained by the end of its log, which :class:`ComponentError` carries.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

TAIL_LINES = 25

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: the child may only call into it


class ComponentError(RuntimeError):
    """A component exited, or did not become ready in time; the message ends with its log."""


#: Where the kernel takes the source ports of outgoing connections (Linux's default range,
#: used when /proc does not say).
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)
#: The lowest port handed out: above the well-known and most registered services' ports.
LOWEST_PORT = 10000


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range of source ports for outgoing connections."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def port_candidates(ephemeral: tuple[int, int], draw: Callable[[int, int], int]) -> Iterator[int]:
    """Ports to try, drawn by ``draw(low, high)`` from below the ephemeral range, else from
    above it; none when neither leaves a thousand ports."""
    low, high = ephemeral
    for start, end in ((LOWEST_PORT, low - 1), (max(high + 1, LOWEST_PORT), 65535)):
        if end - start >= 1000:
            while True:
                yield draw(start, end)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, outside the ephemeral range.

    Why outside it: between this check and the component binding the port, any client
    socket of the run (the tests make thousands) may be given the same port as its source
    port by the kernel, and the component then fails with "address already in use". Below
    the ephemeral range only an explicit bind can take the port; drawing at random keeps
    parallel runs apart, and binding first proves nothing listens there now.
    """
    for port in itertools.islice(port_candidates(ephemeral_range(), random.randint), 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # no room outside the range, or all taken: the kernel picks
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ("" when it does not exist yet)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Component:
    """One started program: its log, its process group, and how to stop it.

    ``stop_signal`` is what a clean shutdown sends first; ``SIGKILL`` follows after
    ``grace`` seconds, so a hung component cannot hold up a test run's teardown.
    """

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        log: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        grace: float = 10.0,
    ) -> None:
        self.name = name
        self.args = list(args)
        self.log = log
        self.grace = grace
        log.parent.mkdir(parents=True, exist_ok=True)
        child_env = dict(os.environ if env is None else env)
        # The components talk to each other (and to the webhook) on 127.0.0.1; a proxy from
        # the environment must never be asked to reach those addresses.
        child_env["NO_PROXY"] = child_env["no_proxy"] = "127.0.0.1,localhost"
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=child_env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, no locks taken
            )

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc.poll() is None

    def failure(self, what: str) -> ComponentError:
        """An error naming this component and ``what`` went wrong, with its log's tail."""
        status = self.proc.poll()
        exited = f" (exited with status {status})" if status is not None else ""
        return ComponentError(
            f"{self.name} {what}{exited}; last lines of {self.log}:\n{tail(self.log)}"
        )

    def check(self) -> None:
        """Raise when the process has exited: a component must never vanish silently."""
        if not self.alive():
            raise self.failure("exited")

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        """Signal the whole process group, wait up to ``grace`` s, then kill it; idempotent."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(self.grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # gunicorn workers may outlive their master by a moment; the group goes with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode


def wait_until(
    ready: Callable[[], bool],
    *,
    timeout: float,
    components: Sequence[Component] = (),
    what: str = "ready",
    interval: float = 0.1,
) -> None:
    """Poll ``ready`` until it is true; fail fast when a watched component exits.

    ``components`` are checked on every round, so a server that crashed on a bad flag is
    reported at once with its log, not after the whole timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        for component in components:
            component.check()
        if ready():
            return
        if time.monotonic() > deadline:
            if components:
                raise components[-1].failure(f"did not become {what} within {timeout:g} s")
            raise ComponentError(f"not {what} within {timeout:g} s")
        time.sleep(interval)
