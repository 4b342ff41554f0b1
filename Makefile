# placement-webhooks — the two quick-start targets are `make serve` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --quiet --disable-pip-version-check
LOCKS  := requirements

# Installs come only from the committed lock (requirements/*.txt, exact versions with
# hashes): build.txt holds pip and the build backend, serve.txt what the server needs at run
# time, test.txt that plus the test, schema and otlp extras. The project itself is installed
# with --no-deps and without build isolation, so nothing unpinned is fetched. Each stamp
# depends on the files it installs from: a changed lock reinstalls.
# setuptools announces every editable install with a banner whose only advice is not to
# shadow the package with a same-named folder; that one notice is filtered by its text, so a
# real warning about the project's metadata (a deprecation) still shows.
EDITABLE := PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(PIP) install --no-deps --no-build-isolation -e .
SERVE_STAMP := $(VENV)/.serve-installed
TEST_STAMP  := $(VENV)/.test-installed

.PHONY: dist dist-check krew-manifest matrix scale scale-tools sweep yaml-reference chart-native image-size serve test lint typecheck unit system-deps properties bench bench-deps bench-check bench-churn bench-hostile bench-audit bench-growth lock lock-upgrade clean controlplane controlplane-mod cluster e2e

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	$(PYTHON) -m venv $(VENV)

$(SERVE_STAMP): $(LOCKS)/build.txt $(LOCKS)/serve.txt pyproject.toml | $(BIN)/python
	$(PIP) install --require-hashes -r $(LOCKS)/build.txt
	$(PIP) install --require-hashes -r $(LOCKS)/serve.txt
	$(EDITABLE)
	@touch $@

$(TEST_STAMP): $(LOCKS)/build.txt $(LOCKS)/test.txt pyproject.toml | $(BIN)/python
	$(PIP) install --require-hashes -r $(LOCKS)/build.txt
	$(PIP) install --require-hashes -r $(LOCKS)/test.txt
	$(EDITABLE)
	@touch $@

BUILD_STAMP := $(VENV)/.build-installed

$(BUILD_STAMP): $(LOCKS)/build.txt | $(BIN)/python
	$(PIP) install --require-hashes -r $(LOCKS)/build.txt
	@touch $@

# The sdist from the tree, then the wheel from the sdist, by the locked setuptools' PEP 517
# hooks without build isolation (tests/distbuild.py); tests/test_dist.py checks what both
# hold. `make dist-check` installs the wheel into a fresh venv outside the tree from the
# lock's pins (PyPI, hashes checked) and runs the commands, as the slow test does.
dist: $(BUILD_STAMP)
	rm -rf dist
	$(BIN)/python -m tests.distbuild dist

dist-check: $(TEST_STAMP)
	$(BIN)/pytest -p no:cacheprovider tests/test_dist.py -m slow

# The kubectl plugin's krew archive and manifest for a release (docs/kubectl.md): after `make
# dist`, dist/kubectl-placement-v<version>.tar.gz (the launcher krew/kubectl-placement, the
# wheel, the serving lock, the LICENSE; reproducible bytes) and dist/placement.yaml, which is
# krew/placement.yaml with the archive's sha256 and KREW_URL/<archive> as its uri. KREW_URL
# is where the release serves the archive, e.g. KREW_URL=https://example.com/releases/v0.1.0.
krew-manifest: dist
	@test -n "$(KREW_URL)" || { echo "make krew-manifest needs KREW_URL=<where the release serves the archive>" >&2; exit 2; }
	$(BIN)/python -m tests.krewbuild dist "$(KREW_URL)"

serve: $(SERVE_STAMP)
	$(BIN)/placement-webhooks serve

# The lock is made by uv, itself installed from its own lock into a venv of its own. `make
# lock` brings the lock in line with pyproject.toml and keeps every pin that still fits;
# `make lock-upgrade` moves every pin to the newest release that fits. Universal (every
# platform, Python 3.11 and later), so the image's Python installs from the same files.
LOCK_TOOL := $(VENV)/lock-tool
UV        := $(LOCK_TOOL)/bin/uv
UV_FLAGS  := --quiet --universal --python-version 3.11 --generate-hashes --custom-compile-command 'make lock'

$(UV): $(LOCKS)/uv.txt
	$(PYTHON) -m venv $(LOCK_TOOL)
	$(LOCK_TOOL)/bin/python -m pip --quiet --disable-pip-version-check install --require-hashes -r $(LOCKS)/uv.txt
	@touch $@

lock: $(UV)
	$(UV) pip compile $(UV_FLAGS) $(UPGRADE) pyproject.toml --extra test --extra schema --extra otlp -o $(LOCKS)/test.txt
	$(UV) pip compile $(UV_FLAGS) $(UPGRADE) pyproject.toml -c $(LOCKS)/test.txt -o $(LOCKS)/serve.txt
	$(UV) pip compile $(UV_FLAGS) $(UPGRADE) $(LOCKS)/build.in -o $(LOCKS)/build.txt
	$(UV) pip compile $(UV_FLAGS) $(UPGRADE) $(LOCKS)/sbom.in -o $(LOCKS)/sbom.txt
	$(UV) pip compile $(UV_FLAGS) $(UPGRADE) $(LOCKS)/uv.in -o $(LOCKS)/uv.txt

lock-upgrade:
	$(MAKE) lock UPGRADE=--upgrade

lint: $(TEST_STAMP)
	$(BIN)/ruff check webhooks placement_webhooks.py tests bench controlplane
	$(BIN)/ruff format --check webhooks placement_webhooks.py tests bench controlplane
	$(BIN)/lint-imports

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

# Debian packages the tests use: openssl (certificate chains are checked with `openssl verify`).
system-deps:
	@command -v openssl >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq openssl; }

unit: $(TEST_STAMP) system-deps
	$(BIN)/pytest

test: lint typecheck unit

# Benchmarks print figures; ratios are measured side by side in one run (docs/performance.md).
# Each one that runs the chain runs it with the default config and with the full one
# (bench/configs/full.yaml); metrics_bench and framing_bench run no chain.
bench: $(TEST_STAMP) bench-deps
	$(BIN)/python -m bench.plugin_bench
	$(BIN)/python -m bench.chain_bench
	$(BIN)/python -m bench.metrics_bench
	$(BIN)/python -m bench.framing_bench
	$(BIN)/python -m bench.app_bench
	$(BIN)/python -m bench.http_bench
	$(BIN)/python -m bench.hostile_bench
	$(BIN)/python -m bench.check_bench
	$(BIN)/python -m bench.audit_bench
	$(BIN)/python -m bench.churn_bench
	$(BIN)/python -m bench.growth_bench

# Reviews on new connections while 500 idle TCP, 100 silent TLS and 20 byte-a-second
# clients hold connections (targets: p99 <= 50 ms, no errors, worker RSS <= 80 MiB).
bench-hostile: $(TEST_STAMP)
	$(BIN)/python -m bench.hostile_bench

# wrk drives the HTTP benchmark; installed from Debian's packages when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
bench-deps:
	@command -v wrk >/dev/null 2>&1 || { \
		echo "installing wrk (Debian package)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq wrk; }

# Every input surface at size N and 2N side by side, time and peak memory (target: at most
# 2.2x per doubling; docs/operations.md, "Input budgets"). ARGS passes options, e.g.
# ARGS='--only plugin --rounds 5'.
bench-growth: $(TEST_STAMP)
	$(BIN)/python -m bench.growth_bench $(ARGS)

# audit of a fake API server holding 20,000 pods in 40 Deployments, read in pages of 500
# (targets: at most 60 s wall time and 250 MiB peak RSS per run)
bench-audit: $(TEST_STAMP)
	$(BIN)/python -m bench.audit_bench

# check over 10,000 documents against a plain CSafeLoader parse (target: at most 2x), and
# over 2,000 pods with the full config against the default one (a diagnosis; docs/scale.md
# measures what a cluster feels)
bench-check: $(TEST_STAMP)
	$(BIN)/python -m bench.check_bench

# 100,000 reviews over 1,000 Namespaces whose annotations change every 100 reviews
# (target: worker RSS grows by less than 10 MiB)
bench-churn: $(TEST_STAMP)
	$(BIN)/python -m bench.churn_bench

# The property tests with 10,000 fresh examples each (make test runs a fixed, bounded set);
# failures are kept in .hypothesis/ and replayed first next time.
properties: $(TEST_STAMP)
	HYPOTHESIS_PROFILE=long $(BIN)/pytest tests/properties --hypothesis-show-statistics

# check, mutate twice and check --fail-on-mutation over directories of manifests, under the
# default and the full config (docs/real-world.md): DIRS='path/one path/two'; exit 1 when
# anything does not settle or read back. ARGS passes options, e.g. ARGS=--details.
sweep: $(TEST_STAMP)
	$(BIN)/python -m tests.realworld.sweep $(or $(DIRS),tests/realworld/corpus) $(ARGS)

# The image's size before and after the distroless runtime, without a Docker engine
# (docs/operations.md, "The image"): the layer built as the Dockerfile builds it, the bases
# from their Debian packages.
image-size: $(TEST_STAMP)
	$(BIN)/python -m tests.imagesize

# The real control plane (needs Go and the Go module proxy), with Helm and kwok beside it. One
# supported release (webhooks/k8s/releases.py): the newest, or KUBERNETES_VERSION=v1.34.4 (or
# 1.34) for another, as in `KUBERNETES_VERSION=v1.34.4 make e2e`; binaries built once into
# ${XDG_CACHE_HOME:-~/.cache}/placement-webhooks/controlplane/<version>/ (Helm, kwok and
# Kyverno into .../tools/) and reused.
controlplane: $(TEST_STAMP)
	@$(BIN)/python -m controlplane.build

# Regenerate controlplane/gomod/*/go.mod and go.sum (the chosen release's and the tools') after
# changing a release's row or a tool's version.
controlplane-mod: $(TEST_STAMP)
	$(BIN)/python -m controlplane.build --generate
	$(BIN)/python -m tests.controlplane.yamlreference --generate

# kubectl's answers for the plain-scalar corpus (tests/manifests/plaincorpus.py), written to
# tests/fixtures/yamlref/plain-scalars.json by kubectl's own YAML reader built from
# the pinned release's modules (controlplane/gomod/yamlref; needs Go and the module
# proxy). `make test` compares the manifest reader with the stored answers without Go;
# `make e2e` fails when they are stale. Run it after changing the corpus or the release.
yaml-reference: $(TEST_STAMP)
	$(BIN)/python -m tests.controlplane.yamlreference

# A control plane in the foreground: prints KUBECONFIG=<path>, then `ready`; Ctrl-C stops it.
# MODE=in-tree|webhooks|managed, CONFIG=<placement-webhooks config file> (default: built-in).
MODE ?= in-tree
CONFIG ?=
cluster: controlplane
	@$(BIN)/python -m controlplane.harness --mode=$(MODE) $(if $(CONFIG),--config=$(CONFIG))

# The fleet-scale bench (docs/scale.md): kwok and Kyverno built once into the control-plane
# cache, then every installation side by side through steady creates and storms on a kwok
# fleet, the faults, failover at scale and the offline tools at scale. Not part of CI (it
# takes most of an hour on 2 cores). NODES sizes the storms' and failover's fleets;
# OFFLINE_NODES/OFFLINE_PODS the explain/audit bed; ARGS passes options to the first part,
# e.g. ARGS='--modes in-tree,webhooks --only steady'.
NODES ?= 200
OFFLINE_NODES ?= 1000
OFFLINE_PODS ?= 30000
scale-tools: controlplane
	@$(BIN)/python -m controlplane.build --scale-tools

scale: scale-tools
	PLACEMENT_REQUIRE_KYVERNO=1 $(BIN)/pytest tests/controlplane/test_kyverno_peer.py
	$(BIN)/python -m bench.scale --nodes $(NODES) $(ARGS)
	$(BIN)/python -m bench.scale.faults
	$(BIN)/python -m bench.scale.failover --nodes $(NODES)
	$(BIN)/python -m bench.scale.offline --nodes $(OFFLINE_NODES) --pods $(OFFLINE_PODS)

# The release matrix (docs/releases.md): every supported release but the newest (the table in
# webhooks/k8s/releases.py), each built once into the cache (about 12 minutes cold), then
# the short suite (controlplane/matrix.py) on it. ARGS passes options, e.g. ARGS='--all'
# (the newest too), ARGS='--release 1.34 --full' (one release, the whole e2e suite).
# Not part of .ci/run: four cold builds do not fit its hour.
matrix: $(TEST_STAMP)
	$(BIN)/python -m controlplane.matrix $(ARGS)

# The real-control-plane suite. pyproject's addopts ignore tests/controlplane, so `make test`
# never collects it; naming the directory here collects it (pytest >= 8 collects a path
# given on the command line even when --ignore covers it; were that to change, this run
# would find no tests and fail, not pass silently).
e2e: controlplane
	$(BIN)/pytest tests/controlplane

# The chart's native admission policies (native.enabled), made from its default values with
# `placement-webhooks export --hybrid`; tests/charts/test_native_chart.py fails until current.
chart-native: $(TEST_STAMP)
	$(BIN)/python -m tests.charts.native

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
