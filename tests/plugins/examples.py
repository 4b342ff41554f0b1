"""One object per plugin that makes it act (a patch or a violation), for the contract tests.

Every registered plugin must appear here; ``test_every_plugin_has_a_contract_example`` fails
otherwise, so a new plugin cannot skip the contract.
"""

from __future__ import annotations

from typing import Any

from tests.reviews import container, pod, tol
from webhooks.cluster import StaticCluster
from webhooks.core.plugin import ClusterView, NoCluster

#: A Namespace dedicated to group gpu-team by the default label.
ML_NAMESPACE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "ml", "labels": {"placement-webhooks.io/dedicated": "gpu-team"}},
}

#: plugin name → (object that makes the plugin act, the cluster it needs)
EXAMPLES: dict[str, tuple[dict[str, Any], ClusterView]] = {
    "dedicated-nodes": (
        # Mutation pins it to gpu-team; validation denies its toleration of another group.
        pod(namespace="ml", tolerations=[tol("dedicated", "Equal", "web-team", "NoSchedule")]),
        StaticCluster([ML_NAMESPACE]),
    ),
    "default-toleration-seconds": (pod(), NoCluster()),
    "extended-resource-toleration": (
        # Mutation tolerates the GPU it requests; enforcement denies the FPGA it does not.
        pod(
            containers=[container(requests={"nvidia.com/gpu": "1"})],
            tolerations=[tol("example.com/fpga", "Exists", effect="NoSchedule")],
        ),
        NoCluster(),
    ),
}

#: Settings a plugin needs for its example to make every half act (others use defaults).
SETTINGS: dict[str, dict[str, Any]] = {
    "extended-resource-toleration": {"enforce": True},
}
