"""Bytes to text, decoded the way kubectl decodes a manifest file.

Why its own step: what reaches the cluster depends on how kubectl turns bytes into
characters (which byte-order marks it honours, what it does with bytes that are not
UTF-8), before any YAML or JSON rule applies; stdin and files share it.
"""

from __future__ import annotations

import codecs

from webhooks.manifests.errors import Refused


def text_of(data: bytes, *, strict: bool = False) -> str:
    """Decode a file the way kubectl does: UTF-8, or UTF-16 when a byte-order mark says so.

    kubectl's decoder (``unicode.BOMOverride``) honours UTF-8 and UTF-16 marks only and
    replaces bytes that are not UTF-8 with U+FFFD rather than failing, so ``café``
    written in Latin-1 reaches the cluster with U+FFFD in place of the ``é``. A UTF-32
    mark is refused by name: kubectl reads such a file as UTF-16 and fails on the NUL
    characters it finds. With ``strict``, such bytes are refused instead, at their line, as
    go-yaml refuses them where nothing replaced them first (a Kubernetes component reading
    its configuration file).
    """
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise Refused(0, "UTF-32 text is not read (kubectl reads UTF-8 and UTF-16)")
    codec, skip = "utf-8", 0
    if data.startswith(codecs.BOM_UTF16_LE):
        codec, skip = "utf-16-le", 2
    elif data.startswith(codecs.BOM_UTF16_BE):
        codec, skip = "utf-16-be", 2
    elif data.startswith(codecs.BOM_UTF8):
        skip = 3
    try:
        return str(data[skip:], codec)
    except UnicodeDecodeError as exc:
        if not strict:
            return str(data[skip:], codec, "replace")
        at = exc.start
        bad = exc.object[at : min(exc.end, at + 4)]
        line = str(exc.object[:at], codec, "replace").count("\n") + 1
        raise Refused(line, f"not {_NAMES[codec]} text: {_hex(bad)} cannot be decoded") from None


_NAMES = {"utf-8": "UTF-8", "utf-16-le": "UTF-16", "utf-16-be": "UTF-16"}


def _hex(data: bytes) -> str:
    return ("bytes " if len(data) > 1 else "byte ") + " ".join(f"0x{b:02X}" for b in data)
