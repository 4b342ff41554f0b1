"""One transport-free entry point: AdmissionReview bytes in, HTTP status and bytes out.

The Flask routes and the ``review`` CLI only move bytes to and from :meth:`Admission.handle`,
so there are exactly two error channels and they cannot be mixed up: HTTP 400 when the
*webhook request* is unusable, ``response.status`` when the *API operation* is refused.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from webhooks.core.chain import Steps, resolve, run_chain, utcnow
from webhooks.core.config import Config
from webhooks.core.derived import Derived
from webhooks.core.plugin import ClusterView, Phase, Plugin, Registry
from webhooks.core.result import Outcome
from webhooks.core.review import AdmissionRequest, ReviewError, parse_review, response_bytes


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


class Admission:
    """The configured chain, ready to answer reviews; immutable once built.

    Steps are resolved once here rather than per request, because the enabled set only
    changes with a new configuration (which builds a new :class:`Admission`). ``kept``,
    when given, narrows the whole chain (``/mutate``, ``/validate``) to those ``(plugin,
    phase)`` halves of the enabled plugins: in a hybrid installation native admission
    policies run the others, and the webhook runs what is left as one chain, in chain
    order, with the chain's own pass rule. A named plugin (``/mutate/<plugin>``) still runs
    whole: naming it is an instruction to run it.
    """

    __slots__ = ("_chains", "cluster", "config", "derived", "kept", "now", "registry")

    def __init__(
        self,
        registry: Registry,
        config: Config,
        cluster: ClusterView | None = None,
        now: Callable[[], dt.datetime] | None = None,
        kept: Collection[tuple[str, str]] | None = None,
    ):
        self.registry = registry
        self.config = config
        self.cluster = cluster
        #: What plugins derive from cluster objects and settings, shared by every chain
        #: built here; keyed by object version when the cluster says its objects carry
        #: the API server's (``versioned``), else by identity (:mod:`webhooks.core.derived`).
        self.derived = Derived(versioned=bool(getattr(cluster, "versioned", False)))
        #: The clock exceptions expire by; tests and ``check --now`` may fix it.
        self.now = now or utcnow
        self.kept = frozenset(kept) if kept is not None else None
        self._chains: dict[str | None, Steps] = {None: self._resolve(None)}

    def _resolve(self, only: str | None) -> Steps:
        chain = self.config.chain(self.registry, only)
        kept = self.kept if only is None else None
        return resolve(chain, self.config, self.cluster, self.derived, kept)

    def steps(self, only: str | None = None) -> Steps:
        """The resolved chain: the enabled plugins (the ``kept`` halves of them), or just
        ``only`` (``KeyError`` if unknown)."""
        chain = self._chains.get(only)
        if chain is None:
            chain = self._chains[only] = self._resolve(only)
        return chain

    def plugins(self, phase: Phase, only: str | None = None) -> list[Plugin]:
        """The plugins ``phase`` runs: the enabled chain, or just ``only``."""
        chain = self.steps(only)
        found = chain.mutators if phase == "mutate" else chain.validators
        return [plugin for plugin, *_ in found]

    def decide(
        self, request: AdmissionRequest, phases: Sequence[Phase], only: str | None = None
    ) -> Outcome:
        """Run ``phases`` in order over a parsed request."""
        chain = self.steps(only)
        return run_chain(
            request,
            chain.mutators if "mutate" in phases else (),
            chain.validators if "validate" in phases else (),
            self.now,
        )

    def handle(self, body: bytes, phases: Sequence[Phase], only: str | None = None) -> Reply:
        """Answer one AdmissionReview body. Never raises for bad input: that is a 400 reply."""
        if only is not None and only not in self.registry:
            return bad_request(f"unknown plugin {only!r}", 404)
        try:
            request = parse_review(body)
        except ReviewError as exc:
            return bad_request(str(exc))
        data, outcome = response_bytes(request.uid, self.decide(request, phases, only))
        return Reply(200, data, request=request, outcome=outcome)
