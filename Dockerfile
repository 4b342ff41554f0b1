# syntax=docker/dockerfile:1
# placement-webhooks: docker build -t placement-webhooks:0.1.0 .
# Runs as a numeric non-root user with a read-only root filesystem: it writes only under
# $TMPDIR (/dev/shm, a tmpfs in every container) and reads config and certificates from the
# mounted paths in CMD (the Helm chart mounts a ConfigMap and a Secret there).
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY requirements/build.txt requirements/serve.txt ./requirements/
COPY pyproject.toml README.md LICENSE ./
COPY webhooks ./webhooks
# Everything comes from the committed lock (exact versions, hashes checked), as in the
# Makefile: the locked pip and build backend, then the serving set as wheels, then the
# project itself with no dependencies of its own to resolve. The lock is universal
# (Python 3.11 and later, every platform), so it covers this image's Python.
RUN python -m pip install --require-hashes -r requirements/build.txt \
 && python -m pip wheel --require-hashes --wheel-dir /wheels -r requirements/serve.txt \
 && python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .

FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    TMPDIR=/dev/shm
# Bind-mounting the wheels keeps them out of the image's layers; exactly the wheels the
# build stage checked against the lock are installed, with nothing left to resolve.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --no-deps /wheels/*.whl
USER 65532:65532
WORKDIR /
# 8443: admission (TLS); 8080: /metrics, /healthz, /readyz over plain HTTP.
EXPOSE 8443 8080
ENTRYPOINT ["placement-webhooks"]
CMD ["serve", "--bind", "0.0.0.0:8443", "--metrics-bind", "0.0.0.0:8080", "--config", "/etc/placement-webhooks/config.yaml", "--cert-dir", "/etc/placement-webhooks/tls"]
