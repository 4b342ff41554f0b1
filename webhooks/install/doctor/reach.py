"""Whether a webhook's address could be reached from where ``doctor`` runs, and what then.

Why a module: the ``ca-bundle`` and ``round-trip`` checks dial the webhooks where the API
server does (``<service>.<namespace>.svc``). From a laptop those names do not resolve and
ClusterIPs do not route; that is a fact about where doctor runs, not a fault of the
installation, so both say it as a warning with the same way out.
"""

from __future__ import annotations

from typing import Final

#: What to do when the webhooks cannot be dialled from here.
FIX_UNREACHABLE: Final = (
    "run doctor where the Service name resolves (a pod in the cluster), or `helm test "
    "RELEASE` (its probe dials from inside), or `kubectl port-forward` the Service and "
    "`placement-webhooks probe --url https://localhost:PORT/validate --ca-file CA`"
)

#: How a transport failure starts, in the probe's words (webhooks.install.probe).
_TRANSPORT: Final = ("no answer:", "no complete answer within", "no TLS handshake")


def unreachable(problem: str) -> bool:
    """Whether ``problem`` (a probe's) is a failure to reach the address at all.

    A TLS alert or an HTTP answer means the server was reached: those are the
    installation's faults, not the network's.
    """
    return problem.startswith(_TRANSPORT) and "[SSL" not in problem
