"""Config files: reading one costs time and memory linear in what it holds, whatever it holds.

Why these surfaces: the master reads the config at start and again on every SIGHUP, and
every command reads it before anything else, so each list and map an operator can grow
(docs/configuration.md) is doubled on its own: exceptions, and the per-namespace settings
and lists of each plugin. Nesting is doubled in depth up to the reader's bound (many
deep values side by side, so the time is measurable), and an alias-heavy file doubles the
number of exceptions built by merging one anchored base, the way an operator keeps a long
list short. Each sample reads a file through ``read_config``, as the commands do; the
files stay under the size limit at 2N.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.growth.measure import Surface, in_process
from webhooks.configfile import read_config
from webhooks.core.config import ConfigError

_DIR = Path(tempfile.mkdtemp(prefix="growth-config-"))
_fresh = itertools.count()
_files = itertools.count()


def _file(text: str) -> Path:
    path = _DIR / f"config-{next(_files) % 4}.yaml"
    path.write_text(text)
    return path


def _read(path: Path) -> object:
    try:
        return read_config(path)
    except ConfigError as exc:
        return str(exc)


def _exceptions(n: int) -> Path:
    lines = ["exceptions:"]
    for i in range(n):
        lines.append(
            f"  - {{name: exception-{i:06d}, plugins: [dedicated-nodes], namespaces: [team-{i}],"
            f" objectSelector: {{matchLabels: {{app: a{i}}}}}}}"
        )
    return _file("\n".join(lines) + "\n")


def _section(plugin: str, head: str, item: Callable[[str], str]) -> Callable[[int], Path]:
    def build(n: int) -> Path:
        lines = ["plugins:", f"  {plugin}:", "    enabled: true", f"    {head}:"]
        run = next(_fresh)  # names new in every file: per-value memos (tolerations') miss
        lines.extend(f"      {item(f'{run}x{i}')}" for i in range(n))
        return _file("\n".join(lines) + "\n")

    return build


_TOLERATION = "- {{key: example.com/k{0}, operator: Equal, value: v{0}, effect: NoSchedule}}"
_OVERRIDE = "- {{namespaceSelector: {{matchLabels: {{team: t{0}}}}}, action: warn}}"

#: (plugin, key, unit, N, one item): N is chosen so 2N stays under the size limit and
#: takes about 0.1 s.
_SECTIONS = [
    ("dedicated-nodes", "namespaces", "namespaces", 10_000, "team-{0}: group-{0}"),
    ("dedicated-nodes", "exemptNamespaces", "namespaces", 16_000, "- team-{0}"),
    (
        "pod-node-selector",
        "nodeSelectorWhitelist",
        "namespaces",
        8_000,
        "team-{0}: 'p=p{0},z=z{0}'",
    ),
    (
        "extended-resource-toleration",
        "deviceClassTaints",
        "classes",
        8_000,
        "c{0}.example.com: k/t{0}",
    ),
    ("dedicated-nodes", "actionOverrides", "overrides", 4_000, _OVERRIDE),
    ("pod-toleration-restriction", "defaultTolerations", "tolerations", 4_000, _TOLERATION),
    ("pod-toleration-restriction", "tolerationsWhitelist", "tolerations", 4_000, _TOLERATION),
    ("anti-affinity-topology", "allowedTopologyKeys", "keys", 12_000, "- example.com/key-{0}"),
]

#: How many values nested this deep sit side by side in the nesting file.
_COPIES = 5


def _nesting(levels: int) -> Path:
    # Lists nested ``levels`` deep where a string belongs: read whole, then refused with a
    # bounded excerpt of the first.
    deep = "[" * levels + "]" * levels
    return _file(f"cluster:\n  context: [{', '.join([deep] * _COPIES)}]\n")


def _aliases(n: int) -> Path:
    lines = [
        "exceptions:",
        "  - &base {name: exception-0, plugins: [dedicated-nodes, runtime-class],"
        " namespaces: [team-a, team-b, team-c], objectSelector: {matchLabels: {tier: gpu}}}",
    ]
    lines.extend(f"  - {{<<: *base, name: exception-{i}}}" for i in range(1, n))
    return _file("\n".join(lines) + "\n")


SURFACES = [
    Surface("config file: exceptions", "exceptions", 3_000, in_process(_exceptions, _read)),
    *[
        Surface(
            f"config file: {plugin} {key}",
            unit,
            size,
            in_process(_section(plugin, key, item.format), _read),
        )
        for plugin, key, unit, size, item in _SECTIONS
    ],
    Surface(
        f"config file: nesting ({_COPIES} values side by side, refused)",
        "levels",
        4_000,
        in_process(_nesting, _read),
    ),
    Surface(
        "config file: aliases (exceptions merged from one anchor)",
        "exceptions",
        8_000,
        in_process(_aliases, _read),
    ),
]
