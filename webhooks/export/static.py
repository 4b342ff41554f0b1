"""Policies and webhook configurations as static admission manifests (KEP-5793).

Why: from Kubernetes 1.36 (gate ``ManifestBasedAdmissionControlConfig``: alpha and off in
1.36, beta and on in 1.37) the API server can load admission policies and webhook
configurations from files when it starts. They are in force before it serves its first
request, cannot be seen, changed or deleted through the API, and need no etcd. For a
control plane whose flags and files its owner controls (kubeadm, Talos, k3s-style), that
closes both the window between start-up and ``kubectl apply``, and "a tenant with RBAC on
admission policies deletes them".

What the API server requires, as read in ``k8s.io/apiserver@v0.37.2``
(``pkg/admission/plugin/manifest``, ``pkg/admission/plugin/policy/manifest``,
``pkg/admission/plugin/policy/config``) and ``k8s.io/kubernetes@v1.37.2``
(``pkg/admission/plugin/policy/manifest/loader``,
``pkg/apis/admissionregistration/validation/static_suffix.go``):

* one directory per admission plugin, named by that plugin's ``staticManifestsDir`` in the
  ``AdmissionConfiguration`` that ``--admission-control-config-file`` points at; a
  directory holds only its plugin's kinds (a MutatingAdmissionPolicy in the
  ValidatingAdmissionPolicy plugin's directory fails the start-up), and the path must be
  absolute;
* only ``.yaml``, ``.yml`` and ``.json`` files directly in it are read (sub-directories and
  other names are skipped), several documents a file, in name order;
* every object and every binding's ``policyName`` ends in ``.static.k8s.io`` (the API
  refuses that suffix to anything created through it), names are unique in the directory,
  every binding names a policy of the directory, and only ``admissionregistration.k8s.io/v1``
  is decoded;
* no ``paramKind`` and no ``paramRef``: a static policy has no params;
* a static webhook is called by ``clientConfig.url``, never through a Service
  (``pkg/admission/plugin/webhook/manifest/loader``).

The directory is watched (and polled every minute): a change takes effect without a
restart, and a set of files that does not load is logged and the previous set kept; at
start-up it stops the API server instead.

Sans-IO like the rest of the package: :func:`static_manifests` returns the files as
relative names and objects; the CLI writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Final

from webhooks.export.model import Translation
from webhooks.k8s.releases import RELEASES, STATIC_ADMISSION, Release

#: The name suffix the API server reserves for static objects.
SUFFIX: Final = ".static.k8s.io"
#: The only API version the static loaders decode.
API_VERSION: Final = "admissionregistration.k8s.io/v1"
#: The file ``--admission-control-config-file`` points at, in the exported directory.
ADMISSION_CONFIGURATION: Final = "admission-configuration.yaml"

#: Admission plugin -> (its configuration kind, the sub-directory, the kinds it loads).
PLUGINS: Final[Mapping[str, tuple[str, str, frozenset[str]]]] = {
    "MutatingAdmissionPolicy": (
        "MutatingAdmissionPolicyConfiguration",
        "mutating-policies",
        frozenset({"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}),
    ),
    "ValidatingAdmissionPolicy": (
        "ValidatingAdmissionPolicyConfiguration",
        "validating-policies",
        frozenset({"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}),
    ),
    "MutatingAdmissionWebhook": (
        "WebhookAdmissionConfiguration",
        "mutating-webhooks",
        frozenset({"MutatingWebhookConfiguration"}),
    ),
    "ValidatingAdmissionWebhook": (
        "WebhookAdmissionConfiguration",
        "validating-webhooks",
        frozenset({"ValidatingWebhookConfiguration"}),
    ),
}
#: The plugins ``export`` fills, and those ``webhook-config`` fills.
POLICY_PLUGINS: Final = ("MutatingAdmissionPolicy", "ValidatingAdmissionPolicy")
WEBHOOK_PLUGINS: Final = ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")

#: Why a plugin whose policies read params is not exported as static manifests.
PARAMS_WHY: Final = (
    "static admission manifests allow no params (paramKind, paramRef) and this plugin's "
    "policies read the pod's RuntimeClass as one; keep the in-tree RuntimeClass admission "
    "plugin (on by default) or this plugin's webhook"
)


class StaticUnsupported(ValueError):
    """The release or the objects cannot be static admission manifests; the message says why."""


@dataclass(frozen=True, slots=True)
class StaticFile:
    """One file to write: its path relative to the exported directory, and its objects."""

    path: str
    objects: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class StaticManifests:
    """What ``--static-manifests DIR`` writes, and what the API server needs.

    ``files[0]`` is the AdmissionConfiguration. ``directories`` are every plugin's
    directory, written even when empty: the AdmissionConfiguration names all four, so
    ``export`` and ``webhook-config`` can share one DIR and one configuration, and a later
    run that fills an empty one takes effect without a restart. ``owned`` are the
    directories this run fills (and may clean). ``flags`` are the ``kube-apiserver`` flags
    to add.
    """

    files: tuple[StaticFile, ...]
    directories: tuple[str, ...]
    owned: tuple[str, ...]
    flags: tuple[str, ...]


def uses_params(translation: Translation) -> frozenset[str]:
    """The halves (``mutate``, ``validate``) of ``translation`` that need a param kind.

    Why by half: a half is exported whole or not at all (its verdict), and a static
    manifest with a param is refused by the API server at start-up.
    """
    halves = {"mutate" for m in translation.mutations if m.runtime_class}
    halves |= {part.phase for part in translation.validating if part.runtime_class}
    return frozenset(halves)


def static_name(name: str) -> str:
    """``name`` with the reserved suffix (unchanged when it already has it)."""
    return name if name.endswith(SUFFIX) else name + SUFFIX


def _first_with_gate() -> Release | None:
    return next((row for row in RELEASES if STATIC_ADMISSION in row.gates), None)


def flags(release: Release, configuration: str) -> tuple[str, ...]:
    """The ``kube-apiserver`` flags that load ``configuration`` on ``release``.

    :class:`StaticUnsupported` where the release has no such gate; where it is off by
    default (alpha) the gate is turned on too.
    """
    if STATIC_ADMISSION not in release.gates:
        first = _first_with_gate()
        since = f" (it arrives in {first.name})" if first is not None else ""
        raise StaticUnsupported(
            f"Kubernetes {release.name} cannot load static admission manifests: it has no "
            f"{STATIC_ADMISSION} feature gate (KEP-5793){since}"
        )
    found = [f"--admission-control-config-file={configuration}"]
    if not release.gate_on(STATIC_ADMISSION):
        found.append(f"--feature-gates={STATIC_ADMISSION}=true")
    return tuple(found)


def _renamed(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with the reserved suffix on its name and its binding's policy name;
    :class:`StaticUnsupported` for what the loaders refuse."""
    kind, name = obj["kind"], obj["metadata"]["name"]
    if obj.get("apiVersion") != API_VERSION:
        raise StaticUnsupported(f"{kind} {name} is {obj.get('apiVersion')}: only v1 is loaded")
    renamed = {**obj, "metadata": {**obj["metadata"], "name": static_name(name)}}
    if "spec" in obj:
        spec = dict(obj["spec"])
        if "paramKind" in spec or "paramRef" in spec:
            raise StaticUnsupported(f"{kind} {name}: static policies can have no params")
        if "policyName" in spec:
            spec["policyName"] = static_name(spec["policyName"])
        renamed["spec"] = spec
    for webhook in obj.get("webhooks", ()):
        if "service" in webhook["clientConfig"] or not webhook["clientConfig"].get("url"):
            raise StaticUnsupported(
                f"{kind} {name}: webhook {webhook['name']} must be called by URL "
                "(clientConfig.url): a static webhook cannot name a Service"
            )
    return renamed


def _plugin_of(kind: str) -> str:
    for plugin, (_, _, kinds) in PLUGINS.items():
        if kind in kinds:
            return plugin
    raise ValueError(f"{kind} is not an admission configuration kind")


def _configuration(kind: str, directory: PurePosixPath) -> dict[str, Any]:
    found: dict[str, Any] = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": kind}
    if kind == "WebhookAdmissionConfiguration":
        # No kubeconfig of credentials for calling webhooks: an empty one is allowed
        # when a static directory is given (webhook/config/kubeconfig.go).
        found["kubeConfigFile"] = ""
    found["staticManifestsDir"] = str(directory)
    return found


def admission_configuration(directory: PurePosixPath) -> dict[str, Any]:
    """The AdmissionConfiguration naming one ``staticManifestsDir`` per plugin under
    ``directory`` (absolute: the API server refuses a relative one)."""
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [
            {"name": plugin, "configuration": _configuration(kind, directory / sub)}
            for plugin, (kind, sub, _) in PLUGINS.items()
        ],
    }


def static_manifests(
    objects: Iterable[Mapping[str, Any]],
    release: Release,
    directory: str,
    owns: Sequence[str] = POLICY_PLUGINS,
) -> StaticManifests:
    """``objects`` as the files of KEP-5793: ``export``'s (built with ``static=True``), or
    ``webhook-config``'s with ``owns=WEBHOOK_PLUGINS``.

    ``directory`` is where the files will be on the control-plane hosts (absolute), which
    the AdmissionConfiguration names; it need not be where they are written. Layout: the
    AdmissionConfiguration at the top, one sub-directory per admission plugin, one file per
    policy (holding its binding too) or webhook configuration, named after it
    (``validating-policies/placement-webhooks-taint-toleration-rules.static.k8s.io.yaml``).
    :class:`StaticUnsupported` where ``release`` cannot load them, or an object cannot be
    static (a param, a webhook called through a Service).
    """
    root = PurePosixPath(directory)
    if not root.is_absolute():
        raise StaticUnsupported(f"{directory}: the API server needs an absolute directory")
    needed = flags(release, str(root / ADMISSION_CONFIGURATION))
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for obj in objects:
        renamed = _renamed(obj)
        policy = renamed.get("spec", {}).get("policyName", renamed["metadata"]["name"])
        plugin = _plugin_of(renamed["kind"])
        if plugin not in owns:
            raise ValueError(f"{renamed['kind']} is not for {', '.join(owns)}")
        grouped.setdefault((plugin, policy), []).append(renamed)
    files = [
        StaticFile(f"{PLUGINS[plugin][1]}/{policy}.yaml", tuple(members))
        for (plugin, policy), members in grouped.items()
    ]
    configuration = StaticFile(ADMISSION_CONFIGURATION, (admission_configuration(root),))
    subs = tuple(sub for _, sub, _ in PLUGINS.values())
    owned = tuple(PLUGINS[plugin][1] for plugin in owns)
    return StaticManifests((configuration, *files), subs, owned, needed)
