"""One transport-free entry point: AdmissionReview bytes in, AdmissionReview bytes out.

The Flask routes and the ``review`` CLI only move bytes to and from :meth:`Admission.handle`,
so the server and the CLI cannot disagree. There are exactly two error channels and they
cannot be mixed up: an exception (:class:`~webhooks.core.review.ReviewError`,
:class:`UnknownPlugin`) when the *webhook request* is unusable, and ``response.status`` in
the answer when the *API operation* is refused. The core names no HTTP status: the server
alone maps the exceptions to HTTP (:mod:`webhooks.server.replies`), the CLI to exit code 2.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple

from webhooks.core.chain import Clock, Steps, is_ours, resolve, run_chain, utcnow
from webhooks.core.config import Config
from webhooks.core.derived import Derived
from webhooks.core.plugin import ClusterView, Phase, Plugin, Registry
from webhooks.core.result import Outcome
from webhooks.core.review import AdmissionRequest, parse_review, response_bytes


class Answer(NamedTuple):
    """The response body for one review, with the request and the decision it carries.

    Why the request and outcome beside the bytes: the server logs and counts the decision
    actually sent, which is not the chain's when the chain's could not be encoded.
    """

    body: bytes
    request: AdmissionRequest
    outcome: Outcome


class UnknownPlugin(LookupError):
    """A single plugin was asked for by a name the registry does not hold.

    Like :class:`~webhooks.core.review.ReviewError` it says the *webhook request* is
    unusable, and names no transport status: the server turns it into HTTP 404, the CLI
    checks the name itself before it reads anything.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown plugin {name!r}")
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0])


class Admission:
    """The configured chain, ready to answer reviews; its configuration is fixed once built.

    Steps are resolved once here rather than per request, because the enabled set only
    changes with a new configuration (which builds a new :class:`Admission`). ``kept``,
    when given, narrows the whole chain (``/mutate``, ``/validate``) to those ``(plugin,
    phase)`` halves of the enabled plugins: in a hybrid installation native admission
    policies run the others, and the webhook runs what is left as one chain, in chain
    order, with the chain's own pass rule. A named plugin (``/mutate/<plugin>``) still runs
    whole: naming it is an instruction to run it. What changes afterwards is caches, never
    answers: the chain of a single plugin is resolved on its first use and kept, and
    :attr:`derived` fills as plugins derive values from cluster objects. ``record`` makes
    every outcome list the halves it called (:attr:`Outcome.halves`), timed by ``clock``:
    the server asks for it when its logs or spans show them.
    """

    __slots__ = (
        "_chains",
        "_ours",
        "clock",
        "cluster",
        "config",
        "derived",
        "kept",
        "now",
        "record",
        "registry",
    )

    def __init__(
        self,
        registry: Registry,
        config: Config,
        cluster: ClusterView | None = None,
        now: Callable[[], dt.datetime] | None = None,
        kept: Collection[tuple[str, str]] | None = None,
        *,
        record: bool = False,
        clock: Clock | None = None,
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
        self.record = record
        self.clock = clock
        self._chains: dict[str | None, Steps] = {None: self._resolve(None)}
        #: The chain's mutating halves of our own plugins (what :meth:`again` tries first).
        self._ours = tuple(step for step in self._chains[None].mutators if is_ours(step[0]))

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
            self.record,
            self.clock,
        )

    def again(self, request: AdmissionRequest, previous: Outcome) -> Outcome:
        """The mutating chain once more over what ``previous`` stored: whether a further
        call of the mutating webhook would change the object (``check``'s convergence test).

        Only the patch and who made it are the question here. Why ours alone first when
        ``previous`` settled: its second pass ran every in-tree mutator on this very object
        and they changed nothing, so only our plugins, left out there as the API server
        leaves out an unchanged webhook, remain to be tried; when they change nothing
        either, neither does the whole chain, and when they do, the whole chain runs so the
        answer is the one it gives. That spares ``check`` a pass of every in-tree plugin per
        mutated object of a config with one of ours.
        """
        stored = request._replace(object=previous.obj)
        if previous.settled:
            trial = run_chain(stored, self._ours, (), self.now)
            if not trial.patch:
                return trial
        return self.decide(stored, ("mutate",))

    def handle(
        self,
        body: bytes,
        phases: Sequence[Phase],
        only: str | None = None,
        *,
        indent: bool = False,
    ) -> Answer:
        """Answer one AdmissionReview body with the AdmissionReview response.

        Why exceptions for an unusable request: they are the second error channel, kept
        apart from a refused operation (which is an :class:`Answer` whose outcome denies).
        Raises :class:`UnknownPlugin` for an ``only`` the registry does not hold (checked
        before the body is read) and :class:`~webhooks.core.review.ReviewError` for a body
        that is not a usable AdmissionReview; the caller's transport says how to report them.
        """
        if only is not None and only not in self.registry:
            raise UnknownPlugin(only)
        request = parse_review(body)
        data, outcome = response_bytes(
            request.uid, self.decide(request, phases, only), indent=indent
        )
        return Answer(data, request, outcome)
