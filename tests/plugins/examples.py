"""One object per plugin that makes it act (a patch or a violation), for the contract tests.

Every registered plugin must appear here; ``test_every_plugin_has_a_contract_example`` fails
otherwise, so a new plugin cannot skip the contract.
"""

from __future__ import annotations

from typing import Any

from tests.reviews import container, pod, tol
from webhooks.core.plugin import ClusterView, NoCluster

#: plugin name → (object that makes the plugin act, the cluster it needs)
EXAMPLES: dict[str, tuple[dict[str, Any], ClusterView]] = {
    "default-toleration-seconds": (pod(), NoCluster()),
    "extended-resource-toleration": (
        pod(containers=[container(requests={"nvidia.com/gpu": "1"})]),
        NoCluster(),
    ),
    "taint-toleration-rules": (pod(tolerations=[tol("bad^key", "Exists")]), NoCluster()),
}
