"""A mode and a config file as the options of one API server: what ``make cluster`` starts."""

from __future__ import annotations

from pathlib import Path

from controlplane.harness.admission import read, setup_for
from controlplane.harness.components import ApiServerOptions


def apiserver_options(
    mode: str, config: Path | None = None, *, name: str = "", extra_args: tuple[str, ...] = ()
) -> ApiServerOptions:
    """The API server of ``mode`` for ``config`` (``None``: our built-in defaults).

    ``in-tree`` runs no webhook; ``webhooks`` and ``managed`` run ``serve`` with the very
    file given, so both sides of a comparison read one config. The server is named after
    the mode unless ``name`` says otherwise (its etcd prefix follows the name).
    """
    setup = setup_for(mode, read(config))
    return ApiServerOptions(
        name=name or mode,
        admission=setup,
        webhooks=mode != "in-tree",
        webhook_config=config,
        extra_args=extra_args,
    )
