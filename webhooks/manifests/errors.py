"""The error types of manifest input; values inside their messages are shown by ``show``.

Why here and not in each reader: ``check`` PATHS, ``--objects`` and ``--nodes`` must fail the
same way, with one line a CI log viewer can jump to, whatever went wrong underneath. The
decoders raise :class:`Refused` (a line and a reason, knowing no file); the reader turns it
into a :class:`ManifestError` that names the file. ``show`` lives in
:mod:`webhooks.k8s.excerpt`, shared with the config loader, and is re-exported here.
"""

from __future__ import annotations

from webhooks.k8s.excerpt import SHOWN, show

__all__ = ["SHOWN", "ManifestError", "Refused", "show"]


class Refused(Exception):
    """Input kubectl would refuse, with the 1-based line to blame (0 when none)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(line, reason)
        self.line = line
        self.reason = reason


class ManifestError(Exception):
    """Input that cannot be used, rendered ``path:line: reason`` (``path: reason`` with no line).

    It is both raised (``--objects``) and collected (``check`` keeps reading the other files
    and reports every one), which is why it compares by value: a report is data.
    """

    __slots__ = ("line", "path", "reason")

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(path, line, reason)
        self.path = path
        self.line = line
        self.reason = reason

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.reason}"

    def __repr__(self) -> str:
        return f"ManifestError({self.path!r}, {self.line}, {self.reason!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ManifestError):
            return NotImplemented
        return (self.path, self.line, self.reason) == (other.path, other.line, other.reason)

    def __hash__(self) -> int:
        return hash((self.path, self.line, self.reason))
