"""``enforce``'s earners against the rule read literally: a guarded key is earned by a
request of its own name, of a name in ``earnedBy.resources``, of a name starting with one
of ``earnedBy.resourcePrefixes``, or by a claimed class in ``earnedBy.deviceClasses``.

Why: the plugin finds prefixes by walking a trie once per name (linear), not by trying
every prefix on every name; this holds the walk to the plain reading on names and
prefixes drawn from a small alphabet, so that they share, nest and end inside each other.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from webhooks.core.config import load_config
from webhooks.plugins import REGISTRY
from webhooks.plugins.extended_resource_toleration import Settings

DOMAINS = ("a.io", "a.io.b", "b.io")
_TAILS = st.text(alphabet="ab-", max_size=4)
NAMES = st.builds(lambda d, t: f"{d}/x{t}b", st.sampled_from(DOMAINS), _TAILS)
#: A name cut back by up to four characters, never into its domain: whole names included.
PREFIXES = st.builds(lambda n, k: n[: max(n.index("/") + 1, len(n) - k)], NAMES, st.integers(0, 4))
CLASSES = st.sampled_from(("gpu.a.io", "fpga.b.io", "other.io"))


@st.composite
def guards(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    return [
        {
            "taintKey": key,
            "earnedBy": {
                "resources": draw(st.lists(NAMES, max_size=3)),
                "resourcePrefixes": draw(st.lists(PREFIXES, max_size=3)),
                "deviceClasses": draw(st.lists(CLASSES, max_size=2)),
            },
        }
        for key in keys
    ]


def literal(guarded: list[dict[str, Any]], names: set[str], classes: set[str]) -> set[str]:
    out = set()
    for guard in guarded:
        earned = guard["earnedBy"]
        if (
            guard["taintKey"] in names
            or names & set(earned["resources"])
            or any(n.startswith(p) for n in names for p in earned["resourcePrefixes"])
            or classes & set(earned["deviceClasses"])
        ):
            out.add(guard["taintKey"])
    return out


@given(guards(), st.sets(NAMES, max_size=5), st.sets(CLASSES, max_size=2))
def test_the_earned_keys_are_those_the_rule_names(
    guarded: list[dict[str, Any]], names: set[str], classes: set[str]
) -> None:
    config = load_config(
        {"plugins": {"extended-resource-toleration": {"enforce": {"guarded": guarded}}}},
        REGISTRY,
    )
    settings: Settings = config.settings("extended-resource-toleration")
    assert settings.guards is not None
    assert settings.guards.earned(names, classes) == literal(guarded, names, classes)
