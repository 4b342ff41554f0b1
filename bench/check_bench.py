"""How much slower ``check`` is than just parsing the same YAML with libyaml.

Builds a multi-document stream of realistic manifests (Deployments, DaemonSets, GPU Jobs,
CronJobs, Pods, Nodes, Services, ConfigMaps), then times, best of ``--repeat`` runs:

* the baseline: ``yaml.load_all(text, Loader=yaml.CSafeLoader)``;
* ``check``: split into documents with lines, admit every object through the configured
  chain (object, Pod, second mutating pass), and render the text report.

It prints both CPU times and the ratio; the target is at most 2x. Run it with
``make bench-check`` or ``python bench/check_bench.py [--docs N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import yaml

from webhooks.cluster.files import StaticCluster
from webhooks.core.admission import Admission
from webhooks.core.config import load_config
from webhooks.dryrun import formats
from webhooks.dryrun.engine import Engine, Report, context_cluster
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


def best_of(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Best CPU time of each function over ``repeat`` interleaved rounds.

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
    return [min(t) for t in times]


def main() -> None:
    """Print the baseline time, the check time and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = stream(args.docs)
    config = load_config(None, REGISTRY)
    options = formats.Options(rules=formats.rules_of(REGISTRY.plugins))

    def parse() -> None:
        list(yaml.load_all(text, Loader=yaml.CSafeLoader))

    def check() -> None:
        docs, problem = split(Source("bench.yaml", text))
        assert problem is None
        admission = Admission(REGISTRY, config, context_cluster(docs, StaticCluster()))
        report = Engine(admission).run(docs, Report(files=1))
        formats.text(report, options)

    baseline, checked = best_of([parse, check], args.repeat)
    print(f"documents:          {args.docs}")
    print(f"plugins:            {', '.join(REGISTRY.names)}")
    print(f"CSafeLoader parse:  {baseline:.3f} s CPU")
    print(f"check (text out):   {checked:.3f} s CPU")
    print(f"ratio:              {checked / baseline:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
