"""``make cluster``: a control plane in the foreground until Ctrl-C or SIGTERM.

stdout carries exactly two lines, ``KUBECONFIG=<path>`` and then ``ready``, so a script can
start it in the background and wait for the second line; everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from controlplane.harness.admission import MODES, Untranslatable
from controlplane.harness.binaries import NotBuilt
from controlplane.harness.components import ControllerManagerOptions
from controlplane.harness.controlplane import ControlPlaneOptions, running
from controlplane.harness.modes import apiserver_options
from controlplane.harness.process import ComponentError
from webhooks.core.config import ConfigError


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the `with` block unwinds and stops every component


def main(argv: Sequence[str] | None = None) -> int:
    """Start, print the kubeconfig and ``ready``, keep running; exit 0 on a clean stop."""
    parser = argparse.ArgumentParser(prog="make cluster", description=__doc__)
    parser.add_argument("--mode", choices=MODES, default="in-tree")
    parser.add_argument("--config", type=Path, help="placement-webhooks config file")
    parser.add_argument("--node-monitor-period", default="5s")
    parser.add_argument("--node-monitor-grace-period", default="50s")
    args = parser.parse_args(argv)
    # SIGINT too: a shell that starts us in the background hands us SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler of its own.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    try:
        options = ControlPlaneOptions(
            apiservers=(apiserver_options(args.mode, args.config),),
            controller_manager=ControllerManagerOptions(
                node_monitor_period=args.node_monitor_period,
                node_monitor_grace_period=args.node_monitor_grace_period,
            ),
        )
        with running(options) as plane:
            steps = ", ".join(f"{what} {at:.1f} s" for what, at in plane.timeline)
            print(
                f"control plane ({args.mode}) up in {plane.started_in:.1f} s ({steps}); "
                f"logs in {plane.directory}",
                file=sys.stderr,
            )
            print(f"KUBECONFIG={plane.api.kubeconfig}", flush=True)
            print("ready", flush=True)
            while True:
                plane.check()
                time.sleep(1)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 0
    except (Untranslatable, ConfigError, NotBuilt, ComponentError) as exc:
        print(f"make cluster: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, Untranslatable | ConfigError) else 1


if __name__ == "__main__":
    sys.exit(main())
