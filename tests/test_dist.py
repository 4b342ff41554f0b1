"""The sdist and the wheel as a release would publish them, and the one version string.

The fast tests build both with the locked backend (``tests/distbuild.py``, about a second,
offline) and read what they hold: the wheel every file of the package (the code reads no
data files at run time; ``py.typed`` is the only one shipped), the console script, and
metadata a package index accepts; the sdist what a rebuild needs and nothing else. The slow
test installs the wheel into a fresh virtualenv outside the tree from the lock's pins and runs
the commands there, as a user would. The shadowing tests put a same-named ``webhooks``
ahead of ours and check the command says so in one line.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.metadata import Metadata

import webhooks
from tests.distbuild import ROOT, Dist, build
from webhooks.server.metrics import BUILD_INFO, BuildInfo

#: What the sdist may hold at its top, besides what setuptools writes (PKG-INFO, setup.cfg,
#: the egg-info): the rest of the tree (tests, fixtures, bench, controlplane, charts, caches,
#: a virtualenv) is not needed to rebuild and must not be there.
SDIST_TOP = {"LICENSE", "MANIFEST.in", "README.md", "pyproject.toml", "placement_webhooks.py"}
SDIST_WRITTEN = {"PKG-INFO", "setup.cfg", "placement_webhooks.egg-info"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return build(tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("unpacked"))


def _package_files() -> set[str]:
    """Every file of the package in the tree, as a wheel names it (no bytecode caches)."""
    files = {"placement_webhooks.py"}
    for path in (ROOT / "webhooks").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            files.add(path.relative_to(ROOT).as_posix())
    return files


def _metadata(wheel: Path) -> tuple[set[str], dict[str, list[str]], str]:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"placement_webhooks-{webhooks.__version__}.dist-info"
        message = Parser().parsestr(archive.read(f"{info}/METADATA").decode("utf-8"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode("utf-8")
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return names, fields, entry_points


def test_the_wheel_holds_every_file_of_the_package_and_nothing_of_the_tree_besides(
    dist: Dist,
) -> None:
    names, _, _ = _metadata(dist.wheel)
    shipped = {n for n in names if ".dist-info/" not in n}
    assert shipped == _package_files()
    assert "webhooks/py.typed" in shipped


def test_the_wheel_starts_both_commands_outside_the_package(dist: Dist) -> None:
    """The CLI and the kubectl plugin (an executable ``kubectl-placement`` on PATH is what
    kubectl runs as ``kubectl placement``), both behind the shadowing check."""
    _, _, entry_points = _metadata(dist.wheel)
    assert entry_points.split() == [
        "[console_scripts]",
        "kubectl-placement",
        "=",
        "placement_webhooks:kubectl",
        "placement-webhooks",
        "=",
        "placement_webhooks:main",
    ]


def test_the_metadata_of_both_passes_the_pypa_validator(dist: Dist) -> None:
    """Every field parses and is valid for its metadata version, as ``packaging`` (the
    validator twine and the package index build on) reads it: a bad field raises."""
    with zipfile.ZipFile(dist.wheel) as archive:
        info = f"placement_webhooks-{webhooks.__version__}.dist-info"
        wheel_metadata = archive.read(f"{info}/METADATA")
    with tarfile.open(dist.sdist) as archive:
        member = archive.extractfile(f"placement_webhooks-{webhooks.__version__}/PKG-INFO")
        assert member is not None
        sdist_metadata = member.read()
    for raw in (wheel_metadata, sdist_metadata):
        found = Metadata.from_email(raw, validate=True)
        assert (str(found.name), str(found.version)) == ("placement-webhooks", webhooks.__version__)


def test_the_wheels_metadata_has_what_an_index_checks(dist: Dist) -> None:
    """The fields a package index and ``twine check`` look at, beyond their validity."""
    _, fields, _ = _metadata(dist.wheel)
    one = {key: values[0] for key, values in fields.items() if len(values) == 1}
    assert one["Name"] == "placement-webhooks"
    assert one["Version"] == webhooks.__version__
    assert one["Requires-Python"] == ">=3.11"
    assert one["License-Expression"] == "Apache-2.0"
    assert one["Description-Content-Type"] == "text/markdown"
    assert fields["Metadata-Version"] == ["2.4"]
    runtime = {r.split(";")[0].split("<")[0].split(">")[0] for r in fields["Requires-Dist"]}
    assert {"flask", "gunicorn", "kubernetes", "prometheus-client", "cryptography"} <= runtime
    assert fields["Provides-Extra"] == ["schema", "explain", "otlp", "test"]
    with zipfile.ZipFile(dist.wheel) as archive:
        info = f"placement_webhooks-{webhooks.__version__}.dist-info"
        body = archive.read(f"{info}/METADATA").decode("utf-8").split("\n\n", 1)[1]
        assert "licenses/LICENSE" in "".join(archive.namelist())
    assert body.strip() == (ROOT / "README.md").read_text(encoding="utf-8").strip()


def test_the_sdist_holds_what_a_rebuild_needs_and_nothing_else(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as archive:
        members = [m.name for m in archive.getmembers() if m.isfile()]
    prefix = f"placement_webhooks-{webhooks.__version__}/"
    assert all(name.startswith(prefix) for name in members)
    relative = {name.removeprefix(prefix) for name in members}
    top = {name.split("/", 1)[0] for name in relative}
    assert top == SDIST_TOP | SDIST_WRITTEN | {"webhooks"}
    assert {n for n in relative if n.startswith("webhooks/")} | {"placement_webhooks.py"} == (
        _package_files()
    )
    assert not [n for n in relative if "__pycache__" in n or n.endswith(".pyc")]


def test_the_wheel_built_from_the_sdist_is_versioned_by_the_one_string(dist: Dist) -> None:
    assert dist.wheel.name == f"placement_webhooks-{webhooks.__version__}-py3-none-any.whl"
    assert dist.sdist.name == f"placement_webhooks-{webhooks.__version__}.tar.gz"


def test_every_place_that_shows_the_version_shows_the_one_string() -> None:
    """``--version``, SARIF's tool section and ``/metrics`` build info read one attribute."""
    from click.testing import CliRunner

    from webhooks.cli import main
    from webhooks.cli.check import version

    printed = CliRunner().invoke(main, ["--version"]).output
    assert printed == f"placement-webhooks, version {webhooks.__version__}\n"
    assert version() == webhooks.__version__
    [family] = BuildInfo().collect()
    assert family.name == BUILD_INFO
    [sample] = family.samples
    assert (sample.labels, sample.value) == ({"version": webhooks.__version__}, 1)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = {attr = "webhooks.__version__"}' in pyproject


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


#: The first lines of PyPI's ``webhooks`` 0.4.2 ``__init__.py``, as far as they matter here.
OTHER_INIT = b"__version__ = '0.3.1'\n\nfrom .decorators import *\n"


def _installed_over(root: Path) -> None:
    """Ours, then the other distribution installed over it: its __init__.py and RECORD."""
    shutil.copytree(
        ROOT / "webhooks", root / "webhooks", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / "webhooks" / "__init__.py").write_bytes(OTHER_INIT)
    info = root / "webhooks-0.4.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.0\nName: webhooks\nVersion: 0.4.2\n")
    (info / "top_level.txt").write_text("webhooks\n")
    record = f"webhooks/__init__.py,sha256={_digest(OTHER_INIT)},{len(OTHER_INIT)}\n"
    (info / "RECORD").write_text(record + "webhooks-0.4.2.dist-info/RECORD,,\n")


def _other_package(root: Path) -> None:
    """Another project's ``webhooks`` package, earlier on the path, with no metadata."""
    (root / "webhooks").mkdir()
    (root / "webhooks" / "__init__.py").write_bytes(OTHER_INIT)


def _single_module(root: Path) -> None:
    (root / "webhooks.py").write_text("VERSION = 1\n")


def _nothing(root: Path) -> None:
    """No shadow: the command runs."""


@pytest.mark.parametrize(
    ("lay_out", "expected"),
    [
        pytest.param(
            _installed_over,
            "belongs to webhooks 0.4.2, which shares its name; pip uninstall webhooks",
            id="PyPI's webhooks installed over ours is named, with the fix",
        ),
        pytest.param(
            _other_package,
            "is not placement-webhooks's and hides it",
            id="another webhooks package earlier on the path is pointed at",
        ),
        pytest.param(
            _single_module,
            "is not placement-webhooks's and hides it",
            id="a webhooks.py module earlier on the path is pointed at",
        ),
        pytest.param(_nothing, "", id="without a shadow the command runs"),
    ],
)
def test_a_shadowing_webhooks_is_reported_in_one_line(
    tmp_path: Path, lay_out: object, expected: str
) -> None:
    assert callable(lay_out)
    lay_out(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    code = "import placement_webhooks; placement_webhooks.main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if not expected:
        assert (proc.returncode, proc.stderr) == (0, "")
        assert proc.stdout == f"placement-webhooks, version {webhooks.__version__}\n"
        return
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("placement-webhooks: the Python package 'webhooks' at ")
    assert expected in line


#: PyPI's unrelated ``webhooks`` 0.4.2, pinned by hash: the shadow a user may install over us.
OTHER_WHEEL = (
    "webhooks==0.4.2 --hash=sha256:"
    "d705c5d8e6d3b485dae3071657360f22795b78bb0fa2652b00c7b086a2ffc05f\n"
)


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]
"""
NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _scrape(port: int, path: str) -> tuple[int, str]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


@pytest.mark.slow
def test_the_wheel_installed_outside_the_tree_serves_checks_explains_and_exports(
    dist: Dist, tmp_path: Path
) -> None:
    """A fresh venv, the serving set from the lock (hashes checked), the wheel with no deps."""
    import contextlib
    import time

    from controlplane.harness.process import free_port
    from tests.e2e.serving import launch, stop

    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    assert _run([sys.executable, "-m", "venv", str(venv)], work).returncode == 0
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    serve_lock = str(ROOT / "requirements" / "serve.txt")
    for args in (["--require-hashes", "-r", serve_lock], ["--no-deps", str(dist.wheel)]):
        proc = _run([*pip, "install", *args], work)
        assert proc.returncode == 0, proc.stderr
    command = str(venv / "bin" / "placement-webhooks")

    version = _run([command, "--version"], work)
    assert version.stdout == f"placement-webhooks, version {webhooks.__version__}\n"
    shutil.copy(ROOT / "examples" / "runtimeclass.yaml", work / "runtimeclass.yaml")
    checked = _run([command, "check", "runtimeclass.yaml"], work)
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stdout
    (work / "pod.yaml").write_text(POD)
    (work / "nodes.yaml").write_text(NODE)
    explained = _run([command, "explain", "pod.yaml", "--nodes", "nodes.yaml"], work)
    assert explained.returncode == 0, explained.stderr
    assert "fits 1 of 1 nodes: node-a" in explained.stdout
    exported = _run([command, "export", "--plugin", "runtime-class"], work)
    assert exported.returncode in {0, 1}, exported.stderr
    assert "kind: MutatingAdmissionPolicy" in exported.stdout
    plugin = str(venv / "bin" / "kubectl-placement")
    helped = _run([plugin, "--help"], work)
    assert helped.stdout.startswith("Usage: kubectl placement [OPTIONS] COMMAND [ARGS]...\n")
    checked = _run([plugin, "check", "-n", "default", "runtimeclass.yaml"], work)
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stdout

    port, plain = free_port(), free_port()
    bind = ["--bind", f"127.0.0.1:{port}", "--metrics-bind", f"127.0.0.1:{plain}"]
    log = tmp_path / "serve.log"
    process = launch(
        [command, "serve", "--workers", "1", *bind],
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "HOME": str(work)},
        log=log,
    )
    try:
        ready, metrics = 0, ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and ready != 200:
            assert process.poll() is None, log.read_text(errors="replace")
            with contextlib.suppress(OSError):
                ready = _scrape(plain, "/readyz")[0]
            time.sleep(0.2)
        assert ready == 200, log.read_text(errors="replace")
        metrics = _scrape(plain, "/metrics")[1]
    finally:
        stop(process, grace=20)
    assert f'{BUILD_INFO}{{version="{webhooks.__version__}"}} 1.0' in metrics

    other = tmp_path / "other.txt"
    other.write_text(OTHER_WHEEL)
    proc = _run([*pip, "install", "--no-deps", "--require-hashes", "-r", str(other)], work)
    assert proc.returncode == 0, proc.stderr
    shadowed = _run([command, "--version"], work)
    assert (shadowed.returncode, shadowed.stdout) == (2, "")
    [line] = shadowed.stderr.splitlines()
    assert "belongs to webhooks 0.4.2, which shares its name; pip uninstall webhooks" in line
