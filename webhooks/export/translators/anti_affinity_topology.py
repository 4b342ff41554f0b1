"""anti-affinity-topology as a validation (spec §7).

How: the first required pod anti-affinity term whose ``topologyKey`` is not an allowed key
refuses the pod, on CREATE and UPDATE, in upstream's sentence (with several allowed keys,
the webhook's). An exact string comparison in CEL is upstream's; the plugin is exact.
"""

from __future__ import annotations

from webhooks.export import cel
from webhooks.export.model import EXACT, Check, Line, Translation, Validating
from webhooks.plugins.anti_affinity_topology import PLUGIN, Settings

NAME = PLUGIN.name


def translate(settings: Settings) -> Translation:
    """The validation for ``settings.allowed_topology_keys``."""
    allowed = settings.allowed_topology_keys
    terms = (
        "object.spec.?affinity.?podAntiAffinity"
        ".?requiredDuringSchedulingIgnoredDuringExecution.orValue([])"
    )
    offending = (
        f"{terms}.map(t, t.?topologyKey.orValue('')).filter(k, !(k in {cel.strings(allowed)}))"
    )
    tail = (
        f" but only key {allowed[0]} is allowed"
        if len(allowed) == 1
        else f" but only keys {', '.join(allowed)} are allowed"
    )
    reason = (
        "'affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey '"
        f" + variables.aatOffending[0] + {cel.quote(tail)}"
    )
    validating = Validating(
        ("pods",),
        frozenset({"CREATE", "UPDATE"}),
        (Check("size(variables.aatOffending) == 0", reason),),
        (("aatOffending", offending),),
    )
    return Translation(
        NAME,
        validating=(validating,),
        validate=EXACT,
        lines=(Line(f"plugins.{NAME}.allowedTopologyKeys", EXACT),),
    )
