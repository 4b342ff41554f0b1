"""Reading the YAML configuration file into the core's config model.

Why separate from the core: the core never touches files or YAML, and the server, ``review``
and ``check`` must read the same file the same way.

The file is read with the manifest reader's machinery (:mod:`webhooks.manifests`), so a
config costs what a manifest costs: at most :data:`MAX_CONFIG_BYTES` read from a file,
decoded in one pass without recursion, with the reader's depth and alias limits. Where a
manifest follows kubectl, a config follows a Kubernetes component reading its own
configuration file (sigs.k8s.io/yaml's strict decoding): one document, bytes that are
not UTF-8 refused rather than replaced, and a key written twice in one map refused. Every
failure, whatever the file holds, is one :class:`ConfigError` line naming the file and
the line or the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from webhooks.core.config import Config, ConfigError, load_config
from webhooks.manifests.encoding import text_of
from webhooks.manifests.errors import Refused
from webhooks.manifests.files import Unreadable, read_file
from webhooks.manifests.raw import Raw
from webhooks.manifests.syntax import problem
from webhooks.manifests.yamlstream import read_yaml
from webhooks.plugins import REGISTRY

#: The largest config file read, in bytes: 1 MiB, the most a ConfigMap (or a Secret) may
#: hold in all (kube-apiserver's ``MaxSecretSize``, which ConfigMap validation applies), and
#: the server's config is mounted from one. About 8,000 exceptions fit.
MAX_CONFIG_BYTES = 1 << 20

#: The refusal of a second document in a config file.
SECOND_DOCUMENT = "a config file holds one YAML document; a second one starts here"


def read_config(path: str | Path | None) -> Config:
    """Load ``path`` (``None``: built-in defaults); :class:`ConfigError` names file and key.

    Why every failure is a :class:`ConfigError`: the commands exit 2 with it and a reload
    is refused with it, so nothing a file holds may surface as anything else. A directory
    or a socket is refused before it is read; a pipe (``/dev/stdin``, ``<(command)``) or a
    character device (``/dev/null``) is read like a file, and anything over
    :data:`MAX_CONFIG_BYTES` is refused after reading at most one byte more.
    """
    if path is None:
        return load_config(None, REGISTRY)
    name = str(path)
    try:
        data = read_file(path, MAX_CONFIG_BYTES, "a config file", streams=True)
    except Unreadable as exc:
        raise ConfigError(f"{name}: {exc.reason}") from None
    return parse_config(data, name)


def parse_config(data: bytes, name: str) -> Config:
    """The config in ``data``, the bytes of the file called ``name`` (which messages name).

    Why apart from :func:`read_config`: what the bytes mean does not depend on where they
    came from, and tests and fuzzing feed bytes without a file.
    """
    try:
        document = read_document(text_of(data, strict=True))
    except Refused as exc:
        raise ConfigError(_at(name, exc.line, exc.reason)) from None
    try:
        return load_config(document, REGISTRY)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def read_document(text: str) -> Any:
    """The value of the one YAML document in ``text`` (``None`` when it holds none).

    Why public: YAML given on the command line (``webhook-config``'s selectors) is read
    by the same rules as the file. Raises :class:`Refused` with the line to blame.
    """
    found: list[Raw] = []

    def add(raw: Raw) -> None:
        if found:
            raise Refused(raw.line, SECOND_DOCUMENT)  # stops the parse here
        found.append(raw)

    try:
        read_yaml(text, 0, add, strict=True)
    except yaml.YAMLError as exc:
        raise Refused(*problem(exc, text)) from None
    return found[0].value if found else None


def _at(name: str, line: int, reason: str) -> str:
    return f"{name}:{line}: {reason}" if line > 0 else f"{name}: {reason}"
