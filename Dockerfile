# syntax=docker/dockerfile:1
# placement-webhooks: docker build -t placement-webhooks:0.1.0 .
#   the SBOM alone:   docker build --target sbom --output type=local,dest=sbom .
#   with attestations: docker buildx build --sbom=true --provenance=mode=max -t ... .
#
# Runs as a numeric non-root user with a read-only root filesystem: it writes only under
# $TMPDIR (/dev/shm, a tmpfs in every container) and reads config and certificates from the
# mounted paths in CMD (the Helm chart mounts a ConfigMap and a Secret or an in-memory dir).
#
# Both bases are pinned by digest (multi-arch indexes). Debian 12's Python is 3.11, the
# distroless runtime's interpreter (/usr/bin/python3.11), so the build stage is CPython 3.11
# on Debian 12 too: the same ABI for the compiled wheels, the same glibc. To move a pin:
#   docker buildx imagetools inspect python:3.11-slim-bookworm
#   docker buildx imagetools inspect gcr.io/distroless/python3-debian12:nonroot
# and put each "Digest:" line here (tests/test_image.py checks the form and the pairing).
ARG PYTHON_BUILD_IMAGE=python:3.11-slim-bookworm@sha256:528257d48c1da0dcecc2e725d1ae34498d60c965f1241e39cd6a85a8859bdf84
ARG PYTHON_RUNTIME_IMAGE=gcr.io/distroless/python3-debian12:nonroot@sha256:7d1042ce588ab97019fe95c24ffca7bc5a82ccdac572511d5e09bda4435c89c5

FROM ${PYTHON_BUILD_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY requirements/build.txt requirements/serve.txt ./requirements/
COPY pyproject.toml README.md LICENSE placement_webhooks.py ./
COPY webhooks ./webhooks
# Everything comes from the committed lock (exact versions, hashes checked), as in the
# Makefile: the locked pip and build backend, then the serving set as wheels, then the
# project itself with no dependencies of its own to resolve.
RUN python -m pip install --require-hashes -r requirements/build.txt \
 && python -m pip wheel --require-hashes --wheel-dir /wheels -r requirements/serve.txt \
 && python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .
# The runtime's layer, laid out under /rootfs as the runtime's Debian Python finds it:
# packages in /usr/local/lib/python3.11/dist-packages (on Debian's sys.path), the
# placement-webhooks script in /usr/local/bin (on PATH). pip runs as /usr/bin/python3.11,
# so the script's "#!" line names the runtime's interpreter; the kernel runs it, no shell.
# Bytecode is compiled here (the root filesystem is read-only at run time).
RUN ln -s /usr/local/bin/python3.11 /usr/bin/python3.11 \
 && /usr/bin/python3.11 -m pip install --no-index --no-deps \
      --target /rootfs/usr/local/lib/python3.11/dist-packages /wheels/*.whl \
 && mv /rootfs/usr/local/lib/python3.11/dist-packages/bin /rootfs/usr/local/bin

# CycloneDX from the lock (every pinned version and its file hashes) and pyproject.toml, by
# a generator installed from its own lock. pyproject.toml's version is dynamic (read from
# webhooks/__init__.py, its one place) and the generator reads only static fields, so the
# copy here gets it written in first.
FROM ${PYTHON_BUILD_IMAGE} AS sbom-build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY requirements/sbom.txt requirements/serve.txt ./requirements/
COPY pyproject.toml README.md LICENSE ./
COPY webhooks ./webhooks
RUN python -m pip install --require-hashes -r requirements/sbom.txt \
 && python -c 'import pathlib, runpy; v = runpy.run_path("webhooks/__init__.py")["__version__"]; p = pathlib.Path("pyproject.toml"); p.write_text(p.read_text().replace("dynamic = [\"version\"]", f"version = \"{v}\"", 1))' \
 && cyclonedx-py requirements requirements/serve.txt --pyproject pyproject.toml \
      --of JSON --output-reproducible --validate -o /sbom/placement-webhooks.cdx.json

FROM scratch AS sbom
COPY --from=sbom-build /sbom/ /

FROM ${PYTHON_RUNTIME_IMAGE} AS runtime
ARG PYTHON_RUNTIME_IMAGE
ARG VERSION=0.1.0
ARG REVISION=""
ARG SOURCE=""
LABEL org.opencontainers.image.title="placement-webhooks" \
      org.opencontainers.image.description="Kubernetes admission webhooks for where pods may run: tolerations, taints, node affinity, RuntimeClass overhead." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_RUNTIME_IMAGE}"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TMPDIR=/dev/shm
# Only the layer the build stage laid out: no pip, no shell, nothing to run at build time.
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /
# 8443: admission (TLS); 8080: /metrics, /healthz, /readyz over plain HTTP.
EXPOSE 8443 8080
ENTRYPOINT ["placement-webhooks"]
CMD ["serve", "--bind", "0.0.0.0:8443", "--metrics-bind", "0.0.0.0:8080", "--config", "/etc/placement-webhooks/config.yaml", "--cert-dir", "/etc/placement-webhooks/tls"]
