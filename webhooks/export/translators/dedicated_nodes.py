"""dedicated-nodes: placeholder (not yet translated)."""

from __future__ import annotations

from webhooks.export.model import NOT_EXPORTED, Line, Translation
from webhooks.plugins.dedicated_nodes import NAME, Settings


def translate(settings: Settings) -> Translation:
    """Nothing yet."""
    return Translation(
        NAME,
        mutate=NOT_EXPORTED,
        validate=NOT_EXPORTED if settings.enforce else None,
        lines=(Line(f"plugins.{NAME}", NOT_EXPORTED, "not translated yet"),),
    )
