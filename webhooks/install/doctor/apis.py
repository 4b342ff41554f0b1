"""``apis``: every enabled setting has the feature gates and the APIs it needs on this server.

Gates: which settings need which gate is the plugins' (:class:`~webhooks.core.plugin.Need`)
and where a gate is on by default the release table's, put together by
:mod:`webhooks.core.availability` exactly as ``serve`` does at start-up. What ``serve``
cannot know, the doctor can ask: the API server's ``/metrics`` says which gates it runs
with (``kubernetes_feature_enabled``), so a gate turned on by flag (or off) is judged as it
is. A setting whose gate is off where it runs fails: it silently does nothing. When the
metrics may not be read, only the default is known, and an off-by-default gate is a
warning that says so.

APIs: the server reads RuntimeClasses always, and DeviceClasses, ResourceClaims and
ResourceClaimTemplates when an enabled setting needs them
(:meth:`~webhooks.core.config.Config.lookups`, :mod:`webhooks.cluster.informer`). Each
group-version's discovery document says whether the resource is served; one that is not
is read as empty by the server, so the settings reading it do nothing: fail.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from webhooks.cluster.informer import OPTIONAL, RUNTIME_CLASSES, Resource
from webhooks.core.availability import first_on, unavailable
from webhooks.core.config import Config
from webhooks.install.doctor import rest
from webhooks.install.doctor.findings import Finding, Status
from webhooks.install.doctor.installation import Installation, config_unknown
from webhooks.k8s.releases import RELEASES, Release
from webhooks.plugins import REGISTRY

CHECK: Final = "apis"

_GATE_LINE: Final = re.compile(
    r'^kubernetes_feature_enabled\{[^}]*\bname="(?P<name>[^"]+)"[^}]*\}\s+(?P<value>\S+)',
    re.MULTILINE,
)


def live_gates(metrics_text: str) -> dict[str, bool]:
    """The gates an API server reports in its metrics, on or off."""
    gates: dict[str, bool] = {}
    for match in _GATE_LINE.finditer(metrics_text):
        try:
            gates[match["name"]] = float(match["value"]) > 0
        except ValueError:
            continue
    return gates


def _gate_fix(gate: str, release: Release, setting: str) -> str:
    if gate in release.gates:
        return f"start kube-apiserver with --feature-gates={gate}=true, or turn {setting} off"
    first = first_on(gate)
    if first is not None:
        return f"upgrade to Kubernetes {first.name} (on by default there), or turn {setting} off"
    having = next((r for r in RELEASES if gate in r.gates), None)
    if having is None:
        return f"turn {setting} off: no supported release has gate {gate}"
    return (
        f"upgrade to Kubernetes {having.name} and start kube-apiserver with "
        f"--feature-gates={gate}=true, or turn {setting} off"
    )


def gate_findings(
    config: Config, release: Release, gates: Mapping[str, bool] | None, unreadable: str
) -> list[Finding]:
    """One finding per enabled setting that needs a gate: ok where the gate is on.

    ``gates`` are the server's own (``None``: its metrics could not be read, ``unreadable``
    says why, and the release's defaults are all that is known).
    """
    by_default = {u.setting: u for u in unavailable(config, REGISTRY, release)}
    findings: list[Finding] = []
    for plugin in config.chain(REGISTRY):
        settings = config.settings(plugin.name)
        for need in plugin.needs:
            if not need.on(settings):
                continue
            setting = f"plugins.{plugin.name}.{need.key}"
            state = release.gate_state(need.gate)
            if gates is not None:
                on = gates.get(need.gate, False)
                stands = "on" if on else ("off" if need.gate in gates else "absent")
                told = f"gate {need.gate} {stands} in this API server ({state})"
                if on:
                    findings.append(Finding(CHECK, Status.OK, f"{setting}: {told}"))
                    continue
                findings.append(
                    Finding(
                        CHECK,
                        Status.FAIL,
                        f"{setting}: needs {need.feature}, {told}; {need.without}",
                        _gate_fix(need.gate, release, setting),
                    )
                )
                continue
            if setting not in by_default:
                findings.append(Finding(CHECK, Status.OK, f"{setting}: gate {need.gate} {state}"))
                continue
            findings.append(
                Finding(
                    CHECK,
                    Status.WARN,
                    f"{by_default[setting].line} (this server's own gates are unknown: "
                    f"{unreadable})",
                    _gate_fix(need.gate, release, setting),
                )
            )
    return findings


def read_resources(config: Config) -> dict[str, tuple[Resource, tuple[str, ...]]]:
    """The resources the server reads for ``config``, by plural, with who reads them."""
    wanted: dict[str, tuple[Resource, tuple[str, ...]]] = {
        RUNTIME_CLASSES.plural: (RUNTIME_CLASSES, ("the server (always)",))
    }
    for plugin in config.chain(REGISTRY):
        if plugin.lookups is None:
            continue
        for plural in sorted(plugin.lookups(config.settings(plugin.name))):
            if plural not in OPTIONAL:
                continue
            resource, readers = wanted.get(plural, (OPTIONAL[plural], ()))
            wanted[plural] = (resource, (*readers, f"plugins.{plugin.name}"))
    return wanted


def _discovery_path(api_version: str) -> str:
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


def api_findings(installation: Installation, config: Config) -> list[Finding]:
    """One finding per group-version the server reads: ok when it serves the resources."""
    by_version: dict[str, list[tuple[Resource, tuple[str, ...]]]] = {}
    for resource, readers in read_resources(config).values():
        by_version.setdefault(resource.api_version, []).append((resource, readers))
    findings: list[Finding] = []
    for version, wanted in by_version.items():
        try:
            document = rest.get(installation, _discovery_path(version))
            served = {r.get("name") for r in document.get("resources") or [] if isinstance(r, dict)}
            why = "not in its discovery document"
        except rest.Refused as exc:
            if exc.status != 404:
                findings.append(
                    Finding(
                        CHECK,
                        Status.WARN,
                        f"whether {version} is served could not be read: {exc.message}",
                        "let doctor's credentials read the API's discovery documents",
                    )
                )
                continue
            served, why = set(), "the API server does not serve it (404)"
        for resource, readers in wanted:
            if resource.plural in served:
                findings.append(Finding(CHECK, Status.OK, f"{resource.kind} ({version}) is served"))
                continue
            findings.append(
                Finding(
                    CHECK,
                    Status.FAIL,
                    f"{resource.kind} ({version}) is read by {', '.join(readers)} but {why}: "
                    "the server sees none, so what it reads them for does nothing",
                    f"serve it (kube-apiserver --runtime-config={version}=true), or turn off "
                    "the settings that read it",
                )
            )
    return findings


def check(installation: Installation) -> list[Finding]:
    """The gates and APIs of every enabled setting (see the module's docstring)."""
    config = installation.config
    if config is None:
        return [
            config_unknown(
                installation, CHECK, "which settings are enabled is unknown, so what they need"
            )
        ]
    release = installation.release.release
    try:
        gates: dict[str, bool] | None = live_gates(rest.metrics(installation))
        unreadable = ""
        if not gates:
            gates, unreadable = None, "its /metrics reports no kubernetes_feature_enabled"
    except rest.Refused as exc:
        gates, unreadable = None, f"its /metrics could not be read: {exc.message}"
    findings = gate_findings(config, release, gates, unreadable)
    findings += api_findings(installation, config)
    if installation.release.note:
        findings.append(
            Finding(
                CHECK,
                Status.WARN,
                f"judged as Kubernetes {release.name}: {installation.release.note}",
                "let doctor read the API server's /version",
            )
        )
    return findings
