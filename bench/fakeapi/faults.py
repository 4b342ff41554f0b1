"""The switches that make the fake misbehave as a failing API server or network does.

Why in one place: what can go wrong is read here, as a list, and the verbs and the transport
only consult these switches. Lists or GETs answer 500 (:attr:`Faults.fail_lists`,
:attr:`Faults.fail_gets`); every request stalls, accepted and never answered
(:attr:`Faults.stall`); bodies stall after the headers (:attr:`Faults.stall_bodies`);
watches go silent or fail with an ``ERROR`` event (:attr:`Faults.silent_watches`,
:attr:`Faults.watch_error`); and :attr:`Faults.fault` decides per request whether to answer
with an error status or to drop the connection unanswered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.fakeapi.objects import status

if TYPE_CHECKING:
    from bench.fakeapi.transport import Request


class Faults:
    """The fault switches, all off: set them from a test while the server runs."""

    def __init__(self) -> None:
        super().__init__()
        #: Plurals whose lists answer 500.
        self.fail_lists: set[str] = set()
        #: Names whose GETs answer 500.
        self.fail_gets: set[str] = set()
        #: Set: every request is accepted and recorded, never answered.
        self.stall = threading.Event()
        #: Set when the server stops: what stalled requests and bodies wait for.
        self.released = threading.Event()
        #: Watches send nothing, not even their end at the timeout, until the server stops.
        self.silent_watches = False
        #: The object of the ``ERROR`` event every watch sends at once, then ends.
        self.watch_error: dict[str, Any] | None = None
        #: Answers send their headers and a few bytes of the body, then nothing until the stop.
        self.stall_bodies = False
        #: Per request, after it is recorded: ``None`` to serve it, an HTTP status to answer
        #: with instead (a ``Status`` body; a 410 carries a fresh ``continue`` token), or
        #: ``"drop"`` to close the connection without an answer.
        self.fault: Callable[[Request], int | str | None] | None = None

    @staticmethod
    def fault_status(code: int, token: str) -> dict[str, Any]:
        """The Status a faulted request answers with; a 410 offers a fresh ``continue``."""
        if code == 410:
            body = status(410, "Expired", "The provided continue parameter is too old")
            body["metadata"] = {"continue": token}
            return body
        if code >= 500:
            return status(
                code, "InternalError", "Internal error occurred: etcdserver: leader changed"
            )
        return status(code, "Forbidden" if code == 403 else "Failure", f"refused ({code})")
