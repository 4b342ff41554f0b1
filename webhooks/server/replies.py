"""HTTP replies: where the core's answers and its unusable-request errors get their statuses.

The core names no HTTP status (:mod:`webhooks.core.admission`): a refused operation is an
AdmissionReview answer, an unusable webhook request an exception. This module alone turns
both into HTTP, so the two error channels cannot be mixed up: 200 with ``response.status``
for the first, a plain-text 4xx for the second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webhooks.core.admission import Admission, UnknownPlugin
from webhooks.core.plugin import Phase
from webhooks.core.result import Outcome
from webhooks.core.review import AdmissionRequest, ReviewError


@dataclass(slots=True)
class Reply:
    """What to send back: HTTP status, body, content type; plus the decision for logs.

    Not frozen for the same reason as :class:`~webhooks.core.result.Outcome`: one per review.
    """

    status: int
    body: bytes
    content_type: str = "application/json"
    request: AdmissionRequest | None = None
    outcome: Outcome | None = None


def bad_request(reason: str, status: int = 400) -> Reply:
    """A plain-text one-line error reply; why plain: the API server logs it verbatim."""
    line = reason.replace("\n", " ").strip()
    return Reply(status, (line + "\n").encode(), "text/plain; charset=utf-8")


def review_reply(
    admission: Admission, body: bytes, phases: Sequence[Phase], only: str | None = None
) -> Reply:
    """The HTTP reply to one AdmissionReview body. Never raises for bad input.

    Why here and not in the core: an unknown plugin in the path is HTTP 404 and an unusable
    review HTTP 400 only for a server; the core says what is wrong, the server how to say it.
    """
    try:
        answer = admission.handle(body, phases, only)
    except UnknownPlugin as exc:
        return bad_request(str(exc), 404)
    except ReviewError as exc:
        return bad_request(str(exc))
    return Reply(200, answer.body, request=answer.request, outcome=answer.outcome)
