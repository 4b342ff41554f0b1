"""How much slower ``check`` is than just parsing the same YAML with libyaml, and what the
full config costs against the default one.

Builds a multi-document stream of realistic manifests (Deployments, DaemonSets, GPU Jobs,
CronJobs, Pods, Nodes, Services, ConfigMaps), then times ``--repeat`` (5) rounds in which
every function takes its turn (the best of each, and each ratio as the median of the
rounds' ratios with their spread):

* the baseline: ``yaml.load_all(text, Loader=yaml.CSafeLoader)``;
* ``check`` with the default config and with the full config (``bench/configs/full.yaml``):
  split into documents with lines, admit every object through the chain (object, Pod,
  second mutating pass), and render the text report; the Namespaces and RuntimeClasses of
  ``bench/configs/cluster.yaml`` given as ``--objects`` would give them;
* ``check`` of ``--pods`` Pods (2,000), the benchmarks' ~4 KB Pod in namespace ``shop``,
  with each config.

It prints the CPU times and the ratios; target: ``check`` at most 2x the parse. The full
config's ratio to the default is a diagnosis (its target is retired: docs/performance.md).
Run it with ``make bench-check`` or
``python -m bench.check_bench [--docs N] [--pods N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import yaml

from bench import payloads, scenario
from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import Config
from webhooks.dryrun import render
from webhooks.dryrun.engine import Engine, context_cluster
from webhooks.dryrun.report import Report
from webhooks.dryrun.run import admit_all
from webhooks.manifests.reader import Source, split
from webhooks.plugins import REGISTRY

TEMPLATES = [
    """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
  namespace: shop
  labels:
    app: web-{i}
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web-{i}
  template:
    metadata:
      labels:
        app: web-{i}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels:
                app: web-{i}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
        resources:
          requests:
            cpu: 100m
            memory: 128Mi
""",
    """apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent-{i}
  namespace: monitoring
spec:
  selector:
    matchLabels:
      app: agent-{i}
  template:
    metadata:
      labels:
        app: agent-{i}
    spec:
      hostNetwork: true
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      containers:
      - name: agent
        image: ghcr.io/example/agent:1.2
        resources:
          limits:
            memory: 64Mi
""",
    """apiVersion: batch/v1
kind: Job
metadata:
  name: train-{i}
  namespace: ml
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: nvcr.io/nvidia/pytorch:24.05-py3
        command: ["python", "train.py"]
        resources:
          limits:
            nvidia.com/gpu: 1
            cpu: "4"
            memory: 16Gi
""",
    """apiVersion: v1
kind: Service
metadata:
  name: svc-{i}
  namespace: shop
spec:
  selector:
    app: web-{i}
  ports:
  - port: 80
    targetPort: 8080
""",
    """apiVersion: v1
kind: Pod
metadata:
  name: debug-{i}
  namespace: shop
spec:
  tolerations:
  - key: dedicated
    operator: Equal
    value: debug
    effect: NoSchedule
  containers:
  - name: shell
    image: busybox:1.36
    command: ["sleep", "3600"]
""",
    """apiVersion: batch/v1
kind: CronJob
metadata:
  name: report-{i}
  namespace: shop
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: busybox:1.36
""",
    """apiVersion: v1
kind: Node
metadata:
  name: node-{i}
  labels:
    kubernetes.io/hostname: node-{i}
spec:
  taints:
  - key: dedicated
    value: ml
    effect: NoSchedule
""",
    """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings-{i}
  namespace: shop
data:
  LOG_LEVEL: info
  FEATURE_FLAGS: "a,b,c"
""",
]


def stream(count: int) -> str:
    """``count`` documents cycling through the templates, separated by ``---``."""
    docs = [TEMPLATES[i % len(TEMPLATES)].format(i=i) for i in range(count)]
    return "---\n" + "---\n".join(docs)


def rounds(fns: list[Callable[[], Any]], repeat: int) -> list[list[float]]:
    """CPU time of each function in each of ``repeat`` interleaved rounds.

    CPU time of this process, not wall time, and the functions take turns within a round,
    because the machines this runs on are shared: another job's load then slows both sides
    alike instead of whichever happened to run during it.
    """
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            gc.collect()
            start = time.process_time()
            fn()
            times[i].append(time.process_time() - start)
    return times


def pods(count: int) -> str:
    """``count`` copies of the benchmarks' Pod (``bench/payloads.py``), named apart."""
    docs = []
    for i in range(count):
        obj = payloads.pod(2, big=False)
        obj["metadata"] = {**obj["metadata"], "name": f"web-{i}"}
        docs.append(yaml.safe_dump(obj, sort_keys=False))
    return "---\n" + "---\n".join(docs)


def checker(text: str, config: Config, base: StaticCluster) -> Callable[[], None]:
    """``check`` of ``text`` with ``config`` over ``base`` (plus what ``text`` defines)."""
    options = render.Options(rules=render.rules_of(REGISTRY.plugins))

    def check() -> None:
        docs, problem = split(Source("bench.yaml", text))
        assert problem is None
        cluster = StaticCluster()
        for table in ("runtime_classes", "namespaces"):
            getattr(cluster, table).update(getattr(base, table))
        admission = Admission(REGISTRY, config, context_cluster(docs, cluster))
        report = admit_all(Engine(admission), docs, Report(files=1))
        render.text(report, options)

    return check


def main() -> None:
    """Print the baseline time, the check times and their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    configs = {name: scenario.config(name) for name in scenario.CONFIG_FILES}
    for name, cfg in configs.items():
        print(scenario.describe(name, cfg))
    text = stream(args.docs)
    many = pods(args.pods)
    base = scenario.cluster()

    def parse() -> None:
        list(yaml.load_all(text, Loader=yaml.CSafeLoader))

    times = rounds(
        [
            parse,
            checker(text, configs["default"], base),
            checker(text, configs["full"], base),
            checker(many, configs["default"], base),
            checker(many, configs["full"], base),
        ],
        args.repeat,
    )
    baseline, default, full, pods_default, pods_full = (min(t) for t in times)
    parse_t, default_t, full_t, pods_default_t, pods_full_t = times
    print(f"documents:               {args.docs}; best of {args.repeat} rounds, CPU time")
    print(f"CSafeLoader parse:       {baseline:.3f} s")
    for name, best, each in (("default", default, default_t), ("full", full, full_t)):
        per_round = scenario.spread(scenario.ratios(each, parse_t))
        print(f"check, {name + ' config:':17} {best:.3f} s; vs the parse {per_round} (<= 2x)")
    print(f"full / default:          {scenario.spread(scenario.ratios(full_t, default_t))}")
    print(f"{args.pods} pods in namespace shop:")
    print(f"check, default config:   {pods_default:.3f} s")
    print(f"check, full config:      {pods_full:.3f} s")
    ratio = scenario.spread(scenario.ratios(pods_full_t, pods_default_t))
    print(f"full / default:          {ratio}")


if __name__ == "__main__":
    main()
