"""Which enabled settings cannot work on the release a cluster's API server runs, and why.

Why apart from the plugins: a plugin declares what its settings need (:class:`Need`) and
never learns the release; the release table (:mod:`webhooks.k8s.releases`) says where each
gate is on by default. Putting the two together here gives ``serve`` its start-up lines,
``/readyz`` its detail and the metric their labels, and gives the chart's schema and the
docs the same facts, so nothing else decides by version.

Only defaults are known: a self-managed API server may run with a gate on that is off by
default, which is why every line names the gate and how it stands.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from webhooks.core.config import Config
from webhooks.core.plugin import Need, Registry
from webhooks.k8s.releases import RELEASES, Release


@dataclass(frozen=True, slots=True)
class Unavailable:
    """An enabled setting the release does not serve by default.

    ``setting`` is its config key path (``plugins.<plugin>.<key>``) and ``missing`` the
    gate: both come from a closed set (the plugins' declared needs), so they may be metric
    labels. ``line`` is the one line an operator reads.
    """

    setting: str
    missing: str
    line: str


def declared(registry: Registry) -> Iterator[tuple[str, Need]]:
    """Every setting some release may not serve, as (config key path, need), in chain order.

    Why: the chart's schema and the docs describe these, whether or not they are on.
    """
    for plugin in registry:
        for need in plugin.needs:
            yield f"plugins.{plugin.name}.{need.key}", need


def first_on(gate: str) -> Release | None:
    """The oldest supported release with ``gate`` on by default, or ``None`` if none has it.

    Why "first": the gates concerned only ever move towards on, so it is where a setting
    starts to work without the operator turning anything on.
    """
    return next((r for r in RELEASES if r.gate_on(gate)), None)


def unavailable(config: Config, registry: Registry, release: Release) -> tuple[Unavailable, ...]:
    """The enabled plugins' settings in use that ``release`` does not serve by default.

    Why only enabled plugins and settings in use: the lines tell an operator what of their
    policy does not work, and a setting left off costs nothing anywhere.
    """
    found: list[Unavailable] = []
    for plugin in config.chain(registry):
        settings = config.settings(plugin.name)
        for need in plugin.needs:
            if not need.on(settings) or release.gate_on(need.gate):
                continue
            setting = f"plugins.{plugin.name}.{need.key}"
            line = (
                f"{setting}: needs {need.feature} (gate {need.gate}, "
                f"{release.gate_state(need.gate)}); {need.without}"
            )
            found.append(Unavailable(setting, need.gate, line))
    return tuple(found)


def describe(need: Need) -> str:
    """One sentence on where ``need``'s setting works, from the table: what the chart's
    schema says of the setting (a test keeps the two equal)."""
    first = first_on(need.gate)
    where = (
        f"on by default from Kubernetes {first.name}"
        if first is not None
        else "on by default in no supported release"
    )
    return (
        f"Needs {need.feature} (gate {need.gate}, {where}); where it is off the pods "
        "say so in their log, on /readyz and in placement_webhooks_unavailable_settings, "
        "and stay ready."
    )
