"""The config file: whatever a path names or a file holds, one ``ConfigError`` line or a config.

Every class of unusable file is read through :func:`read_config` and through the commands
that take ``--config``: each is one line naming the file and the line or the key, and the
commands exit 2 with it, never a traceback. Bounds are proved by a guard that refuses or
by counting, never by timing (the growth bench times the reader).
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.command import invoke_cli, run_cli
from webhooks.configfile import MAX_CONFIG_BYTES, read_config
from webhooks.core.config import ConfigError
from webhooks.k8s.excerpt import MESSAGE_CHARS
from webhooks.manifests.limits import MAX_DEPTH

FIXTURES = Path(__file__).parent / "fixtures"

MISTAKES = [
    pytest.param(
        "plugins:\n  runtime-class: [\n",
        3,
        "invalid YAML: a value is missing here",
        id="an unclosed flow sequence",
    ),
    pytest.param(
        "plugins:\n\truntime-class: {}\n",
        2,
        "invalid YAML: a tab where YAML expects spaces (YAML indents with spaces only)",
        id="a tab indenting a key",
    ),
]


@pytest.mark.parametrize(("text", "line", "reason"), MISTAKES)
def test_a_config_file_that_is_not_yaml_is_named_with_its_line(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as refused:
        read_config(config)
    assert str(refused.value) == f"{config}:{line}: {reason}"


# --- every class of unusable file ---------------------------------------------------------


def _alias_bomb() -> bytes:
    # Nine levels of ten aliases each: 10**9 strings once expanded, 400 bytes written.
    levels = ['&a0 ["x","x","x","x","x","x","x","x","x","x"]']
    levels += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    return f"plugins:\n  runtime-class:\n    enabled: [{', '.join(levels)}]\n".encode()


def _written(data: bytes) -> Callable[[Path], Path]:
    def make(directory: Path) -> Path:
        path = directory / "config.yaml"
        path.write_bytes(data)
        return path

    return make


def _directory(directory: Path) -> Path:
    path = directory / "config.yaml"
    path.mkdir()
    return path


def _fifo(directory: Path) -> Path:
    path = directory / "config.yaml"
    os.mkfifo(path)
    return path


def _dev_zero(directory: Path) -> Path:
    path = directory / "config.yaml"
    path.symlink_to("/dev/zero")
    return path


def _oversized(directory: Path) -> Path:
    path = directory / "config.yaml"
    with path.open("wb") as file:  # sparse: the size is what is refused, before reading
        file.truncate(MAX_CONFIG_BYTES + 1)
    return path


HUGE = "v" * 500_000
#: Room for the key path a message starts with, beside the bounded rest.
KEY_PATH = 100
DIGITS = "9" * 5000

#: (id, how the file is made, what the message holds, its line: 0 for none, None for any).
UNUSABLE: list[tuple[str, Callable[[Path], Path], str, int | None]] = [
    (
        "a file that is not UTF-8 is refused at the byte's line",
        _written(b"plugins:\n  runtime-class: {enabled: caf\xe9}\n"),
        "not UTF-8 text: byte 0xE9 cannot be decoded",
        2,
    ),
    (
        "a 5,000-digit integer where an integer belongs is shown cut short",
        _written(
            f"plugins:\n  default-toleration-seconds:\n    notReadySeconds: {DIGITS}\n".encode()
        ),
        'plugins.default-toleration-seconds.notReadySeconds: must be an integer, got "999',
        0,
    ),
    (
        "a 5,000-digit integer where a number belongs is a string, as go-yaml reads it",
        _written(f"cluster: {{lookupTimeoutSeconds: -{DIGITS}}}\n".encode()),
        'cluster.lookupTimeoutSeconds: must be a number, got "-999',
        0,
    ),
    (
        "a 50,000-deep list is refused at the reader's depth limit",
        _written(b"plugins: " + b"[" * 50_000 + b"]" * 50_000 + b"\n"),
        f"exceeded max depth of {MAX_DEPTH}",
        1,
    ),
    (
        "an alias bomb is refused before it is expanded",
        _written(_alias_bomb()),
        "document contains excessive aliasing",
        3,
    ),
    (
        "a directory is refused, not read",
        _directory,
        "a directory, not a regular file",
        0,
    ),
    (
        "a FIFO nobody writes to is refused, not waited on",
        _fifo,
        "a FIFO (named pipe) that gave nothing",
        0,
    ),
    (
        "a symbolic link to /dev/zero is read only up to the limit",
        _dev_zero,
        f"over the limit of {MAX_CONFIG_BYTES:,} bytes for a config file",
        0,
    ),
    (
        "a file over the limit is refused by its size",
        _oversized,
        f"over the limit of {MAX_CONFIG_BYTES:,} bytes for a config file: it holds "
        f"{MAX_CONFIG_BYTES + 1:,} bytes",
        0,
    ),
    (
        "a binary file is refused as text that is not UTF-8",
        _written(bytes(range(256)) * 4),
        "not UTF-8 text: byte 0x80 cannot be decoded",
        None,
    ),
    (
        "a NUL character is refused as YAML",
        _written(b"cluster: {context: a\x00b}\n"),
        "invalid YAML: character U+0000 is not allowed in YAML",
        1,
    ),
    ("a top-level list is not a config", _written(b"- a\n- b\n"), "<root>: must be a mapping", 0),
    ("a top-level scalar is not a config", _written(b"plugins\n"), "<root>: must be a mapping", 0),
    (
        "an integer where strings belong",
        _written(b"plugins:\n  dedicated-nodes: {exemptNamespaces: [5]}\n"),
        "plugins.dedicated-nodes.exemptNamespaces[0]: must be a string, got 5",
        0,
    ),
    (
        "a float where a string belongs",
        _written(b"cluster: {context: 1.5}\n"),
        "cluster.context: must be a string, got 1.5",
        0,
    ),
    (
        "a string where a number belongs",
        _written(b'cluster: {lookupTimeoutSeconds: "2"}\n'),
        'cluster.lookupTimeoutSeconds: must be a number, got "2"',
        0,
    ),
    (
        "a huge string where a boolean belongs is shown cut short",
        _written(f"plugins:\n  runtime-class: {{enabled: {HUGE}}}\n".encode()),
        'plugins.runtime-class.enabled: must be true or false, got "vvv',
        0,
    ),
    (
        "a huge key is shown cut short",
        _written(f"plugins:\n  ? {HUGE}\n  : {{}}\n".encode()),
        'plugins."vvv',
        0,
    ),
    (
        "a huge value a plugin's own check quotes is cut short",
        _written(
            f"plugins:\n  pod-node-selector: {{clusterDefaultNodeSelector: {HUGE}}}\n".encode()
        ),
        "plugins.pod-node-selector.clusterDefaultNodeSelector: invalid selector: [vvv",
        0,
    ),
    (
        "a huge list where a string belongs is shown cut short",
        _written(b"cluster: {context: [" + b"1, " * 200_000 + b"]}\n"),
        "cluster.context: must be a string, got [1,1,1",
        0,
    ),
    (
        "NaN is refused where it is written",
        _written(b"cluster:\n  lookupTimeoutSeconds: .nan\n"),
        ".nan is not a number JSON can carry",
        2,
    ),
    (
        "infinity is refused where it is written",
        _written(b"cluster:\n  lookupTimeoutSeconds: -.inf\n"),
        "-.inf is not a number JSON can carry",
        2,
    ),
    (
        "a key written twice is refused at the second",
        _written(b"exceptions: []\ncluster: {}\nexceptions: []\n"),
        'key "exceptions" already set in map',
        3,
    ),
    (
        "a key written twice in a nested map is refused too",
        _written(b"cluster: {source: none, source: auto}\n"),
        'key "source" already set in map',
        1,
    ),
    (
        "a Python object tag is only a tag: nothing is built or run",
        _written(b'cluster: {source: !!python/object/apply:os.system ["echo hi"]}\n'),
        'cluster.source: must be one of "auto", "in-cluster", "kubeconfig", "none", got '
        '["echo hi"]',
        0,
    ),
    (
        "a second document is refused where it starts",
        _written(b"cluster: {}\n---\nexceptions: []\n"),
        "a config file holds one YAML document; a second one starts here",
        3,
    ),
    (
        "an expiry out of range once in UTC is refused, not raised",
        _written(b'exceptions: [{name: x, plugins: ["*"], expires: "0001-01-01T00:00:00+01:00"}]'),
        'exceptions[0].expires: "0001-01-01T00:00:00+01:00" is out of range once converted to UTC',
        0,
    ),
    (
        "an anchor that holds itself is refused",
        _written(b"cluster: &a {context: *a}\n"),
        'anchor "a" value contains itself',
        1,
    ),
]


@pytest.mark.parametrize(
    ("make", "message", "line"),
    [case[1:] for case in UNUSABLE],
    ids=[case[0] for case in UNUSABLE],
)
def test_every_unusable_file_is_one_config_error_naming_file_and_line_or_key(
    tmp_path: Path, make: Callable[[Path], Path], message: str, line: int | None
) -> None:
    path = make(tmp_path)
    with pytest.raises(ConfigError) as refused:
        read_config(path)
    text = str(refused.value)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert text.startswith(f"{path}:" if line is None else where), text[:200]
    assert message in text, text[:200]
    assert "\n" not in text
    assert len(text) <= len(where) + MESSAGE_CHARS + KEY_PATH


USABLE = [
    pytest.param(b"", id="an empty file is the defaults"),
    pytest.param(b"# nothing but a comment\n", id="a file of only a comment is the defaults"),
    pytest.param(b"---\n", id="an empty document is the defaults"),
    pytest.param(b"~\n", id="a null document is the defaults"),
    pytest.param(
        b"\xff\xfe" + "cluster: {}\n".encode("utf-16-le"), id="UTF-16 with a byte-order mark"
    ),
    pytest.param(b'{"cluster": {}}', id="JSON is YAML"),
]


@pytest.mark.parametrize("data", USABLE)
def test_files_that_say_nothing_give_the_defaults(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(data)
    assert read_config(path) == read_config(None)


def test_a_merge_may_bring_in_a_key_the_map_then_writes_over(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "exceptions:\n"
        "  - &base {name: a, plugins: [dedicated-nodes], namespaces: [ml]}\n"
        "  - <<: *base\n"
        "    name: b\n"
    )
    config = read_config(path)
    ours = [(e.name, e.namespaces) for e in config.exceptions if e.name in ("a", "b")]
    assert ours == [("a", ("ml",)), ("b", ("ml",))]


def test_a_pipe_is_read_like_a_file(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.write(write, b"cluster: {lookupTimeoutSeconds: 7}\n")
    os.close(write)
    try:
        config = read_config(f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert config.cluster.lookup_timeout_seconds == 7.0


def test_serve_hands_the_server_the_config_it_read_so_a_pipe_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webhooks.server import runner

    handed: list[runner.ServeOptions] = []

    class Server:
        def __init__(self, options: runner.ServeOptions, factory: object) -> None:
            handed.append(options)

        def run(self) -> None:
            pass

    monkeypatch.setattr(runner, "WebhookServer", Server)
    for name in ("tls.crt", "tls.key"):
        (tmp_path / name).touch()
    read, write = os.pipe()
    os.write(write, b"cluster: {source: none, lookupTimeoutSeconds: 7}\n")
    os.close(write)
    try:
        result = invoke_cli(["serve", "--config", f"/dev/fd/{read}", "--cert-dir", str(tmp_path)])
    finally:
        os.close(read)
    assert result.exit_code == 0, result.output
    [options] = handed
    assert options.config is not None
    assert options.config.cluster.lookup_timeout_seconds == 7.0


def test_the_config_is_read_from_events_never_by_pyyamls_composer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PyYAML's composer keeps a node tree with marks: about 110 bytes of memory and 8 µs
    # per byte of config in pure Python, which made a 26 MB config take minutes.
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the config must be read by the manifest reader's decoder")

    for name in ("safe_load", "load", "compose", "safe_load_all", "load_all"):
        monkeypatch.setattr(yaml, name, refuse)
    path = tmp_path / "config.yaml"
    path.write_text("cluster: {lookupTimeoutSeconds: 3}\n")
    assert read_config(path).cluster.lookup_timeout_seconds == 3.0


def _exceptions_file(path: Path, size: int) -> None:
    lines = ["exceptions:"]
    total, i = 12, 0
    while total < size:
        line = f"  - {{name: exception-{i:07d}, plugins: ['*'], namespaces: [ns-{i}]}}"
        lines.append(line)
        total += len(line) + 1
        i += 1
    path.write_text("\n".join(lines) + "\n")


def test_a_config_near_the_limit_costs_memory_a_small_multiple_of_its_size(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    _exceptions_file(path, 256 * 1024)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        config = read_config(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(config.exceptions) > 2000
    assert peak < 40 * size, f"{peak:,} bytes at the peak for {size:,} bytes of config"


# --- the commands -------------------------------------------------------------------------

#: The four files of the report, as the commands meet them.
REPORTED = {
    "non-UTF-8": (_written(b"cluster: {context: caf\xe9}\n"), ":1: not UTF-8 text"),
    "5,000 digits": (
        _written(f"cluster: {{lookupTimeoutSeconds: {DIGITS}}}\n".encode()),
        ": cluster.lookupTimeoutSeconds: must be a number",
    ),
    "50,000 deep": (
        _written(b"cluster: " + b"[" * 50_000 + b"]" * 50_000 + b"\n"),
        ":1: exceeded max depth",
    ),
    "alias bomb": (_written(_alias_bomb()), ":3: document contains excessive aliasing"),
}

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"

#: Each command that takes --config, with the arguments it needs to get to reading it.
COMMANDS: dict[str, tuple[list[str], str | None]] = {
    "review": (["review", "-"], "{}"),
    "export": (["export"], None),
    "check": (["check", "-"], POD),
    "mutate": (["mutate", "-"], POD),
    "explain": (["explain", "--nodes", str(FIXTURES / "explain" / "gpu.yaml"), "-"], POD),
    "audit": (["audit"], None),
    "webhook-config": (["webhook-config"], None),
}


def _cases() -> list[object]:
    cases = []
    for file, (make, message) in REPORTED.items():
        for command, (args, stdin) in COMMANDS.items():
            cases.append(
                pytest.param(make, message, args, stdin, id=f"{command} exits 2 on a {file} config")
            )
    for case_id, make, message, _ in UNUSABLE:
        if make is not _directory:  # click refuses a directory first (below)
            cases.append(pytest.param(make, message, ["check", "-"], POD, id=f"check: {case_id}"))
    return cases


@pytest.mark.parametrize(("make", "message", "args", "stdin"), _cases())
def test_every_command_exits_2_with_one_line_naming_the_config(
    tmp_path: Path,
    make: Callable[[Path], Path],
    message: str,
    args: list[str],
    stdin: str | None,
) -> None:
    path = make(tmp_path)
    result = invoke_cli([args[0], "--config", str(path), *args[1:]], stdin)
    assert result.exit_code == 2, result.output[-2000:]
    assert isinstance(result.exception, SystemExit)
    [line] = result.stderr.splitlines()
    assert line.startswith(f"placement-webhooks: config: {path}"), line[:200]
    assert message in line, line[:200]


@pytest.mark.parametrize(("make", "message"), list(REPORTED.values()), ids=list(REPORTED))
def test_a_policy_suite_naming_an_unusable_config_is_unusable_input(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path)
    (tmp_path / "pod.yaml").write_text(POD)
    (tmp_path / "a.test.yaml").write_text(
        f"name: s\nconfig: {path.name}\nresources: [pod.yaml]\n"
        "expect:\n  - {resource: Pod/p, result: pass}\n"
    )
    result = invoke_cli(["test", str(tmp_path)])
    assert result.exit_code == 2, result.output[-2000:]
    assert isinstance(result.exception, SystemExit)
    [line] = [line for line in result.stderr.splitlines() if "config:" in line]
    assert line.startswith(f"{tmp_path / 'a.test.yaml'}:2: config: {path}"), line[:200]
    assert message in line


def test_a_directory_given_as_the_config_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke_cli(["check", "--config", str(tmp_path), "-"], POD)
    assert result.exit_code == 2
    assert "is a directory" in result.stderr


@pytest.mark.parametrize(("make", "message"), list(REPORTED.values()), ids=list(REPORTED))
def test_serve_refuses_to_start_on_an_unusable_config(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path)
    proc = run_cli("serve", "--config", str(path), "--cert-dir", str(tmp_path), timeout=30)
    assert proc.returncode == 2, proc.stderr[-2000:]
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"placement-webhooks: config: {path}"), line[:200]
    assert message in line


def test_the_documented_size_limit_is_the_one_enforced() -> None:
    page = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
    assert f"**At most {MAX_CONFIG_BYTES >> 20} MiB** (`MAX_CONFIG_BYTES`" in page
