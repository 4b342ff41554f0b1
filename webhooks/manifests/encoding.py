"""Bytes to text, decoded the way kubectl decodes a manifest file.

Why its own step: what reaches the cluster depends on how kubectl turns bytes into
characters (which byte-order marks it honours, what it does with bytes that are not
UTF-8), before any YAML or JSON rule applies; stdin and files share it.
"""

from __future__ import annotations

import codecs

from webhooks.manifests.errors import Refused


def text_of(data: bytes) -> str:
    """Decode a file the way kubectl does: UTF-8, or UTF-16 when a byte-order mark says so.

    kubectl's decoder (``unicode.BOMOverride``) honours UTF-8 and UTF-16 marks only and
    replaces bytes that are not UTF-8 with U+FFFD rather than failing, so ``café``
    written in Latin-1 reaches the cluster with U+FFFD in place of the ``é``. A UTF-32
    mark is refused by name: kubectl reads such a file as UTF-16 and fails on the NUL
    characters it finds.
    """
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise Refused(0, "UTF-32 text is not read (kubectl reads UTF-8 and UTF-16)")
    if data.startswith(codecs.BOM_UTF16_LE):
        return data[2:].decode("utf-16-le", "replace")
    if data.startswith(codecs.BOM_UTF16_BE):
        return data[2:].decode("utf-16-be", "replace")
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")
