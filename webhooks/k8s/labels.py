"""Label sets written as ``k=v,k2=v2``: apimachinery's ``ConvertSelectorToLabelsMap`` and friends.

PodNodeSelector's namespace annotation and its cluster configuration use this format, so the
parser reproduces upstream's acceptance rules: split on ``,`` then on ``=``, trim spaces
around key and value, validate the key as a qualified name and the value as a label value, and
let a later duplicate key win. An empty string is the empty set.
"""

from __future__ import annotations

from collections.abc import Mapping

from webhooks.k8s.fielderr import go_quote
from webhooks.k8s.names import label_value_errors, qualified_name_errors


def parse_label_set(text: str) -> dict[str, str]:
    """Parse ``k=v,k2=v2`` into a dict; ``ValueError`` carries upstream's reason.

    Why strict: the in-tree plugin refuses pods of a namespace whose annotation does not
    parse, and a config file must fail at load with the same rule rather than at request time.
    """
    result: dict[str, str] = {}
    if not text:
        return result
    for item in text.split(","):
        parts = item.split("=")
        if len(parts) != 2:
            raise ValueError(f"invalid selector: [{' '.join(parts)}]")
        key, value = parts[0].strip(), parts[1].strip()
        errors = qualified_name_errors(key)
        if errors:
            raise ValueError(f"invalid label key {go_quote(key)}: {'; '.join(errors)}")
        errors = label_value_errors(value)
        if errors:
            raise ValueError(
                f"invalid label value: {go_quote(value)}: at key: {go_quote(key)}: "
                + "; ".join(errors)
            )
        result[key] = value
    return result


def first_conflict(a: Mapping[str, str], b: Mapping[str, str]) -> str | None:
    """The first key (in sorted order) present in both sets with different values, or ``None``.

    Upstream ``labels.Conflicts`` only answers yes or no; naming a key, chosen
    deterministically, lets warnings and tests say which one.
    """
    for key in sorted(a.keys() & b.keys()):
        if a[key] != b[key]:
            return key
    return None


def is_subset(labels: Mapping[str, str], allowed: Mapping[str, str]) -> bool:
    """Whether every ``labels`` pair appears in ``allowed``; an empty ``allowed`` allows all.

    Why the empty case: upstream treats a missing whitelist as "no restriction".
    """
    if not allowed:
        return True
    return all(k in allowed and allowed[k] == v for k, v in labels.items())


def format_label_set(labels: Mapping[str, str]) -> str:
    """``k=v,k2=v2`` with keys sorted; why sorted: messages must not depend on dict order."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))
