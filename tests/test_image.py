"""The container image, tested without a Docker engine: its structure, then its exact command.

The structural checks read the Dockerfile as Docker does (instructions, continuation
lines, exec form). The slow test does what the build does (the serving set from the lock,
hashes checked, then a wheel from exactly the files the Dockerfile copies, with no
dependencies of its own, in a fresh virtualenv) and runs the image's ENTRYPOINT and CMD with
only the mounted paths and the bind address substituted.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.version import Version

import webhooks
from controlplane.harness.process import free_port
from tests.certfiles import SecretVolume
from tests.e2e.serving import Server, launch, stop
from tests.imagelayer import DEBIAN_PYTHON_BIN, build_layer
from webhooks.certs import pki

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction: keyword, raw arguments, and its build stage index."""

    keyword: str
    args: str
    stage: int


def parse(text: str) -> list[Instruction]:
    """Instructions in order, with continuation lines joined and comments dropped."""
    instructions: list[Instruction] = []
    stage = -1
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = (pending + stripped).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        instructions.append(Instruction(keyword, args.strip(), stage))
    assert not pending, "a continuation line runs off the end of the file"
    return instructions


INSTRUCTIONS = parse(DOCKERFILE.read_text(encoding="utf-8"))
FINAL = max(i.stage for i in INSTRUCTIONS)


def _exec_form(keyword: str) -> list[str]:
    [found] = [i for i in INSTRUCTIONS if i.keyword == keyword]
    value = json.loads(found.args)  # shell form is not JSON and fails here
    assert isinstance(value, list) and all(isinstance(v, str) for v in value)
    return value


def _final(keyword: str) -> list[Instruction]:
    return [i for i in INSTRUCTIONS if i.keyword == keyword and i.stage == FINAL]


def _env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in _final("ENV"):
        for pair in shlex.split(instruction.args):
            key, _, value = pair.partition("=")
            env[key] = value
    return env


# --------------------------------------------------------------------------- structure

DIGEST = re.compile(r"^(?P<name>[^:@]+):(?P<tag>[^@]+)@sha256:[0-9a-f]{64}$")
#: The Python of each distroless Debian release: Debian's own python3 (debian12: 3.11).
DEBIAN_PYTHON = {"debian12": ("3.11", "bookworm"), "debian13": ("3.13", "trixie")}


def _arg(name: str) -> str:
    [arg] = [i for i in INSTRUCTIONS if i.keyword == "ARG" and i.args.startswith(f"{name}=")]
    return arg.args.partition("=")[2]


def _stage(name: str) -> int:
    [found] = [
        i.stage for i in INSTRUCTIONS if i.keyword == "FROM" and i.args.endswith(f" AS {name}")
    ]
    return found


def _runtime_python() -> tuple[str, str]:
    """(python minor, Debian codename) of the runtime base."""
    match = DIGEST.match(_arg("PYTHON_RUNTIME_IMAGE"))
    assert match, "the runtime base is pinned by digest"
    release = match["name"].rsplit("-", 1)[1]
    return DEBIAN_PYTHON[release]


def test_the_build_is_multi_stage_and_the_runtime_takes_only_the_build_s_layer() -> None:
    froms = [i.args for i in INSTRUCTIONS if i.keyword == "FROM"]
    assert froms[0] == "${PYTHON_BUILD_IMAGE} AS build"
    assert froms[-1] == "${PYTHON_RUNTIME_IMAGE} AS runtime"
    assert [i.args for i in _final("COPY")] == ["--from=build /rootfs/ /"]
    assert _final("RUN") == [], "nothing runs in the runtime: it has no shell and no pip"


def test_both_bases_are_pinned_by_digest() -> None:
    build, runtime = (
        DIGEST.match(_arg("PYTHON_BUILD_IMAGE")),
        DIGEST.match(_arg("PYTHON_RUNTIME_IMAGE")),
    )
    assert build and runtime, "name:tag@sha256:<64 hex>, never a tag alone"
    assert build["name"] == "python"
    assert runtime["name"].startswith("gcr.io/distroless/python3-debian")
    assert runtime["tag"] == "nonroot"
    assert {i.args.split()[0] for i in INSTRUCTIONS if i.keyword == "FROM"} >= {
        "${PYTHON_BUILD_IMAGE}",
        "${PYTHON_RUNTIME_IMAGE}",
    }


def test_the_build_python_and_layout_match_the_runtime_s_python() -> None:
    # Compiled wheels are built for one ABI and glibc: the build stage runs the runtime's
    # Python minor on the runtime's Debian release, and lays files out for that minor.
    minor, codename = _runtime_python()
    tag = DIGEST.match(_arg("PYTHON_BUILD_IMAGE"))["tag"]  # type: ignore[index]
    assert tag == f"{minor}-slim-{codename}"
    layout = " ".join(i.args for i in INSTRUCTIONS if i.stage == 0 and i.keyword == "RUN")
    assert f"/usr/bin/python{minor} -m pip install --no-index --no-deps" in layout
    assert f"/rootfs/usr/local/lib/python{minor}/dist-packages" in layout
    assert Version(minor) >= Version(PYPROJECT["project"]["requires-python"].removeprefix(">="))


def test_the_runtime_runs_as_a_numeric_non_root_user() -> None:
    [user] = _final("USER")
    uid, _, gid = user.args.partition(":")
    assert uid.isdigit() and gid.isdigit(), "numeric, so runAsNonRoot can verify it"
    assert int(uid) != 0 and int(gid) != 0


def test_nothing_is_fetched_from_urls_and_nothing_is_added() -> None:
    assert [i for i in INSTRUCTIONS if i.keyword == "ADD"] == []
    for instruction in INSTRUCTIONS:
        if instruction.keyword == "RUN":
            assert "curl" not in instruction.args and "wget" not in instruction.args


def test_entrypoint_and_cmd_are_exec_form_and_serve_from_mounted_paths() -> None:
    assert _exec_form("ENTRYPOINT") == ["placement-webhooks"]
    cmd = _exec_form("CMD")
    assert cmd[0] == "serve"
    options = dict(zip(cmd[1::2], cmd[2::2], strict=True))
    assert options["--bind"] == "0.0.0.0:8443"
    assert options["--metrics-bind"] == "0.0.0.0:8080"
    assert options["--config"].startswith("/etc/placement-webhooks/")
    assert options["--cert-dir"].startswith("/etc/placement-webhooks/")
    assert [i.args for i in _final("EXPOSE")] == ["8443 8080"]


def test_the_runtime_writes_no_bytecode_and_keeps_temporary_files_on_a_tmpfs() -> None:
    env = _env()
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["TMPDIR"] == "/dev/shm"
    assert "PYTHONPATH" not in env, "the packages are where Debian's Python looks anyway"


def test_the_image_carries_oci_labels() -> None:
    labels: dict[str, str] = {}
    for instruction in _final("LABEL"):
        for pair in shlex.split(instruction.args):
            key, _, value = pair.partition("=")
            labels[key] = value
    prefix = "org.opencontainers.image."
    assert {key.removeprefix(prefix) for key in labels} == {
        "title",
        "description",
        "version",
        "revision",
        "source",
        "licenses",
        "base.name",
    }
    assert labels[prefix + "licenses"] == PYPROJECT["project"]["license"]
    assert labels[prefix + "base.name"] == "${PYTHON_RUNTIME_IMAGE}"
    [version] = [i.args for i in _final("ARG") if i.args.startswith("VERSION=")]
    assert version == f"VERSION={webhooks.__version__}"


def test_the_sbom_is_made_from_the_lock_by_a_locked_generator() -> None:
    sbom_build = _stage("sbom-build")
    runs = [i.args for i in INSTRUCTIONS if i.stage == sbom_build and i.keyword == "RUN"]
    [run] = runs
    steps = [step.strip() for step in run.split("&&")]
    assert steps[0] == "python -m pip install --require-hashes -r requirements/sbom.txt"
    # The version goes into the copy of pyproject.toml first: the generator reads no dynamic one.
    assert steps[1].startswith("python -c 'import pathlib, runpy;")
    assert 'runpy.run_path("webhooks/__init__.py")["__version__"]' in steps[1]
    assert steps[2].startswith("cyclonedx-py requirements requirements/serve.txt ")
    assert "--output-reproducible" in steps[2] and "--validate" in steps[2]
    sbom = _stage("sbom")
    assert [i.args for i in INSTRUCTIONS if i.stage == sbom and i.keyword == "FROM"] == [
        "scratch AS sbom"
    ]


def test_the_build_context_is_only_what_the_build_copies() -> None:
    copied: set[str] = set()
    for instruction in INSTRUCTIONS:
        if instruction.keyword == "COPY" and "--from" not in instruction.args:
            copied |= set(instruction.args.split()[:-1])
    assert sorted(copied) == [
        "LICENSE",
        "README.md",
        "placement_webhooks.py",
        "pyproject.toml",
        "requirements/build.txt",
        "requirements/sbom.txt",
        "requirements/serve.txt",
        "webhooks",
    ]
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    allowed = [entry[1:] for entry in ignore[ignore.index("*") + 1 :] if entry.startswith("!")]
    assert sorted(allowed) == sorted(copied)


def test_the_build_installs_only_from_the_lock_and_the_project_without_dependencies() -> None:
    wheels, layout = [i.args for i in INSTRUCTIONS if i.keyword == "RUN" and i.stage == 0]
    steps = [step.strip() for step in wheels.split("&&")]
    assert steps == [
        "python -m pip install --require-hashes -r requirements/build.txt",
        "python -m pip wheel --require-hashes --wheel-dir /wheels -r requirements/serve.txt",
        "python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .",
    ], "the serving set from the lock, hashes checked, then the project with no resolving"
    assert "--no-index --no-deps" in layout, "the layer holds the checked wheels as they are"


# --------------------------------------------------------------------------- the command


def _run(cmd: list[str], cwd: Path, timeout: float) -> None:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{shlex.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"


def _secret_dir(root: Path) -> Path:
    """A Kubernetes Secret volume layout (``..data`` symlinks) with a fresh chain."""
    volume = SecretVolume(root)
    volume.publish(pki.generate(root.parent / "chain", hosts=pki.DEV_HOSTS).ca.parent)
    return root


def _can_run_as_the_image() -> str:
    """Why the layer cannot be run here as in the image ("" when it can)."""
    if not DEBIAN_PYTHON_BIN.is_file():
        return f"{DEBIAN_PYTHON_BIN} (Debian 12's python3.11, the runtime's) is not installed"
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return "binding the layer over /usr/local needs root and unshare"
    return ""


@pytest.mark.slow
@pytest.mark.skipif(bool(_can_run_as_the_image()), reason=_can_run_as_the_image() or "-")
def test_the_layer_runs_the_images_command_with_debians_python_and_no_path_tricks(
    tmp_path: Path,
) -> None:
    root = build_layer(tmp_path)
    script = root / "usr" / "local" / "bin" / "placement-webhooks"
    assert script.read_text().splitlines()[0] == f"#!{DEBIAN_PYTHON_BIN}", "no shell in between"
    assert not list((root / "usr" / "local").rglob("pip/__init__.py")), "no pip in the image"

    mounts = tmp_path / "etc"
    mounts.mkdir()
    config = mounts / "config.yaml"
    config.write_text("plugins:\n  default-toleration-seconds:\n    notReadySeconds: 60\n")
    secret = _secret_dir(mounts / "tls")
    port, plain = free_port(), free_port()
    substitute = {
        "0.0.0.0:8443": f"127.0.0.1:{port}",
        "0.0.0.0:8080": f"127.0.0.1:{plain}",
        "/etc/placement-webhooks/config.yaml": str(config),
        "/etc/placement-webhooks/tls": str(secret),
    }
    [entrypoint] = _exec_form("ENTRYPOINT")
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    scratch = tmp_path / "tmpfs"
    scratch.mkdir()
    # The image's environment only (no PYTHONPATH, no virtualenv): the layer is bound over
    # /usr/local in a mount namespace of its own, where Debian's Python looks for packages
    # and PATH finds the ENTRYPOINT, as in the runtime.
    env = {**_env(), "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(workdir)}
    env["TMPDIR"] = str(scratch)
    bind = 'mount --bind "$0" /usr/local && exec "$@"'
    command = [
        *("unshare", "--mount", "--", "sh", "-c", bind, str(root / "usr" / "local")),
        *("env", "-i", *(f"{k}={v}" for k, v in env.items())),
        entrypoint,
        *(substitute.get(a, a) for a in _exec_form("CMD")),
    ]
    log = tmp_path / "server.log"
    process = launch(command, cwd=workdir, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, log=log)
    server = Server(process, port, secret / pki.CA_FILE, log)
    try:
        statuses: dict[str, int] = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(statuses) < 2:
            assert process.poll() is None, log.read_text(errors="replace")
            for path in ("/healthz", "/readyz"):
                with contextlib.suppress(OSError, http.client.HTTPException):
                    statuses[path] = server.request("GET", path)[0]
            time.sleep(0.2)
        assert statuses == {"/healthz": 200, "/readyz": 200}, log.read_text(errors="replace")
        probe = http.client.HTTPConnection("127.0.0.1", plain, timeout=10)
        probe.request("GET", "/readyz")
        assert probe.getresponse().status == 200  # the chart's probes use the plain port
        probe.close()
    finally:
        stop(process, grace=20)
    assert list(workdir.iterdir()) == [], "the server wrote into its working directory"
    assert list(scratch.iterdir()) == [], "the server left files in TMPDIR"


def test_the_size_figures_written_down_are_the_scripts_and_agree() -> None:
    """docs/operations.md keeps ``make image-size``'s output as printed; README quotes it."""
    docs = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    block = docs.split("- **Size**", 1)[1].split("```", 2)[1]
    printed = dict(line.strip().rsplit(": ", 1) for line in block.strip().splitlines())
    source = (ROOT / "tests" / "imagesize.py").read_text(encoding="utf-8")
    for label in printed:
        # Each line is one the script prints: its fixed words are in the script's f-string.
        fixed = re.split(r"\d[\d.]*|/\S+|\(.*\)", label)
        assert all(part.strip() in source for part in fixed), label
    before = printed["before (python:3.12-slim-bookworm + layer; pip, a shell, apt)"]
    after = printed["after (distroless python3-debian12 + layer; no pip, no shell)"]
    assert f"**{before}**" in docs and f"**{after}**" in docs, "the table's totals"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"{after} after and {before} before" in " ".join(readme.split())
