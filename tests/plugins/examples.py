"""One object per plugin that makes it act (a patch or a violation), for the contract tests.

Every registered plugin must appear here; ``test_every_plugin_has_a_contract_example`` fails
otherwise, so a new plugin cannot skip the contract.
"""

from __future__ import annotations

from typing import Any

from tests.reviews import container, pod
from webhooks.cluster import StaticCluster
from webhooks.core.plugin import ClusterView, NoCluster

#: A RuntimeClass with scheduling but no overhead: its pods get a nodeSelector (the
#: mutating half acts), and a pod that sets an overhead itself is refused (so does the
#: validating half).
SANDBOX = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "sandbox"},
    "handler": "runsc",
    "scheduling": {"nodeSelector": {"sandbox.example.com/runtime": "gvisor"}},
}

#: plugin name → (object that makes the plugin act, the cluster it needs)
EXAMPLES: dict[str, tuple[dict[str, Any], ClusterView]] = {
    "default-toleration-seconds": (pod(), NoCluster()),
    "extended-resource-toleration": (
        pod(containers=[container(requests={"nvidia.com/gpu": "1"})]),
        NoCluster(),
    ),
    "runtime-class": (
        pod(runtimeClassName="sandbox", overhead={"cpu": "250m"}),
        StaticCluster([SANDBOX]),
    ),
}
