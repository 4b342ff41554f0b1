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
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.certfiles import SecretVolume
from tests.e2e.serving import Server, free_port, launch, stop
from webhooks import certs

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"


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


def test_the_build_is_multi_stage_and_the_runtime_takes_only_wheels_from_the_build() -> None:
    froms = [i for i in INSTRUCTIONS if i.keyword == "FROM"]
    assert len(froms) >= 2
    assert froms[0].args.endswith(" AS build")
    uses_build = [i for i in INSTRUCTIONS if i.stage == FINAL and "from=build" in i.args]
    assert uses_build, "the runtime stage must take the wheels from the build stage"
    [install] = [i for i in _final("RUN") if "pip install" in i.args]
    assert "--no-index" in install.args, "the runtime installs only the wheels built before"
    assert not _final("COPY"), "no sources are copied into the runtime image"


def test_the_base_is_a_pinned_slim_python() -> None:
    [arg] = [i for i in INSTRUCTIONS if i.keyword == "ARG" and i.args.startswith("PYTHON_IMAGE=")]
    image = arg.args.partition("=")[2]
    name, _, tag = image.partition(":")
    assert name == "python"
    assert "slim" in tag and tag[0].isdigit(), "a versioned slim tag, never latest"
    assert all(i.args.split()[0] == "${PYTHON_IMAGE}" for i in INSTRUCTIONS if i.keyword == "FROM")


def test_the_runtime_runs_as_a_numeric_non_root_user() -> None:
    [user] = _final("USER")
    uid, _, gid = user.args.partition(":")
    assert uid.isdigit() and gid.isdigit(), "numeric, so runAsNonRoot can verify it"
    assert int(uid) != 0 and int(gid) != 0
    final = [i for i in INSTRUCTIONS if i.stage == FINAL]
    assert all(i.keyword != "RUN" for i in final[final.index(user) :]), "USER after every RUN"


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


def test_the_build_context_is_only_what_the_build_copies() -> None:
    copied: list[str] = []
    for instruction in INSTRUCTIONS:
        if instruction.keyword == "COPY" and "--from" not in instruction.args:
            copied += instruction.args.split()[:-1]
    assert sorted(copied) == [
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "requirements/build.txt",
        "requirements/serve.txt",
        "webhooks",
    ]
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    allowed = [entry[1:] for entry in ignore[ignore.index("*") + 1 :] if entry.startswith("!")]
    assert sorted(allowed) == sorted(copied)


def test_the_build_installs_only_from_the_lock_and_the_project_without_dependencies() -> None:
    [build] = [i.args for i in INSTRUCTIONS if i.keyword == "RUN" and i.stage == 0]
    steps = [step.strip() for step in build.split("&&")]
    assert steps == [
        "python -m pip install --require-hashes -r requirements/build.txt",
        "python -m pip wheel --require-hashes --wheel-dir /wheels -r requirements/serve.txt",
        "python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .",
    ], "the serving set from the lock, hashes checked, then the project with no resolving"
    [install] = [i for i in _final("RUN") if "pip install" in i.args]
    assert "--no-deps" in install.args, "the runtime installs the checked wheels as they are"


# --------------------------------------------------------------------------- the command


def _run(cmd: list[str], cwd: Path, timeout: float) -> None:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{shlex.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"


def _secret_dir(root: Path) -> Path:
    """A Kubernetes Secret volume layout (``..data`` symlinks) with a fresh chain."""
    volume = SecretVolume(root)
    volume.publish(certs.generate(root.parent / "chain", hosts=certs.DEV_HOSTS).ca.parent)
    return root


@pytest.mark.slow
def test_the_wheel_in_a_fresh_virtualenv_runs_the_images_command(tmp_path: Path) -> None:
    context = tmp_path / "context"
    context.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, context / name)
    shutil.copytree(
        ROOT / "webhooks", context / "webhooks", ignore=shutil.ignore_patterns("__pycache__")
    )
    wheels = tmp_path / "wheels"
    _run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
            *("--no-build-isolation", "-w", str(wheels), "."),
        ],
        context,
        300,
    )
    [wheel] = wheels.glob("placement_webhooks-*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, 120)
    pip = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    # As the image does: the serving set from the lock, hashes checked, then the project.
    _run([*pip, "--require-hashes", "-r", str(ROOT / "requirements" / "serve.txt")], tmp_path, 300)
    _run([*pip, "--no-deps", str(wheel)], tmp_path, 300)

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
    command = [str(venv / "bin" / entrypoint), *(substitute.get(a, a) for a in _exec_form("CMD"))]
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    scratch = tmp_path / "tmpfs"
    scratch.mkdir()
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(workdir),
        **_env(),
        "TMPDIR": str(scratch),
    }
    log = tmp_path / "server.log"
    process = launch(command, cwd=workdir, env=env, log=log)
    server = Server(process, port, secret / certs.CA_FILE, log)
    try:
        statuses: dict[str, int] = {}
        deadline = time.monotonic() + 30
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
    assert str(venv) in (venv / "bin" / entrypoint).read_text().splitlines()[0]
