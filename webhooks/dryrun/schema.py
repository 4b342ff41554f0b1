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

An object the release cannot take is a finding, not a pass: an ``apiVersion`` it stopped
serving (:mod:`webhooks.k8s.removedapis`), or a kind no schema covers, built in or
supplied (:mod:`.userschemas`).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal, TypeVar

from webhooks.dryrun.report import SchemaError
from webhooks.dryrun.userschemas import UserSchemas
from webhooks.k8s.removedapis import Release, removal, removed_message
from webhooks.manifests.errors import show
from webhooks.manifests.tree import depth

_T = TypeVar("_T")

#: Objects at most this deep are validated on the caller's own stack.
SHALLOW = 100
#: Python frames ``jsonschema`` uses per level of an object, with room to spare (measured: 5).
_FRAMES_PER_LEVEL = 12
#: The stack of the thread that validates deeper objects: address space, touched as used.
_STACK = 256 * 1024 * 1024

#: What an object no schema covers is: a failing finding, a warning, or not checked.
Missing = Literal["error", "warn", "skip"]
MISSING_LEVELS: tuple[Missing, ...] = ("error", "warn", "skip")

MISSING = "--schema needs the kubernetes-validate package: pip install 'placement-webhooks[schema]'"


#: kubectl's own List: read client-side (its items are checked one by one), never sent.
_LIST = ("v1", "List")


class SchemaUnavailable(Exception):
    """``--schema`` cannot run: the package is missing or the version is not covered."""


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


class KubernetesSchema:
    """Strict schemas of one Kubernetes minor version; unknown fields are errors.

    ``version`` is ``MAJOR.MINOR[.PATCH]`` (a leading ``v`` is accepted); ``None`` picks
    the newest version the installed package knows. A version newer than that is refused
    rather than silently checked against older schemas. ``user`` holds the schemas of
    kinds the release does not build in (``--schema-location``, and the CRDs among the
    inputs through :meth:`learn`); ``missing`` says what an object none covers is.
    """

    def __init__(
        self,
        version: str | None = None,
        *,
        strict: bool = True,
        user: UserSchemas | None = None,
        missing: Missing = "error",
    ) -> None:
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
        self.release: Release = (wanted[0], wanted[1])
        self.version = ".".join(map(str, _version_key(usable[-1])))
        self._dir = f"kubernetes-json-schema/v{usable[-1]}-local" + ("-strict" if strict else "")
        self.user = user if user is not None else UserSchemas()
        self.missing = missing
        self._registry: Any = None
        self._validators: dict[tuple[str, str], Any] = {}
        self._class: Any = None
        self._structural: Any = None

    def learn(self, objects: Iterable[Any]) -> None:
        """Take the schemas of the CustomResourceDefinitions among the inputs.

        Why: a chart that ships a CRD and its custom resources is applied together, and
        the resources must match the definition shipped beside them.
        """
        self.user.learn(objects)

    def _builtin(self, api_version: str, kind: str) -> Any:
        """The validator of a kind built into this release, or ``None``.

        A schema file is looked up by kind and the first label of the group (how the
        package names them), so ``apps.kruise.io/v1 DaemonSet`` would find ``apps/v1``'s.
        The schema's own ``apiVersion`` and ``kind`` enums decide: a custom resource named
        like a built-in kind is a different thing, never checked as the built-in.
        """
        api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
        name = f"{self._dir}/{kind.lower()}-{api}.json"
        try:
            schema = self._utils.schema_contents(name, self.version)
        except (FileNotFoundError, self._utils.VersionNotSupportedError):
            return None
        properties = schema.get("properties", {})
        if api_version not in properties.get("apiVersion", {}).get("enum", ()):
            return None
        if kind not in properties.get("kind", {}).get("enum", ()):
            return None
        from referencing import Registry, Resource

        if self._registry is None:
            definitions = self._utils.schema_contents(
                f"{self._dir}/_definitions.json", self.version
            )
            self._registry = Resource.from_contents(definitions) @ Registry()
        registry = Resource.from_contents(schema) @ self._registry
        return self._messages()(schema, registry=registry)

    def _messages(self) -> Any:
        if self._class is None:
            import jsonschema

            self._class = _json_messages(jsonschema)
        return self._class

    def _validator(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key in self._validators:
            return self._validators[key]
        validator = self._builtin(api_version, kind)
        supplied = self.user.get(api_version, kind) if validator is None else None
        if supplied is not None and supplied.structural:
            if self._structural is None:
                self._structural = structural(self._messages())
            validator = self._structural(supplied.schema)
        elif supplied is not None:
            validator = self._messages()(supplied.schema)
        self._validators[key] = validator
        return validator

    def errors(self, obj: Mapping[str, Any]) -> list[SchemaError] | None:
        """Every schema finding of ``obj``, sorted by path; ``None`` when it is not checked.

        An ``apiVersion``/``kind`` this release no longer serves is one error naming the
        release that removed it and what to write instead. One that no schema covers (not
        built in, no CRD or schema supplied) is a finding too, as kubeconform reports a
        missing schema, at the ``missing`` level: ``error``, ``warn``, or ``skip`` for
        ``None``. An object with no string apiVersion and kind is not checked here.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        if (api_version, kind) == _LIST:
            return None
        gone = removal(api_version, kind, self.release)
        if gone is not None:
            return [SchemaError("apiVersion", removed_message(gone, self.release))]
        validator = self._validator(api_version, kind)
        if validator is None:
            if self.missing == "skip":
                return None
            action = "warn" if self.missing == "warn" else "enforce"
            return [SchemaError("apiVersion", self._no_schema(api_version, kind), action)]
        levels = depth(obj)
        try:
            if levels <= SHALLOW:
                return _collect(validator, obj)
            return _with_stack(levels, lambda: _collect(validator, obj))
        except RecursionError:
            raise  # too deep for Python: the caller reports the input as unusable
        except Exception as exc:
            # A supplied schema can be malformed (``type: 5``, ``properties: []``), and
            # jsonschema then raises whatever its keyword code meets; the built-in ones
            # cannot, so there anything raised is a bug and goes on up.
            supplied = self.user.get(api_version, kind)
            if supplied is None:
                raise
            source = supplied.source
            return [
                SchemaError(
                    "apiVersion",
                    f"the schema of {api_version} {kind} from {source} cannot be used: "
                    f"{type(exc).__name__}: {str(exc)[:200]}",
                )
            ]

    def _no_schema(self, api_version: str, kind: str) -> str:
        release = f"{self.release[0]}.{self.release[1]}"
        return (
            f"no schema for {api_version} {kind}: Kubernetes {release} has no such kind; "
            "give its CustomResourceDefinition as an input or with --schema-location"
        )


def _collect(validator: Any, obj: Mapping[str, Any]) -> list[SchemaError]:
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
    return [SchemaError(path, message) for _, path, message in found]


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
    ``enum``, ``required``, ``additionalProperties`` without a schema, ``oneOf``,
    ``pattern``); the checks themselves are the standard ones, except that a ``pattern``
    Python cannot compile (RE2 syntax it lacks) is not checked.
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

    def pattern(validator: Any, regex: Any, instance: Any, schema: Any) -> Iterator[Any]:
        # Schemas are written for Go's RE2 (a CRD's patterns are checked by the API server),
        # which accepts some patterns Python's re does not, e.g. a flag group mid-pattern;
        # such a pattern is not checked rather than failing the whole object.
        if not isinstance(instance, str) or not isinstance(regex, str):
            return
        try:
            matched = re.search(regex, instance)
        except re.error:
            return
        if matched is None:
            yield error(f"{show(instance)} does not match {show(regex)}")

    return jsonschema.validators.extend(
        base,
        {
            "type": type_,
            "pattern": pattern,
            "enum": enum,
            "required": required,
            "additionalProperties": additional_properties,
            "oneOf": one_of,
        },
    )


def structural(messages: Any) -> Any:
    """``messages`` (see :func:`_json_messages`) read as a CRD's structural schema.

    Why not plain JSON Schema: the API server gives a CRD's ``openAPIV3Schema`` meanings
    JSON Schema lacks. An object field the schema does not declare is unknown, and an
    error under strict field validation, unless ``x-kubernetes-preserve-unknown-fields``
    keeps it or ``additionalProperties`` describes it; ``x-kubernetes-embedded-resource``
    allows ``apiVersion``, ``kind`` and ``metadata``; ``nullable`` admits null;
    ``x-kubernetes-int-or-string`` takes an integer or a string; ``exclusiveMinimum`` and
    ``exclusiveMaximum`` are OpenAPI's booleans. CEL rules (``x-kubernetes-validations``)
    and formats are not checked.
    """
    import jsonschema

    error = jsonschema.ValidationError
    base_type = messages.VALIDATORS["type"]
    base_enum = messages.VALIDATORS["enum"]
    base_minimum = messages.VALIDATORS["exclusiveMinimum"]
    base_maximum = messages.VALIDATORS["exclusiveMaximum"]

    def type_(validator: Any, types: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if instance is None and schema.get("nullable") is True:
            return
        yield from base_type(validator, types, instance, schema)
        names = types if isinstance(types, list) else [types]
        if "object" not in names or not isinstance(instance, dict):
            return
        if schema.get("x-kubernetes-preserve-unknown-fields") is True:
            return
        if "additionalProperties" in schema:
            return
        known = schema.get("properties") or {}
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        extras = sorted(
            (k for k in instance if k not in known and not (embedded and k in _EMBEDDED)),
            key=str,
        )
        if extras:
            names_ = ", ".join(show(key) for key in extras[:5]) + (", …" if len(extras) > 5 else "")
            verb = "was" if len(extras) == 1 else "were"
            yield error(
                f"Additional properties are not allowed ({names_} {verb} unexpected)",
                validator="additionalProperties",
            )

    def enum(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if instance is None and schema.get("nullable") is True:
            return
        yield from base_enum(validator, allowed, instance, schema)

    def int_or_string(validator: Any, on: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if on is not True or (instance is None and schema.get("nullable") is True):
            return
        if isinstance(instance, bool) or not isinstance(instance, int | str):
            yield error(f"{show(instance)} is not of type integer or string")

    def bound(base: Any, key: str, word: str) -> Callable[..., Iterator[Any]]:
        def check(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
            if not isinstance(value, bool):
                yield from base(validator, value, instance, schema)
                return
            limit = schema.get(key)
            numeric = isinstance(instance, int | float) and not isinstance(instance, bool)
            if value and numeric and isinstance(limit, int | float) and instance == limit:
                yield error(f"{show(instance)} is {word} or equal to the {key} of {show(limit)}")

        return check

    return jsonschema.validators.extend(
        messages,
        {
            "type": type_,
            "enum": enum,
            "x-kubernetes-int-or-string": int_or_string,
            "exclusiveMinimum": bound(base_minimum, "minimum", "less than"),
            "exclusiveMaximum": bound(base_maximum, "maximum", "greater than"),
        },
    )


#: What an embedded resource may hold beside its declared fields.
_EMBEDDED = ("apiVersion", "kind", "metadata")


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
