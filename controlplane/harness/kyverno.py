"""Kyverno, the policy engine the scale bed compares with, run out of cluster beside an API server.

Why out of cluster: the bed has no kubelet that could run its image, and the comparison is
about admission, so one Kyverno process on loopback (as ``serve`` runs) is the fair peer. It
is the release pinned in :data:`controlplane.release.KYVERNO`, built into the control-plane
cache; its CRDs are read at run time from the Go module cache (the module the binary was
built from), never copied into this repository.

What it needs, from its own source (``cmd/kyverno``, ``cmd/internal/check.go``,
``pkg/config/config.go`` and the chart's admission-controller Deployment): its CRDs, its
namespace, the ConfigMaps that ``INIT_CONFIG`` and ``METRICS_CONFIG`` name, and the six
environment variables the start-up check refuses to run without (plus ``KYVERNO_SVC``,
whose name goes into its certificate). ``--serverIP`` is the address the API server calls
it at: with it Kyverno writes ``url`` webhooks instead of Service references, and puts the
address in its serving certificate, which it makes itself (two Secrets in its namespace).

The flags, each for a reason (:func:`kyverno_args`):

* ``--admissionReports=false``: no EphemeralReport per admitted request (a write to etcd
  and a reports controller's work per pod, which ``serve`` does not do);
* ``--omitEvents=...`` all four: no Event per policy result (``serve`` writes none);
* ``--disableMetrics=true`` (no metrics pipeline: the bench reads the API server's metrics
  and ``/proc``, not Kyverno's) with ``--metricsHost=127.0.0.1`` and a free
  ``--metricsPort``: its metrics HTTP server starts even so, and would otherwise bind
  ``:8000`` on every address, clashing with a second Kyverno;
  ``--controllerRuntimeMetricsAddress=0`` turns off the other one (``:8080``);
* ``--webhookServerHost=127.0.0.1`` with a free port: loopback only, like ``serve``;
* ``--webhookTimeout=5``: the ``timeoutSeconds`` ``webhook-config`` gives ``serve``'s
  webhooks (Kyverno's default is 10) for Kyverno's own webhooks; those of the policies
  take theirs from each policy (``spec.webhookConfiguration``);
* ``--autoMemLimitEnabled=false``: it would set ``GOMEMLIMIT`` from the machine's memory,
  which changes how its RSS behaves under load from run to run on a shared machine.

There are no flags for the controllers that are not about admission: this binary is only the
admission controller (the background, reports and cleanup controllers are separate
programs and are not started), its policies here turn off background evaluation, and
``autogen`` is off so pod controllers' templates are not mutated. Its leader election runs
(one replica wins at once): the webhook controller that registers its webhooks only runs
in the leader.

Stopped, Kyverno leaves its webhook configurations behind, fail-closed; :func:`stop_kyverno`
deletes every one it made, or the API server would refuse every pod create afterwards.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.harness.components import ApiServer
from controlplane.harness.metrics import apiserver_metrics, metric_sum
from controlplane.harness.process import Component, ComponentError, free_port, wait_until
from controlplane.harness.rest import Rest
from controlplane.release import KYVERNO, tools_dir

NAMESPACE = "kyverno"
#: The admission controller's names, as the chart's Deployment gives them.
NAME = "kyverno-admission-controller"
SERVICE = "kyverno-svc"
CONFIG_MAP = "kyverno"
METRICS_CONFIG_MAP = "kyverno-metrics"
CA_SECRET = f"{SERVICE}.{NAMESPACE}.svc.kyverno-tls-ca"
TLS_SECRET = f"{SERVICE}.{NAMESPACE}.svc.kyverno-tls-pair"

#: The environment the start-up check requires (and the service name for the certificate).
ENVIRONMENT = {
    "KYVERNO_NAMESPACE": NAMESPACE,
    "KYVERNO_SERVICEACCOUNT_NAME": NAME,
    "KYVERNO_DEPLOYMENT": NAME,
    "KYVERNO_POD_NAME": f"{NAME}-0",
    "INIT_CONFIG": CONFIG_MAP,
    "METRICS_CONFIG": METRICS_CONFIG_MAP,
    "KYVERNO_SVC": SERVICE,
}

#: The CRD directories of the module (``config/crds/<dir>``) the admission controller reads:
#: its informers list every policy kind, UpdateRequests and GlobalContextEntries, and the
#: reports breaker watches EphemeralReports.
CRD_DIRECTORIES = ("kyverno", "policies.kyverno.io", "reports", "policyreport")

#: Namespaces no placement-webhooks registration reaches (``webhook-config``'s exclusions),
#: given to Kyverno's webhooks too, so both engines see the same requests.
EXCLUDED_NAMESPACES = ("kube-system", "kube-node-lease", NAMESPACE, "placement-webhooks")

#: The webhook configuration a policy webhook of Kyverno's lives in, and its policy-validating
#: one: the first is called for pods once a policy matches them; the second for every policy
#: created, which is how start-up knows the API server reaches Kyverno at all.
POLICY_VALIDATING = "kyverno-policy-validating-webhook-cfg"
RESOURCE_MUTATING = "kyverno-resource-mutating-webhook-cfg"
RESOURCE_VALIDATING = "kyverno-resource-validating-webhook-cfg"
#: The webhook of :data:`POLICY_VALIDATING`, as the API server's metrics name it.
POLICY_WEBHOOK = "validate-policy.kyverno.svc"

POLICIES_API = "/apis/policies.kyverno.io/v1"
_PLURALS = {"MutatingPolicy": "mutatingpolicies", "ValidatingPolicy": "validatingpolicies"}
_WEBHOOK_KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
_ADMISSION_API = "/apis/admissionregistration.k8s.io/v1"

START_TIMEOUT = 120.0
SENTINEL_LABEL = "placement-webhooks.io/kyverno-sentinel"
SENTINEL_ANNOTATION = "placement-webhooks.io/kyverno-sentinel"


class NotBuilt(RuntimeError):
    """The Kyverno binary is not in the control-plane cache."""


@dataclass(slots=True)
class KyvernoServer:
    """A running Kyverno: its process, where the API server calls it, what it registered.

    ``pid`` is the process to read ``/proc/<pid>/status`` and ``smaps_rollup`` of (Kyverno is
    one process); ``webhook_configurations`` are (resource, name) of every Mutating- and
    ValidatingWebhookConfiguration it had written when it became ready; ``installed_in`` the
    seconds its CRDs, namespace and ConfigMaps took, ``started_in`` those from exec to ready
    (webhooks registered and called).
    """

    component: Component
    address: str
    directory: Path
    installed_in: float = 0.0
    started_in: float = 0.0
    #: ``time.monotonic()`` at exec (what ``started_in`` counts from).
    began: float = 0.0
    webhook_configurations: list[tuple[str, str]] = field(default_factory=list)

    @property
    def pid(self) -> int:
        """The process id (Kyverno forks nothing)."""
        return self.component.proc.pid


def memory_kib(pid: int) -> tuple[int, int]:
    """RSS and PSS of process ``pid`` in KiB, from ``/proc/<pid>/smaps_rollup``.

    Why both: RSS counts the shared pages of the binary's text in full; PSS shares them out,
    which is what a second process of the same binary really adds.
    """
    found = {"Rss:": 0, "Pss:": 0}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
        for line in rollup:
            parts = line.split()
            if parts and parts[0] in found:
                found[parts[0]] = int(parts[1])
    return found["Rss:"], found["Pss:"]


def binary() -> Path:
    """The built ``kyverno``; :class:`NotBuilt` says how to make it."""
    path = tools_dir() / KYVERNO.name
    if not path.is_file():
        raise NotBuilt(
            f"no {path}: run `.venv/bin/python -m controlplane.build --scale-tools` "
            "(builds kwok and Kyverno from the Go module proxy)"
        )
    return path


def module_dir() -> Path:
    """Where the Go module cache holds the pinned Kyverno module (downloaded if missing)."""
    go = shutil.which("go")
    if go is None:
        raise NotBuilt("Go is not installed: Kyverno's CRDs are read from its Go module")
    proc = subprocess.run(
        [go, "mod", "download", "-json", f"{KYVERNO.module}@{KYVERNO.version}"],
        capture_output=True,
        text=True,
        check=False,
    )
    info: dict[str, Any] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if proc.returncode != 0 or "Dir" not in info:
        raise NotBuilt(f"cannot download {KYVERNO.module}@{KYVERNO.version}: {info or proc.stderr}")
    return Path(info["Dir"])


@functools.cache
def crds() -> tuple[dict[str, Any], ...]:
    """Every CustomResourceDefinition of :data:`CRD_DIRECTORIES`, read from the module once.

    Why libyaml's loader: the 22 CRDs are 5.6 MB of YAML, 13 s for the pure-Python one.
    """
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    root = module_dir() / "config" / "crds"
    found: list[dict[str, Any]] = []
    for directory in CRD_DIRECTORIES:
        for path in sorted((root / directory).glob("*.yaml")):
            found += [doc for doc in yaml.load_all(path.read_text(), Loader=loader) if doc]
    return tuple(found)


def config_maps() -> list[dict[str, Any]]:
    """Kyverno's two ConfigMaps: its webhooks skip :data:`EXCLUDED_NAMESPACES` and kubelets.

    ``excludeGroups: system:nodes`` is what ``serve``'s registration does with its
    ``not-from-a-kubelet`` condition; the metrics ConfigMap is required but may be empty.
    """
    selector = {
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": list(EXCLUDED_NAMESPACES),
                }
            ]
        }
    }
    data = {
        "webhooks": json.dumps([selector]),
        "excludeGroups": "system:nodes",
        "resourceFilters": "[Event,*,*][*/*,kube-system,*][*/*,kyverno,*]",
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "data": content,
        }
        for name, content in ((CONFIG_MAP, data), (METRICS_CONFIG_MAP, {}))
    ]


def kyverno_args(server: ApiServer, port: int) -> list[str]:
    """The command line (the module docstring says why each flag)."""
    return [
        str(binary()),
        f"--kubeconfig={server.kubeconfig}",
        f"--serverIP=127.0.0.1:{port}",
        "--webhookServerHost=127.0.0.1",
        f"--webhookServerPort={port}",
        f"--servicePort={port}",
        f"--caSecretName={CA_SECRET}",
        f"--tlsSecretName={TLS_SECRET}",
        "--webhookTimeout=5",
        "--admissionReports=false",
        "--omitEvents=PolicyApplied,PolicyViolation,PolicyError,PolicySkipped",
        "--disableMetrics=true",
        "--metricsHost=127.0.0.1",
        f"--metricsPort={free_port()}",
        "--controllerRuntimeMetricsAddress=0",
        "--autoMemLimitEnabled=false",
        "--loggingFormat=text",
        "--disableLogColor",
    ]


def _create(rest: Rest, path: str, obj: dict[str, Any]) -> None:
    answer = rest.create(path, obj)
    if not answer.allowed and answer.status != 409:
        raise ComponentError(f"creating {obj['kind']} {obj['metadata']['name']}: {answer.message}")


def install_prerequisites(server: ApiServer) -> None:
    """CRDs (waited for until Established), the namespace and the ConfigMaps."""
    rest = Rest(server)
    definitions = crds()
    crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in definitions:
        _create(rest, crd_path, crd)
    _create(
        rest,
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    )
    for config_map in config_maps():
        _create(rest, f"/api/v1/namespaces/{NAMESPACE}/configmaps", config_map)

    def established() -> bool:
        for crd in definitions:
            answer = rest.call("GET", f"{crd_path}/{crd['metadata']['name']}")
            conditions = (answer.body or {}).get("status", {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    wait_until(established, timeout=60, what="CRDs established", interval=0.2)


def registered(server: ApiServer) -> list[tuple[str, str]]:
    """(resource, name) of every webhook configuration Kyverno manages right now."""
    rest = Rest(server)
    found: list[tuple[str, str]] = []
    for kind in _WEBHOOK_KINDS:
        answer = rest.call("GET", f"{_ADMISSION_API}/{kind}")
        for item in (answer.body or {}).get("items") or []:
            name = item["metadata"]["name"]
            labels = item["metadata"].get("labels") or {}
            if name.startswith("kyverno-") or labels.get("webhook.kyverno.io/managed-by"):
                found.append((kind, name))
    return sorted(found)


def _probe_policy() -> dict[str, Any]:
    """A MutatingPolicy sent with ``dryRun``: Kyverno's policy webhook must judge it."""
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "zz-kyverno-probe"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["configmaps"],
                    }
                ]
            },
            "evaluation": {"background": {"enabled": False}},
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {
                        "expression": (
                            "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]"
                        )
                    },
                }
            ],
        },
    }


def _answers(server: ApiServer, rest: Rest) -> bool:
    """Whether the API server has Kyverno's webhooks and has called its policy webhook.

    The probe is a dry-run policy create: the API server sends it to Kyverno's
    fail-closed policy-validating webhook, so a 201 means Kyverno answered (an unreachable
    or untrusted Kyverno would fail it), and the API server's own counter of that webhook
    says it was really called, not skipped as not yet loaded.
    """
    names = {name for _, name in registered(server)}
    if not {POLICY_VALIDATING, RESOURCE_MUTATING, RESOURCE_VALIDATING} <= names:
        return False
    answer = rest.create(f"{POLICIES_API}/mutatingpolicies?dryRun=All", _probe_policy())
    if not answer.allowed:
        return False
    calls = metric_sum(
        apiserver_metrics(server),
        "apiserver_admission_webhook_admission_duration_seconds_count",
        name=POLICY_WEBHOOK,
    )
    return calls > 0


def launch_kyverno(directory: Path, server: ApiServer) -> KyvernoServer:
    """Install what Kyverno needs on ``server`` and start it, without waiting for it; its
    log goes to ``directory / "kyverno.log"``. :func:`wait_ready` waits.

    Why two steps: several Kyvernos (one per API server) start in parallel this way, from
    the one thread that must outlive them (a child started from a worker thread would get
    ``PR_SET_PDEATHSIG`` when that thread ends, and die with it).
    """
    executable = binary()
    directory.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    install_prerequisites(server)
    installed = time.monotonic()
    port = free_port()
    args = [str(executable), *kyverno_args(server, port)[1:]]
    env = {**os.environ, **ENVIRONMENT}
    component = Component("kyverno", args, directory / "kyverno.log", env=env, cwd=directory)
    return KyvernoServer(
        component,
        f"127.0.0.1:{port}",
        directory,
        installed_in=installed - began,
        began=installed,
    )


def wait_ready(kyverno: KyvernoServer, server: ApiServer, timeout: float = START_TIMEOUT) -> None:
    """Wait until the API server has Kyverno's webhooks and calls them (:func:`_answers`);
    records ``started_in`` and the configurations; stops it (cleaning up) on failure."""
    rest = Rest(server)
    try:
        wait_until(
            lambda: _answers(server, rest),
            timeout=timeout,
            components=[kyverno.component],
            what="registered and called by the API server",
            interval=0.5,
        )
    except BaseException:
        stop_kyverno(kyverno, server)
        raise
    kyverno.started_in = time.monotonic() - kyverno.began
    kyverno.webhook_configurations = registered(server)


def start_kyverno(directory: Path, server: ApiServer) -> KyvernoServer:
    """Install what Kyverno needs on ``server``, start it, and wait until the API server
    calls it; its log goes to ``directory / "kyverno.log"``."""
    kyverno = launch_kyverno(directory, server)
    wait_ready(kyverno, server)
    return kyverno


def stop_kyverno(kyverno: KyvernoServer, server: ApiServer) -> None:
    """Stop Kyverno, then delete every webhook configuration it left (fail-closed ones)."""
    kyverno.component.stop()
    rest = Rest(server)
    for kind, name in sorted({*kyverno.webhook_configurations, *registered(server)}):
        rest.call("DELETE", f"{_ADMISSION_API}/{kind}/{name}")


# --- policies ---------------------------------------------------------------------------------


def _pod_rule() -> dict[str, Any]:
    return {
        "resourceRules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["pods"],
            }
        ]
    }


#: What both sentinels share: pods carrying the sentinel's label, no autogen, no background.
_SENTINEL_SCOPE: dict[str, Any] = {
    "matchConstraints": _pod_rule(),
    "matchConditions": [
        {
            "name": "sentinel",
            "expression": f"'{SENTINEL_LABEL}' in object.metadata.?labels.orValue({{}})",
        }
    ],
    "autogen": {"podControllers": {"controllers": []}},
    "evaluation": {"background": {"enabled": False}},
}

SENTINELS: list[dict[str, Any]] = [
    {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "zz-sentinel"},
        "spec": {
            **_SENTINEL_SCOPE,
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {
                        "expression": (
                            "[JSONPatch{op: 'add', path: '/metadata/annotations',"
                            f" value: {{'{SENTINEL_ANNOTATION}': 'seen'}}}}]"
                        )
                    },
                }
            ],
        },
    },
    {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "ValidatingPolicy",
        "metadata": {"name": "zz-sentinel"},
        "spec": {
            **_SENTINEL_SCOPE,
            "validationActions": ["Warn"],
            "validations": [{"expression": "false", "message": "kyverno-sentinel"}],
        },
    },
]


def _ready(rest: Rest, obj: dict[str, Any]) -> bool:
    path = f"{POLICIES_API}/{_PLURALS[obj['kind']]}/{obj['metadata']['name']}"
    answer = rest.call("GET", path)
    status = (answer.body or {}).get("status") or {}
    return bool((status.get("conditionStatus") or {}).get("ready"))


def _sentinel_acts(rest: Rest) -> bool:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kyverno-sentinel", "labels": {SENTINEL_LABEL: "yes"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }
    answer = rest.create("/api/v1/namespaces/default/pods?dryRun=All", pod)
    if not answer.allowed:
        return False
    annotations = answer.body["metadata"].get("annotations") or {}
    return annotations.get(SENTINEL_ANNOTATION) == "seen" and any(
        "kyverno-sentinel" in w for w in answer.warnings
    )


def install_policies(
    server: ApiServer, policies: list[dict[str, Any]], timeout: float = 90.0
) -> None:
    """Create ``policies`` (``policies.kyverno.io/v1`` Mutating-/ValidatingPolicies), then
    wait until each reports Ready and Kyverno applies a sentinel created after them.

    Why both: Ready says Kyverno compiled the policy and wrote its webhook; the sentinels
    (a mutation and a warning for pods with a label only the probe carries) say the API
    server has loaded that webhook and Kyverno's engine holds policies created before them.
    The probe pod (in ``default``) needs the ``default`` ServiceAccount, created here if
    missing. The sentinels are then deleted, and waited for until Kyverno has taken their
    webhooks out, so the API server runs ``policies`` and nothing else.
    """
    rest = Rest(server)
    rest.create(
        "/api/v1/namespaces/default/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
    )
    objects = [*policies, *SENTINELS]
    for obj in objects:
        answer = rest.create(f"{POLICIES_API}/{_PLURALS[obj['kind']]}", obj)
        if not answer.allowed:
            raise ComponentError(f"{obj['kind']} {obj['metadata']['name']}: {answer.message}")
    deadline = time.monotonic() + timeout
    while not (all(_ready(rest, obj) for obj in objects) and _sentinel_acts(rest)):
        if time.monotonic() > deadline:
            waiting = [o["metadata"]["name"] for o in objects if not _ready(rest, o)]
            raise TimeoutError(
                f"Kyverno policies not in force in {timeout:g} s; not Ready: {waiting}"
            )
        time.sleep(0.3)
    for sentinel in SENTINELS:
        plural = _PLURALS[sentinel["kind"]]
        rest.call("DELETE", f"{POLICIES_API}/{plural}/{sentinel['metadata']['name']}")
    wait_until(
        lambda: not _sentinel_webhooks(rest),
        timeout=timeout,
        what="rid of the sentinels' webhooks",
        interval=0.3,
    )


def _sentinel_webhooks(rest: Rest) -> list[str]:
    """The webhooks Kyverno still has registered for the sentinel policies."""
    names = []
    for kind in _WEBHOOK_KINDS:
        answer = rest.call("GET", f"{_ADMISSION_API}/{kind}")
        for item in (answer.body or {}).get("items") or []:
            names += [w["name"] for w in item.get("webhooks") or [] if "zz-sentinel" in w["name"]]
    return names
