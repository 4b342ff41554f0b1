"""What makes an ``export`` report consistent, checked on the text a user reads.

Why on the rendered lines and not on :class:`webhooks.export.Line` values: the report is
read (and grepped) as text, so a contradiction is one the text shows. Shared by the table
tests over the configs the suite uses and the property test over generated configs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from webhooks.core.config import Config
from webhooks.export import EXACT, EXCEPT, NOT_EXPORTED, Export
from webhooks.export.assemble import setting_names
from webhooks.plugins import REGISTRY

RANK = {EXACT: 0, EXCEPT: 1, NOT_EXPORTED: 2}
_LINE = re.compile(
    r"^(?P<subject>.+?): (?P<verdict>exact except|not exported|exact)(?=$|: |; hybrid: )"
)


@dataclass(frozen=True)
class Read:
    """One report line as a reader splits it."""

    subject: str
    verdict: str
    hybrid: bool


def read(line: str) -> Read:
    """Split a rendered report line into its subject, verdict and hybrid note."""
    found = _LINE.match(line)
    assert found is not None, line
    return Read(found["subject"], found["verdict"], "; hybrid: " in line)


def contradictions(result: Export, config: Config, *, hybrid: bool) -> list[str]:
    """Every way ``result``'s report contradicts itself or the objects; none when consistent."""
    problems: list[str] = []
    lines = [read(text) for text in result.report()]
    plugins: dict[str, str] = {}
    for line in lines:
        parts = line.subject.split(".")
        if line.subject.startswith("plugins.") and len(parts) == 2:
            plugins[parts[1]] = line.verdict
    for line in lines:
        if not line.subject.startswith("plugins."):
            continue
        name, _, setting = line.subject.removeprefix("plugins.").partition(".")
        if name not in plugins:
            problems.append(f"{line.subject}: its plugin has no line before it")
        elif setting and RANK[line.verdict] < RANK[plugins[name]]:
            problems.append(f"{line.subject}: {line.verdict} under a plugin {plugins[name]}")
        if line.hybrid and not hybrid:
            problems.append(f"{line.subject}: a hybrid note outside a hybrid report")
    subjects = {line.subject for line in lines}
    for name, verdict in plugins.items():
        for setting in setting_names(REGISTRY.get(name)):
            if f"plugins.{name}.{setting}" not in subjects:
                problems.append(f"plugins.{name}.{setting}: no line")
        halves = {half for plugin, half in result.native if plugin == name}
        if verdict == NOT_EXPORTED and halves:
            problems.append(f"plugins.{name}: not exported, yet {sorted(halves)} run natively")
        policies = [
            o["metadata"]["name"]
            for o in result.objects
            if o["kind"] == "ValidatingAdmissionPolicy"
            and o["metadata"]["name"].startswith(f"placement-webhooks-{name}")
        ]
        if verdict == NOT_EXPORTED and policies:
            problems.append(f"plugins.{name}: not exported, yet {policies} are")
        kept = any(plugin == name for plugin, _ in result.webhook)
        head = next(line for line in lines if line.subject == f"plugins.{name}")
        if hybrid and kept != head.hybrid:
            problems.append(f"plugins.{name}: the webhook keeps {kept}, the report says not")
    for index, exception in enumerate(config.exceptions):
        subject = f"exceptions[{index}] ({exception.name})"
        line = next((line for line in lines if line.subject == subject), None)
        covered = [
            v for n, v in plugins.items() if "*" in exception.plugins or n in exception.plugins
        ]
        exported = [v for v in covered if v != NOT_EXPORTED]
        if line is not None and line.verdict != NOT_EXPORTED and covered and not exported:
            problems.append(f"{subject}: {line.verdict}, and no plugin it covers is exported")
    return problems
