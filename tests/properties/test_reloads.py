"""Properties of a reload's config check: whatever bytes the file holds, the master gets a
config or a refusal with a bounded reason, and nothing else.

Each example forks the checking child, so this test runs a sixteenth of the profile's
examples (12 under ``ci``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from webhooks.core.config import Config
from webhooks.server.reloadcheck import REASON_CHARS, Refused, run_checked
from webhooks.server.runner import config_for_reload

#: Pieces of YAML and of the config's own vocabulary, and bytes that are none of it.
TOKENS = [
    b"plugins:",
    b"exceptions:",
    b"cluster:",
    b"default-toleration-seconds:",
    b"notReadySeconds:",
    b"enabled:",
    b"name:",
    b"source:",
    b"\n",
    b"  ",
    b"- ",
    b"[",
    b"]",
    b"{",
    b"}",
    b": ",
    b", ",
    b"&a ",
    b"*a",
    b"!!python/object:os.system ",
    b"9" * 5000,
    b"true",
    b"~",
    b"'",
    b'"',
    b"#",
    b"\xff\xfe",
    b"\t",
    b"%YAML 1.1\n",
    b"---\n",
]

config_files = st.lists(
    st.one_of(st.sampled_from(TOKENS), st.binary(max_size=6)), max_size=120
).map(b"".join)


@settings(max_examples=max(1, settings().max_examples // 16))
@given(config_files)
def test_any_file_gives_the_master_a_config_or_a_bounded_refusal(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        path.write_bytes(data)
        try:
            config = run_checked(lambda: config_for_reload(str(path)))
        except Refused as refused:
            assert str(refused)
            assert len(str(refused)) <= REASON_CHARS + len("… (999999999 characters)")
        else:
            assert isinstance(config, Config)
