"""``placement-webhooks test``: run declarative policy test suites (``*.test.yaml``).

Named ``policytest``, the feature's name in every package, rather than ``test``, so no test
collector mistakes it for tests. Exit codes are what a pipeline reads: 0 every expectation
holds; 1 one does not; 2 unusable input (a missing path, a suite that does not parse or
lacks ``name``, a config that does not load), each reported ``file:line: reason`` on
stderr.
"""

from __future__ import annotations

import sys

import click

from webhooks.cli.check import output_option, parse_outputs, write_output
from webhooks.cli.common import fail, refuse_empty, report_problems
from webhooks.dryrun import policytest_render
from webhooks.dryrun.policytest import run_suites


@click.command("test")
@click.argument("paths", nargs=-1, metavar="PATH...")
@output_option("text or junit (text also goes to stdout when no format does)")
def policytest(paths: tuple[str, ...], outputs: tuple[str, ...]) -> None:
    """Run policy test suites: every *.test.yaml under each PATH (files, or directories
    searched recursively).

    A suite names a config, cluster objects and manifests (paths relative to the suite's
    file) and expects, per admitted object and optionally per plugin, a result (pass, fail,
    warn or skip) and a part of the object as admission stores it. A Pod named
    <workload>-pod is the Pod that workload's controller would create. Prints PASS or FAIL
    per expectation, with what differed.
    """
    targets = parse_outputs(outputs, list(policytest_render.FORMATS))
    if not paths:
        fail("no input: give PATH as test suite files (*.test.yaml) or directories")
    refuse_empty(paths, "PATH", stdin=False)
    if all(target is not None for _, target in targets):
        targets.append(("text", None))
    results = run_suites(paths)
    report_problems(results.problems)
    for name, target in targets:
        write_output(policytest_render.render(name, results), target)
    sys.exit(results.exit_code())
