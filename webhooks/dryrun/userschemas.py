"""Schemas the user supplies for kinds Kubernetes does not build in: CRDs and JSON schemas.

Why: a custom resource is only as checkable as its definition. Two sources are read. A
CustomResourceDefinition (among the inputs, or under ``--schema-location``) gives each of
its served versions' ``openAPIV3Schema``, validated as the API server would: a structural
schema, where an object field not declared is unknown (``kubectl apply`` refuses it under
strict field validation) unless ``x-kubernetes-preserve-unknown-fields`` says otherwise.
A JSON schema file under ``--schema-location`` (kubeconform users keep these) is used as
it is, for the kind its file name or its own ``apiVersion``/``kind`` enums name: the CRDs
catalog layout ``GROUP/KIND_VERSION.json``, or the ``x-kubernetes-group-version-kind`` of
a schema made from the Kubernetes OpenAPI document.

Every file is read at most once per run, through the one manifest reader (so with its
bounds), and a schema file that cannot be used stops the run naming it: a schema that
silently fails to load would pass every object it was meant to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from webhooks.manifests.errors import show
from webhooks.manifests.reader import Document, load, walk

CRD_KIND = "CustomResourceDefinition"
_CRD_GROUP = "apiextensions.k8s.io/"
#: The fields every object has whatever its CRD declares (the API server validates them).
_OBJECT_FIELDS = ("apiVersion", "kind", "metadata")


class SchemaLocationError(Exception):
    """A ``--schema-location`` that cannot be used; the message names the file."""


@dataclass(frozen=True, slots=True)
class UserSchema:
    """One kind's schema: ``structural`` for a CRD's, else a JSON schema used as written."""

    schema: Mapping[str, Any]
    structural: bool
    source: str


@dataclass(slots=True)
class UserSchemas:
    """The user's schemas by ``(apiVersion, lower-case kind)``; the first one given wins.

    Why lower case: the CRDs catalog names files by lower-case kind, and no API group
    defines two kinds that differ only in case. An entry is a schema, or the path of a
    catalog file not read yet.
    """

    by_key: dict[tuple[str, str], UserSchema | Path] = field(default_factory=dict)

    def get(self, api_version: str, kind: str) -> UserSchema | None:
        """The schema for ``apiVersion``/``kind``, or ``None``; a catalog file is read once.

        Raises :class:`SchemaLocationError` naming a catalog file that cannot be used.
        """
        key = (api_version, kind.lower())
        entry = self.by_key.get(key)
        if isinstance(entry, Path):
            entry = self.by_key[key] = read_catalog_file(entry)
        return entry

    def add(self, api_version: str, kind: str, schema: UserSchema) -> None:
        """Keep ``schema`` unless an earlier source already covers this kind."""
        self.by_key.setdefault((api_version, kind.lower()), schema)

    def index(self, api_version: str, kind: str, path: Path) -> None:
        """Note the catalog file ``path`` for this kind, to be read when first needed."""
        self.by_key.setdefault((api_version, kind.lower()), path)

    def learn(self, objects: Iterable[Any], source: str = "the inputs") -> int:
        """Add the schemas of every CustomResourceDefinition in ``objects``; how many."""
        added = 0
        for obj in objects:
            for api_version, kind, schema in crd_schemas(obj):
                self.add(api_version, kind, UserSchema(schema, True, source))
                added += 1
        return added


def is_crd(obj: Any) -> bool:
    """Whether ``obj`` is a CustomResourceDefinition (of any served or removed version)."""
    return (
        isinstance(obj, dict)
        and obj.get("kind") == CRD_KIND
        and isinstance(obj.get("apiVersion"), str)
        and obj["apiVersion"].startswith(_CRD_GROUP)
    )


def crd_schemas(obj: Any) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """``(apiVersion, kind, schema)`` for each served version of a CRD; nothing otherwise.

    Reads ``apiextensions.k8s.io/v1`` and the removed ``v1beta1`` shape (one
    ``spec.validation`` for every version, ``spec.version``), since old CRDs still define
    the kinds their custom resources use. A version without a schema accepts anything, as
    ``v1beta1`` did; a malformed CRD yields nothing (its own schema check reports it).
    """
    if not is_crd(obj):
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    group, names = spec.get("group"), spec.get("names")
    kind = names.get("kind") if isinstance(names, dict) else None
    if not isinstance(group, str) or not group or not isinstance(kind, str) or not kind:
        return
    shared = _openapi(spec.get("validation"))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        version = spec.get("version")
        versions = [{"name": version, "served": True}] if isinstance(version, str) else []
    for entry in versions:
        if not isinstance(entry, dict) or entry.get("served", True) is not True:
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            continue
        schema = _openapi(entry.get("schema"))
        if schema is None:
            schema = shared
        yield f"{group}/{name}", kind, root_schema(schema)


def _openapi(holder: Any) -> dict[str, Any] | None:
    found = holder.get("openAPIV3Schema") if isinstance(holder, dict) else None
    return found if isinstance(found, dict) else None


def root_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The CRD's root schema, with the fields every object has allowed at the root.

    Why: a CRD may declare ``apiVersion``, ``kind`` and ``metadata`` or not, and the API
    server accepts them either way, validating ``metadata`` as ObjectMeta itself (a CRD
    may only narrow ``metadata.name``). Only the root is copied, never the tree, which may
    be nested thousands of levels.
    """
    if schema is None:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    properties = dict(schema.get("properties") or {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    metadata = properties.get("metadata")
    properties["metadata"] = {
        **(metadata if isinstance(metadata, dict) else {}),
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    return {**schema, "properties": properties}


def load_locations(paths: Iterable[str]) -> UserSchemas:
    """The schemas under ``paths`` (files, or directories of YAML and JSON files).

    A file given by name must be usable as a whole: CRDs (other objects beside them are
    passed over, as a ``kustomization.yaml`` often is) or a JSON schema whose kind is told
    by its ``GROUP/KIND_VERSION.json`` name or by itself. In a directory, the JSON files
    in the CRDs catalog layout are indexed by name and read the first time an object needs
    one (a whole catalog clone holds thousands); of the other files, the CRDs and the JSON
    schemas that name their kind are taken, and what is neither is passed over (a catalog
    clone also holds its CI workflows and templates). A schema file that is recognised
    but cannot be used raises :class:`SchemaLocationError` naming it, and so does a
    location that holds no schema at all.
    """
    found = UserSchemas()
    for path in paths:
        target = Path(path)
        added = _directory(found, target) if target.is_dir() else _file(found, path)
        if not added:
            raise SchemaLocationError(
                f"--schema-location {path}: no CustomResourceDefinition or JSON schema found"
            )
    return found


def _file(found: UserSchemas, path: str) -> int:
    manifests = load([path], objects=False)
    if manifests.problems:
        raise SchemaLocationError(f"--schema-location {manifests.problems[0]}")
    return sum(_add_document(found, doc, strict=True) for doc in manifests.documents)


def _directory(found: UserSchemas, root: Path) -> int:
    try:
        files = list(walk(root))
    except OSError as exc:
        raise SchemaLocationError(
            f"--schema-location {root}: cannot read: {exc.strerror}"
        ) from None
    added = 0
    for file in files:
        key = catalog_key(file)
        if key is not None:
            found.index(*key, file)
            added += 1
            continue
        manifests = load([str(file)], objects=False)
        if not manifests.problems:
            added += sum(_add_document(found, doc, strict=False) for doc in manifests.documents)
    return added


def catalog_key(path: PurePath) -> tuple[str, str] | None:
    """``(apiVersion, kind)`` of a ``GROUP/KIND_VERSION.json`` path, else ``None``.

    The CRDs catalog layout kubeconform users point ``-schema-location`` at, read from the
    file's own name and its directory's, so a location may be the catalog or one group
    of it. A custom resource's group always holds a dot, which tells it from other
    directories.
    """
    group, name = path.parent.name, path.name
    if "." not in group or not name.endswith(".json"):
        return None
    kind, sep, version = name[: -len(".json")].rpartition("_")
    if not sep or not kind or not version:
        return None
    return f"{group}/{version}", kind


def read_catalog_file(path: Path) -> UserSchema:
    """The JSON schema of one catalog file; :class:`SchemaLocationError` names it if unusable."""
    manifests = load([str(path)], objects=False)
    if manifests.problems:
        raise SchemaLocationError(f"--schema-location {manifests.problems[0]}")
    docs = [doc for doc in manifests.documents if doc.obj is not None]
    if len(docs) != 1 or not isinstance(docs[0].obj, dict):
        raise SchemaLocationError(f"--schema-location {path}: not one JSON schema")
    _check_schema(docs[0].obj, f"{path}:{docs[0].line}")
    return UserSchema(docs[0].obj, False, str(path))


def _add_document(found: UserSchemas, doc: Document, *, strict: bool) -> int:
    """Add what ``doc`` defines; ``strict`` (a file named by the user) refuses the rest."""
    obj = doc.obj
    if obj is None:
        return 0
    where = f"{doc.path}:{doc.line}" if doc.line > 0 else doc.path
    if not isinstance(obj, dict):
        if strict:
            raise SchemaLocationError(f"--schema-location {where}: not a JSON schema or a CRD")
        return 0
    if is_crd(obj):
        for _, _, schema in crd_schemas(obj):
            _check_schema(schema, where)
        added = found.learn([obj], doc.path)
        if not added:
            raise SchemaLocationError(
                f"--schema-location {where}: a CustomResourceDefinition with no served "
                "version of a named group and kind"
            )
        return added
    if isinstance(obj.get("kind"), str):
        return 0  # another Kubernetes object beside the CRDs
    keys = list(_schema_keys(obj))
    if not keys and strict:
        named = catalog_key(PurePath(doc.path))
        keys = [named] if named is not None else []
    if not keys:
        if strict:
            raise SchemaLocationError(
                f"--schema-location {where}: cannot tell which apiVersion and kind this JSON "
                "schema is for: name the file GROUP/KIND_VERSION.json, or give the "
                "CustomResourceDefinition itself"
            )
        return 0
    _check_schema(obj, where)
    for api_version, kind in keys:
        found.add(api_version, kind, UserSchema(obj, False, doc.path))
    return len(keys)


#: JSON Schema's type names, OpenAPI's among them.
_TYPES = frozenset(("array", "boolean", "integer", "null", "number", "object", "string"))
#: Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
_ONE = ("additionalProperties", "items", "not", "additionalItems", "contains", "if", "then", "else")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def schema_problem(schema: Any) -> tuple[str, str] | None:
    """The first place ``schema`` cannot be used as a JSON schema, as ``(path, reason)``.

    Why not the meta-schema: validating a 700 KB CRD schema against it takes seconds, and
    its ``regex`` format refuses RE2 syntax the API server accepts. This walks the tree
    once, without recursion, and checks the shapes validation depends on: each schema an
    object or a boolean, ``type`` known names, ``required`` and ``enum`` lists, and the
    keywords that hold schemas holding schemas.
    """
    todo: list[tuple[Any, str]] = [(schema, "")]
    while todo:
        node, at = todo.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            return at or "<root>", f"{show(node, 60)} is not a schema (an object or a boolean)"
        kind = node.get("type")
        names = kind if isinstance(kind, list) else [kind]
        if kind is not None and not all(isinstance(n, str) and n in _TYPES for n in names):
            return f"{at}/type".lstrip("/"), f"{show(kind, 60)} is not a type name"
        for key, shape in (("required", str), ("enum", object)):
            value = node.get(key)
            if value is not None and (
                not isinstance(value, list) or not all(isinstance(v, shape) for v in value)
            ):
                return f"{at}/{key}".lstrip("/"), f"{show(value, 60)} is not a list"
        for key in _ONE:
            if key in node and not (key == "items" and isinstance(node[key], list)):
                todo.append((node[key], f"{at}/{key}"))
            elif key == "items" and key in node:
                todo.extend((item, f"{at}/items/{i}") for i, item in enumerate(node[key]))
        for key in _LIST:
            value = node.get(key)
            if value is not None and not isinstance(value, list):
                return f"{at}/{key}".lstrip("/"), f"{show(value, 60)} is not a list of schemas"
            todo.extend((item, f"{at}/{key}/{i}") for i, item in enumerate(value or ()))
        for key in _MAP:
            value = node.get(key)
            if value is not None and not isinstance(value, dict):
                return f"{at}/{key}".lstrip("/"), f"{show(value, 60)} is not a map of schemas"
            todo.extend((item, f"{at}/{key}/{name}") for name, item in (value or {}).items())
    return None


def _check_schema(schema: Any, where: str) -> None:
    problem = schema_problem(schema)
    if problem is not None:
        at, reason = problem
        raise SchemaLocationError(
            f"--schema-location {where}: not a valid JSON schema at {at}: {reason}"
        )


def _schema_keys(schema: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The ``(apiVersion, kind)`` pairs a JSON schema names itself, if any."""
    gvks = schema.get("x-kubernetes-group-version-kind")
    if isinstance(gvks, list):
        for gvk in gvks:
            if isinstance(gvk, dict) and isinstance(gvk.get("kind"), str):
                group, version = gvk.get("group") or "", gvk.get("version")
                if isinstance(group, str) and isinstance(version, str) and version:
                    yield (f"{group}/{version}" if group else version), gvk["kind"]
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        apis = _enum(properties.get("apiVersion"))
        kinds = _enum(properties.get("kind"))
        yield from ((api, kind) for api in apis for kind in kinds)


def _enum(schema: Any) -> list[str]:
    values = schema.get("enum") if isinstance(schema, dict) else None
    return [v for v in values if isinstance(v, str) and v] if isinstance(values, list) else []
