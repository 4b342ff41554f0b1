"""Plain JSON-like trees (dicts, lists, scalars) copied and measured without recursion.

Why not ``copy.deepcopy``: kubectl accepts objects nested 10,000 levels deep, and
``deepcopy`` recurses once per level (twice, counting its dict helper), so it fails with a
``RecursionError`` near depth 500. Manifests hold only JSON values, so a copy needs no memo
of shared objects either: the reader never hands out shared ones.
"""

from __future__ import annotations

from typing import Any


def copy_tree(value: Any) -> Any:
    """A deep copy of ``value``: new dicts and lists all the way down, scalars shared.

    Scalars (strings, numbers, booleans, ``None``) are immutable, so sharing them is safe
    and keeps the copy as cheap as the containers it must rebuild.
    """
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    todo: list[tuple[Any, Any]] = [(value, root)]
    while todo:
        source, target = todo.pop()
        if isinstance(source, dict):
            for key, item in source.items():
                if isinstance(item, dict | list):
                    child: Any = {} if isinstance(item, dict) else []
                    todo.append((item, child))
                    target[key] = child
                else:
                    target[key] = item
        else:
            for item in source:
                if isinstance(item, dict | list):
                    child = {} if isinstance(item, dict) else []
                    todo.append((item, child))
                    target.append(child)
                else:
                    target.append(item)
    return root


def depth(value: Any) -> int:
    """How many dicts and lists are nested in ``value`` at its deepest (a scalar is 0).

    Counted the way Go's ``encoding/json`` counts its 10,000-level limit, so callers can tell
    in advance whether a recursive library will cope with an object.
    """
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        node, level = todo.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest
