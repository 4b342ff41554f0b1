"""Memory under churn: 100,000 reviews across 1,000 Namespaces whose annotations keep changing.

The real server (one worker x 4 threads, the full config ``bench/configs/full.yaml``)
reads its Namespaces from a fake API server in this process (``bench/fakeapi/``), by
list and watch into its cache, as from a cluster. The fake holds ``--namespaces`` (1,000)
Namespaces carrying every annotation the namespace plugins read (a node selector, default
tolerations, a whitelist, failover seconds, a dedicated group). Reviews (the benchmarks'
~4 KB Pod, ``/mutate``) go to the namespaces in turn on one keep-alive TLS connection;
after every ``--every`` (100) reviews the annotations of ``--changed`` (10) Namespaces
change (a MODIFIED event on the watch, a new resourceVersion), so each Namespace changes
``reviews / every * changed / namespaces`` times and every change is a new version for the
server's derived cache to parse, and for its bound to drop again.

Prints the worker's RSS (``VmRSS``) after a warm-up of one review per namespace (the
start), every tenth of the run, and at the end; the growth; the peak (``VmHWM``); and,
at the end, how many sampled namespaces the server answered with their latest
annotations (so the changes reached its cache). Target: growth under 10 MiB.

Usage: python -m bench.churn_bench [--reviews 100000] [--namespaces 1000] [--every 100]
       [--changed 10]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import shutil
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench import payloads, scenario, servers
from webhooks.certs.pki import generate

TARGET_MIB = 10.0


def namespace(name: str, version: int) -> dict[str, Any]:
    """Namespace ``name`` at annotation ``version``: every value names the version."""
    tolerations = [
        {"key": "team", "operator": "Equal", "value": f"v{version}", "effect": "NoSchedule"},
        {"key": "spot", "operator": "Exists", "effect": "NoSchedule"},
    ]
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {"env": "prod", "placement-webhooks.io/dedicated": "web"},
            "annotations": {
                "scheduler.alpha.kubernetes.io/node-selector": f"env=prod,version=v{version}",
                "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps(tolerations),
                "scheduler.alpha.kubernetes.io/tolerationsWhitelist": json.dumps(
                    [{"operator": "Exists"}]
                ),
                "placement-webhooks.io/not-ready-seconds": str(60 + version % 60),
            },
        },
    }


def body(name: str) -> bytes:
    """The benchmarks' review, for a Pod in namespace ``name``."""
    review = orjson.loads(payloads.small())
    review["request"]["namespace"] = name
    review["request"]["object"]["metadata"]["namespace"] = name
    return orjson.dumps(review)


class Client:
    """One keep-alive TLS connection to the server."""

    def __init__(self, port: int, cafile: Path) -> None:
        self.ctx = ssl.create_default_context(cafile=str(cafile))
        self.port = port
        self.conn = self._connect()

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("localhost", self.port, context=self.ctx, timeout=30)

    def mutate(self, data: bytes) -> dict[str, Any]:
        """POST /mutate; the response, decoded."""
        for attempt in (1, 2):
            try:
                self.conn.request(
                    "POST", "/mutate", body=data, headers={"Content-Type": "application/json"}
                )
                response = self.conn.getresponse()
                answer = response.read()
                if response.status != 200:
                    raise SystemExit(f"HTTP {response.status}: {answer[:200]!r}")
                return orjson.loads(answer)["response"]  # type: ignore[no-any-return]
            except (OSError, http.client.HTTPException):
                if attempt == 2:
                    raise
                self.conn.close()
                self.conn = self._connect()
        raise AssertionError("unreachable")


def selector_version(answer: dict[str, Any]) -> str | None:
    """The ``version`` the answer's patch puts into the nodeSelector, if any."""
    for op in orjson.loads(base64.b64decode(answer.get("patch", "") or b"W10=")):
        value = op.get("value")
        if (
            op.get("path") == "/spec/nodeSelector"
            and isinstance(value, dict)
            and "version" in value
        ):
            return value["version"]  # type: ignore[no-any-return]
        if op.get("path") == "/spec/nodeSelector/version":
            return value  # type: ignore[no-any-return]
    return None


def main() -> None:
    """Serve the namespaces, run the reviews and the changes, print the worker's memory."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--namespaces", type=int, default=1_000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--changed", type=int, default=10)
    args = parser.parse_args()
    print(scenario.describe("full", scenario.config("full")))
    names = [f"team-{i:04d}" for i in range(args.namespaces)]
    versions = dict.fromkeys(names, 0)
    objects = servers.cluster_objects() + [namespace(n, 0) for n in names]
    bodies = [body(n) for n in names]
    work = Path(tempfile.mkdtemp(prefix="churn-"))
    certs = work / "certs"
    generate(certs, hosts=["localhost", "127.0.0.1"])
    print(
        f"{args.reviews:,} reviews over {args.namespaces:,} namespaces, {args.changed} "
        f"namespaces' annotations changed every {args.every} reviews, through a fake API "
        "server's watch; the real server: 1 worker x 4 threads, full config"
    )
    with servers.served_cluster(work, objects) as (fake, configs):
        proc, port = servers.start("real", certs, 1, configs["full"])
        try:
            (worker,) = servers.workers(proc.pid)
            client = Client(port, certs / "ca.crt")
            for data in bodies:  # warm-up: one review per namespace, every one cached
                client.mutate(data)
            start_rss, _ = servers.memory_mib(worker)
            print(f"start (after {len(bodies):,} warm-up reviews): VmRSS {start_rss:.1f} MiB")
            started = time.monotonic()
            turn = 0
            for i in range(args.reviews):
                client.mutate(bodies[i % len(bodies)])
                if (i + 1) % args.every == 0:
                    for _ in range(args.changed):
                        name = names[turn % len(names)]
                        turn += 1
                        versions[name] += 1
                        fake.put(namespace(name, versions[name]))
                if (i + 1) % max(args.reviews // 10, 1) == 0:
                    rss, _ = servers.memory_mib(worker)
                    print(
                        f"  {i + 1:>7,} reviews, {turn:,} namespace changes: VmRSS {rss:.1f} MiB"
                        f" ({time.monotonic() - started:.0f} s)"
                    )
            end_rss, peak = servers.memory_mib(worker)
            time.sleep(1.0)  # let the last changes' events reach the cache
            sample = names[:: max(len(names) // 50, 1)]
            seen = sum(
                selector_version(client.mutate(bodies[names.index(n)])) == f"v{versions[n]}"
                for n in sample
            )
        finally:
            servers.stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    growth = end_rss - start_rss
    print(f"end: VmRSS {end_rss:.1f} MiB; peak (VmHWM) {peak:.1f} MiB")
    print(
        f"growth: {growth:+.1f} MiB (target < {TARGET_MIB:g} MiB): "
        f"{'within' if growth < TARGET_MIB else 'MISSED'}"
    )
    print(f"latest annotations in the server's answers: {seen} of {len(sample)} sampled namespaces")


if __name__ == "__main__":
    main()
