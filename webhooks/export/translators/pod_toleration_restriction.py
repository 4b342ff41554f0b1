"""pod-toleration-restriction: not exported, because its namespace annotations are JSON.

Why: the plugin's defaults and whitelist come from the Namespace annotations
``scheduler.alpha.kubernetes.io/defaultTolerations`` and ``.../tolerationsWhitelist``, each
a JSON list decoded as Go's ``encoding/json`` decodes ``[]v1.Toleration`` (escapes,
case-insensitive field names, the last duplicate winning, unknown fields skipped). The
Kubernetes CEL environment has no JSON decoder (``tests/controlplane/test_native_policies.py``
asks the API server), and pattern matching cannot reproduce that decoder. A policy that
ignored the annotations would apply the cluster's whitelist where a namespace's applies, so
nothing is exported and the webhook keeps the plugin. The cluster-level settings alone
would be expressible (the merge and the whitelist test are in :mod:`webhooks.export.cel`),
but they are the fallback for namespaces *without* the annotations, which a policy cannot
tell apart from the rest without reading them.
"""

from __future__ import annotations

from webhooks.export.model import NOT_EXPORTED, Line, Translation
from webhooks.k8s.namespaces import DEFAULT_TOLERATIONS_ANNOTATION, TOLERATIONS_WHITELIST_ANNOTATION
from webhooks.plugins.pod_toleration_restriction import NAME, Settings

WHY = (
    f"its namespace annotations {DEFAULT_TOLERATIONS_ANNOTATION} and "
    f"{TOLERATIONS_WHITELIST_ANNOTATION} are JSON, and Kubernetes CEL has no JSON decoder; a "
    "policy that ignored them would apply the cluster's whitelist where a namespace's applies"
)


def translate(settings: Settings) -> Translation:
    """Nothing: both halves stay with the webhook."""
    return Translation(
        NAME,
        mutate=NOT_EXPORTED,
        validate=NOT_EXPORTED,
        lines=(Line(f"plugins.{NAME}", NOT_EXPORTED, WHY),),
    )
