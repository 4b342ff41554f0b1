"""The lock (``requirements/*.txt``) agrees with ``pyproject.toml``, read offline.

Every install comes from the lock, so a dependency added to ``pyproject.toml`` but not
locked would be missing from a fresh install, and a bound raised without relocking would
install a version the project no longer accepts. What is checked, per lock file:

- every entry is pinned exactly (``==``) and carries sha256 hashes (``--require-hashes``);
- every requirement the file is made from has an entry whose version satisfies it;
- nothing else is there: the entries named as made from the inputs are exactly the
  inputs' requirements, and every other entry is reached from them through the
  ``# via`` annotations the lock tool writes, so a dependency dropped from
  ``pyproject.toml`` without relocking is caught;
- the serving set pins the same versions as the test set, so the server runs what the
  tests ran; and the lock is universal from the oldest Python the project allows, which
  covers the image's.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCKS = ROOT / "requirements"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
#: How the lock tool names a requirement that comes from ``pyproject.toml`` itself.
FROM_PYPROJECT = f"{PROJECT['name']} (pyproject.toml)"


@dataclass
class Entry:
    """One locked package: its pinned version, environment marker, hashes and parents."""

    name: str
    version: Version
    marker: str | None
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)(?:\s*;\s*(.+?))?\s*\\?$")


def parse_lock(text: str) -> dict[str, Entry]:
    """The entries of a lock file written by ``uv pip compile --generate-hashes``."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    in_via = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or (line.startswith("#") and current is None):
            continue
        if not raw.startswith((" ", "\t")):
            match = _PIN.match(line)
            assert match, f"not an exact pin: {line!r}"
            name = canonicalize_name(match[1])
            current = entries[name] = Entry(name, Version(match[2]), match[3])
            in_via = False
        elif current is None:
            raise AssertionError(f"an indented line before any entry: {line!r}")
        elif line.startswith("--hash="):
            current.hashes.append(line.removeprefix("--hash=").rstrip(" \\"))
        elif line == "# via":
            in_via = True
        elif line.startswith("# via "):
            current.via.append(line.removeprefix("# via ").strip())
            in_via = False
        elif in_via and line.startswith("#   "):
            current.via.append(line.removeprefix("#   ").strip())
        else:
            raise AssertionError(f"unexpected line in the entry of {current.name}: {line!r}")
    return entries


def _in_file(path: Path) -> list[Requirement]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Requirement(line) for line in (x.strip() for x in lines) if line and line[0] != "#"]


def _extras(*names: str) -> list[Requirement]:
    return [Requirement(r) for name in names for r in PROJECT["optional-dependencies"][name]]


RUNTIME = [Requirement(r) for r in PROJECT["dependencies"]]
BUILD = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]

#: Each lock file, what it is made from, and how the lock tool names that source.
SETS = [
    pytest.param("serve.txt", RUNTIME, FROM_PYPROJECT, id="the serving set is the runtime deps"),
    pytest.param(
        "test.txt",
        RUNTIME + _extras("test", "schema", "otlp"),
        FROM_PYPROJECT,
        id="the test set is the runtime deps with the test, schema and otlp extras",
    ),
    pytest.param(
        "build.txt",
        _in_file(LOCKS / "build.in"),
        "-r requirements/build.in",
        id="the build set is pip and the build backend",
    ),
    pytest.param(
        "uv.txt", _in_file(LOCKS / "uv.in"), "-r requirements/uv.in", id="the lock tool itself"
    ),
    pytest.param(
        "sbom.txt",
        _in_file(LOCKS / "sbom.in"),
        "-r requirements/sbom.in",
        id="the image's SBOM generator",
    ),
]


def _lock(name: str) -> dict[str, Entry]:
    return parse_lock((LOCKS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("lock", "inputs", "source"), SETS)
def test_every_entry_is_an_exact_pin_with_hashes(
    lock: str, inputs: list[Requirement], source: str
) -> None:
    entries = _lock(lock)
    assert entries
    for entry in entries.values():
        assert entry.hashes, f"{entry.name} has no hash"
        assert all(h.startswith("sha256:") and len(h) == 71 for h in entry.hashes), entry.name


@pytest.mark.parametrize(("lock", "inputs", "source"), SETS)
def test_every_requirement_has_a_pin_that_satisfies_it(
    lock: str, inputs: list[Requirement], source: str
) -> None:
    entries = _lock(lock)
    for requirement in inputs:
        entry = entries.get(canonicalize_name(requirement.name))
        assert entry is not None, f"{requirement} is not in requirements/{lock}: run make lock"
        assert requirement.specifier.contains(entry.version, prereleases=True), (
            f"requirements/{lock} pins {entry.name}=={entry.version}, outside {requirement}: "
            "run make lock"
        )


@pytest.mark.parametrize(("lock", "inputs", "source"), SETS)
def test_the_lock_holds_nothing_its_inputs_do_not_lead_to(
    lock: str, inputs: list[Requirement], source: str
) -> None:
    entries = _lock(lock)
    direct = {name for name, entry in entries.items() if source in entry.via}
    assert direct == {canonicalize_name(r.name) for r in inputs}, (
        f"requirements/{lock} does not start from its inputs: run make lock"
    )
    children: dict[str, set[str]] = {}
    for name, entry in entries.items():
        for parent in entry.via:
            children.setdefault(canonicalize_name(parent), set()).add(name)
    reached, todo = set(direct), list(direct)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in reached:
                reached.add(child)
                todo.append(child)
    assert set(entries) - reached == set(), f"requirements/{lock} holds unreachable entries"


def test_the_serving_set_pins_what_the_tests_ran() -> None:
    serve, test = _lock("serve.txt"), _lock("test.txt")
    assert set(serve) <= set(test)
    differ = {name: (serve[name].version, test[name].version) for name in serve}
    assert {name: pair for name, pair in differ.items() if pair[0] != pair[1]} == {}


def test_the_lock_is_universal_from_the_oldest_python_the_project_allows() -> None:
    oldest = PROJECT["requires-python"].removeprefix(">=")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [flags] = re.findall(r"^UV_FLAGS\s*:=(.*)$", makefile, re.MULTILINE)
    assert "--universal" in flags.split()
    assert f"--python-version {oldest}" in flags
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    [image] = re.findall(r"^ARG PYTHON_BUILD_IMAGE=python:(\d+\.\d+)", dockerfile, re.MULTILINE)
    assert Version(image) >= Version(oldest), "the image's Python must be one the lock covers"


def test_parse_lock_reads_markers_and_both_via_forms() -> None:
    text = (
        "# header\n"
        "cffi==2.1.1 ; platform_python_implementation != 'PyPy' \\\n"
        "    --hash=sha256:" + "a" * 64 + "\n"
        "    # via cryptography\n"
        "click==8.5.1 \\\n"
        "    --hash=sha256:" + "b" * 64 + "\n"
        "    # via\n"
        "    #   placement-webhooks (pyproject.toml)\n"
        "    #   flask\n"
    )
    entries = parse_lock(text)
    assert entries["cffi"].marker == "platform_python_implementation != 'PyPy'"
    assert entries["cffi"].via == ["cryptography"]
    assert entries["click"].via == ["placement-webhooks (pyproject.toml)", "flask"]
    assert entries["click"].version == Version("8.5.1")
