"""The API server's audit log: the one place a client-invisible admission result shows.

Why a log: audit annotations (what a webhook returns in ``auditAnnotations``, and the API
server's own ``mutation.webhook.admission.k8s.io/round_<r>_index_<i>`` records of each
mutating webhook call) never reach the client; they are written into the audit event of
the request. The policy logs Pods, Nodes, Deployments and DaemonSets at ``Request`` level
(the level at which the API server also records each webhook's patch) and nothing else,
so the file stays small; the log backend is in its default ``blocking`` mode, so an event
is on disk moments after its response.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "Request",
            "resources": [
                {"group": "", "resources": ["pods", "nodes"]},
                {"group": "apps", "resources": ["deployments", "daemonsets"]},
            ],
        },
        {"level": "None"},
    ],
}

#: The annotation key prefix of the API server's record of a mutating webhook call.
MUTATION_ROUND = "mutation.webhook.admission.k8s.io/round_"


def path(directory: Path) -> Path:
    """The audit log of the API server whose files are in ``directory``."""
    return directory / "audit.log"


def flags(directory: Path) -> list[str]:
    """The kube-apiserver flags for the policy above and a JSON log in ``directory``."""
    policy = directory / "audit-policy.yaml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text(yaml.safe_dump(POLICY, sort_keys=False))
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={path(directory)}",
        "--audit-log-format=json",
    ]


def events(log: Path) -> Iterator[dict[str, Any]]:
    """Every complete event in ``log`` (a line still being written is skipped)."""
    try:
        text = log.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    for line in text.splitlines():
        try:
            yield json.loads(line)
        except ValueError:
            continue


def find(
    log: Path,
    *,
    verb: str,
    resource: str,
    name: str,
    namespace: str = "",
    stage: str = "ResponseComplete",
) -> list[dict[str, Any]]:
    """The events of requests ``verb`` on ``resource`` named ``name``, at ``stage``.

    A create's event names the object only when the request did (``generateName`` requests
    are found by the name the client chose, which tests always set).
    """
    found = []
    for event in events(log):
        ref = event.get("objectRef") or {}
        if (
            event.get("stage") == stage
            and event.get("verb") == verb
            and ref.get("resource") == resource
            and ref.get("name") == name
            and ref.get("namespace", "") == namespace
            and not ref.get("subresource")
        ):
            found.append(event)
    return found


def mutation_rounds(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The API server's records of the mutating webhook calls of one request, in order.

    Each is ``{"round": r, "index": i, "configuration": ..., "webhook": ..., "mutated":
    bool}``: ``round`` 1 is the reinvocation.
    """
    calls = []
    for key, value in (event.get("annotations") or {}).items():
        if key.startswith(MUTATION_ROUND):
            round_, _, index = key.removeprefix(MUTATION_ROUND).partition("_index_")
            calls.append({"round": int(round_), "index": int(index), **json.loads(value)})
    return sorted(calls, key=lambda c: (c["round"], c["index"]))
