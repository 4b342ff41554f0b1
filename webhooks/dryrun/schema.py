"""``--schema``: strict validation against the Kubernetes OpenAPI schemas of a given version.

The schemas ship with ``kubernetes-validate`` (the optional ``schema`` extra), imported only
when ``--schema`` is used. Validators are built once per (apiVersion, kind) and reused: the
package's own ``validate()`` re-reads and re-parses a 1.5 MB definitions file on every call,
which would make checking a chart take seconds per object.

Two things differ from plain ``jsonschema``. Messages show values as JSON and cut long
ones (``true is not of type string``, not ``True is not of type 'string'``), because the
user wrote YAML or JSON, and because ``jsonschema`` builds every message with ``repr`` of
the whole value: megabytes, or a ``RecursionError`` on a value nested a thousand levels.
And an object deeper than Python's default recursion allows is validated on a thread with
a stack and recursion limit sized for it, since kubectl accepts objects 10,000 levels deep
(a CustomResourceDefinition whose schema nests, say) and ``jsonschema`` recurses per level.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from webhooks.manifests.errors import show
from webhooks.manifests.tree import depth

_T = TypeVar("_T")

#: Objects at most this deep are validated on the caller's own stack.
SHALLOW = 100
#: Python frames ``jsonschema`` uses per level of an object, with room to spare (measured: 5).
_FRAMES_PER_LEVEL = 12
#: The stack of the thread that validates deeper objects: address space, touched as used.
_STACK = 256 * 1024 * 1024

MISSING = "--schema needs the kubernetes-validate package: pip install 'placement-webhooks[schema]'"


class SchemaUnavailable(Exception):
    """``--schema`` cannot run: the package is missing or the version is not covered."""


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


class KubernetesSchema:
    """Strict schemas of one Kubernetes minor version; unknown fields are errors.

    ``version`` is ``MAJOR.MINOR[.PATCH]`` (a leading ``v`` is accepted); ``None`` picks
    the newest version the installed package knows. A version newer than that is refused
    rather than silently checked against older schemas.
    """

    def __init__(self, version: str | None = None, *, strict: bool = True) -> None:
        try:
            from kubernetes_validate import utils
        except ImportError:
            raise SchemaUnavailable(MISSING) from None
        self._utils = utils
        known = sorted(set(utils.all_versions()), key=_version_key)
        wanted = _version_key(version.lstrip("v")) if version else _version_key(known[-1])
        if len(wanted) != 2:
            raise SchemaUnavailable(f"--kubernetes-version {version!r}: expected MAJOR.MINOR")
        usable = [v for v in known if _version_key(v) <= wanted]
        if not usable or wanted > _version_key(known[-1]):
            raise SchemaUnavailable(
                f"--kubernetes-version {version}: schemas cover {known[0]} to {known[-1]}"
            )
        self.version = ".".join(map(str, _version_key(usable[-1])))
        self._dir = f"kubernetes-json-schema/v{usable[-1]}-local" + ("-strict" if strict else "")
        self._registry: Any = None
        self._validators: dict[tuple[str, str], Any] = {}
        self._class: Any = None

    def _validator(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key in self._validators:
            return self._validators[key]
        import jsonschema
        from referencing import Registry, Resource

        api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
        name = f"{self._dir}/{kind.lower()}-{api}.json"
        try:
            schema = self._utils.schema_contents(name, self.version)
        except (FileNotFoundError, self._utils.VersionNotSupportedError):
            validator = None
        else:
            if self._registry is None:
                definitions = self._utils.schema_contents(
                    f"{self._dir}/_definitions.json", self.version
                )
                self._registry = Resource.from_contents(definitions) @ Registry()
            registry = Resource.from_contents(schema) @ self._registry
            if self._class is None:
                self._class = _json_messages(jsonschema)
            validator = self._class(schema, registry=registry)
        self._validators[key] = validator
        return validator

    def errors(self, obj: Mapping[str, Any]) -> list[tuple[str, str]] | None:
        """Every schema error of ``obj`` as ``(field path, message)``, sorted by path.

        ``None`` when no schema covers the object (a custom resource, or no apiVersion),
        because an unknown kind is not an error of the manifest.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        validator = self._validator(api_version, kind)
        if validator is None:
            return None
        levels = depth(obj)
        if levels <= SHALLOW:
            return _collect(validator, obj)
        return _with_stack(levels, lambda: _collect(validator, obj))


def _collect(validator: Any, obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    found: list[tuple[tuple[str, ...], str, str]] = []
    for error in validator.iter_errors(obj):
        parts = list(error.absolute_path)
        where = _dotted(parts)
        target = parts
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {})
            extra = [k for k in error.instance if k not in known]
            if extra:
                target = [*parts, extra[0]]
        message = f"{where or '<root>'}: {error.message}"
        found.append((tuple(map(str, parts)), _dotted(target), message))
    found.sort(key=lambda item: item[0])
    return [(path, message) for _, path, message in found]


def _with_stack(levels: int, work: Callable[[], _T]) -> _T:
    """Run ``work`` on a thread whose stack and recursion limit fit ``levels`` of nesting.

    Why a thread: the recursion limit guards the C stack, and only a new thread can be
    given a bigger one. Raises ``RecursionError`` if even that is not enough, which the CLI
    reports as unusable input, like any object too deep to process.
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the caller's thread below
            outcome.append((False, exc))

    limit = sys.getrecursionlimit()
    size = threading.stack_size()
    sys.setrecursionlimit(max(limit, levels * _FRAMES_PER_LEVEL + 1000))
    thread = threading.Thread(target=run, name="schema-deep")
    try:
        threading.stack_size(_STACK)  # read when the thread starts, so set until then
        thread.start()
    finally:
        threading.stack_size(size)
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(limit)
    done, value = outcome[0]
    if not done:
        raise value
    return value  # type: ignore[no-any-return]


def _json_messages(jsonschema: Any) -> Any:
    """Draft 2020-12 with the keywords Kubernetes schemas use rewritten to show JSON values.

    Only the keywords whose stock message prints the instance are replaced (``type``,
    ``enum``, ``required``, ``additionalProperties`` without a schema, ``oneOf``); the
    checks themselves are the standard ones.
    """
    base = jsonschema.Draft202012Validator
    error = jsonschema.ValidationError
    additional = base.VALIDATORS["additionalProperties"]

    def type_(validator: Any, types: Any, instance: Any, schema: Any) -> Iterator[Any]:
        names = types if isinstance(types, list) else [types]
        if not any(validator.is_type(instance, name) for name in names):
            yield error(f"{show(instance)} is not of type {' or '.join(names)}")

    def enum(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not any(_equal(instance, value) for value in allowed):
            yield error(f"{show(instance)} is not one of {show(allowed, 200)}")

    def required(validator: Any, names: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "object"):
            for name in names:
                if name not in instance:
                    yield error(f"{show(name)} is a required property")

    def additional_properties(
        validator: Any, allowed: Any, instance: Any, schema: Any
    ) -> Iterator[Any]:
        if allowed is not False or "patternProperties" in schema:
            yield from additional(validator, allowed, instance, schema)
            return
        if not validator.is_type(instance, "object"):
            return
        known = schema.get("properties", {})
        extras = sorted((key for key in instance if key not in known), key=str)
        if extras:
            names = ", ".join(show(key) for key in extras[:5]) + (", …" if len(extras) > 5 else "")
            verb = "was" if len(extras) == 1 else "were"
            yield error(f"Additional properties are not allowed ({names} {verb} unexpected)")

    def one_of(validator: Any, choices: Any, instance: Any, schema: Any) -> Iterator[Any]:
        failures: list[Any] = []
        matching = []
        for index, choice in enumerate(choices):
            errors = list(validator.descend(instance, choice, schema_path=index))
            if errors:
                failures.extend(errors)
            else:
                matching.append(choice)
        if not matching:
            yield error(
                f"{show(instance)} is not valid under any of the given schemas", context=failures
            )
        elif len(matching) > 1:
            yield error(f"{show(instance)} is valid under each of {show(matching, 200)}")

    return jsonschema.validators.extend(
        base,
        {
            "type": type_,
            "enum": enum,
            "required": required,
            "additionalProperties": additional_properties,
            "oneOf": one_of,
        },
    )


def _equal(one: Any, two: Any) -> bool:
    # JSON equality for enum members (scalars in Kubernetes schemas): true is not 1.
    if isinstance(one, bool) or isinstance(two, bool):
        return one is two
    return bool(one == two)


def _dotted(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else part)
    return out
