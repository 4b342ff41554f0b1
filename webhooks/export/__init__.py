"""The policy as native admission policy: MutatingAdmissionPolicy and ValidatingAdmissionPolicy.

Why: since Kubernetes 1.36 a mutating policy can run inside the API server (GA, beside the
validating one), with no network hop, no certificates and nothing to take down. Much of the
placement policy is expressible there; some is not (PodTolerationRestriction's JSON
annotations, an exception's expiry, a RuntimeClass that does not exist). :func:`export`
translates what it can, one translator per plugin (:mod:`.translators`), and says for each
plugin and setting whether the result is ``exact``, ``exact except: <what differs>`` or
``not exported: <why>``. The control-plane suite (``tests/controlplane/test_native_*``)
holds every ``exact`` to the webhooks' answers on the real API server.

Transport-free like the core: the objects are plain dicts, and writing them is the CLI's job.
"""

from __future__ import annotations

from webhooks.export.assemble import export, native_halves, webhook_halves
from webhooks.export.model import EXACT, EXCEPT, NOT_EXPORTED, Export, Line, Verdict

__all__ = [
    "EXACT",
    "EXCEPT",
    "NOT_EXPORTED",
    "Export",
    "Line",
    "Verdict",
    "export",
    "native_halves",
    "webhook_halves",
]
