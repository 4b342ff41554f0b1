"""The real-control-plane harness: test infrastructure, not part of the ``webhooks`` package.

It runs etcd, kube-apiserver (one or more, on one etcd), kube-scheduler and
kube-controller-manager of the pinned release (:mod:`controlplane.release`) from the
build cache, plus ``placement-webhooks serve`` when a mode asks for it. ``make cluster`` and
the ``make e2e`` suite go through the same code, so a person reproduces by hand exactly
what a test ran.

Start with :func:`running` and :class:`ControlPlaneOptions`; :mod:`.admission` turns a mode
and our config file into API server options; :mod:`.nodes` writes Nodes and keeps their
Leases fresh.
"""

from __future__ import annotations

from controlplane.harness import auditlog, webhookserver
from controlplane.harness.admission import AdmissionSetup, Untranslatable, setup_for
from controlplane.harness.binaries import Binaries, NotBuilt, locate
from controlplane.harness.components import (
    ApiServer,
    ApiServerOptions,
    ControllerManagerOptions,
)
from controlplane.harness.controlplane import ControlPlane, ControlPlaneOptions, running
from controlplane.harness.modes import apiserver_options
from controlplane.harness.nodes import LeaseRenewer, heartbeating, node_manifest, write_node
from controlplane.harness.objects import (
    create_namespace,
    create_pods,
    daemonset_manifest,
    delete_pods,
    pod_manifest,
)
from controlplane.harness.process import ComponentError

__all__ = [
    "AdmissionSetup",
    "ApiServer",
    "ApiServerOptions",
    "Binaries",
    "ComponentError",
    "ControlPlane",
    "ControlPlaneOptions",
    "ControllerManagerOptions",
    "LeaseRenewer",
    "NotBuilt",
    "Untranslatable",
    "apiserver_options",
    "auditlog",
    "create_namespace",
    "create_pods",
    "daemonset_manifest",
    "delete_pods",
    "heartbeating",
    "locate",
    "node_manifest",
    "pod_manifest",
    "running",
    "setup_for",
    "webhookserver",
    "write_node",
]
