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

Every file is read once per run, through the one manifest reader (so with its bounds),
and a file that cannot be used stops the run naming it: a schema that silently fails to
load would pass every object it was meant to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from webhooks.manifests.reader import Document, load

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
    defines two kinds that differ only in case.
    """

    by_key: dict[tuple[str, str], UserSchema] = field(default_factory=dict)

    def get(self, api_version: str, kind: str) -> UserSchema | None:
        """The schema for ``apiVersion``/``kind``, or ``None``."""
        return self.by_key.get((api_version, kind.lower()))

    def add(self, api_version: str, kind: str, schema: UserSchema) -> None:
        """Keep ``schema`` unless an earlier source already covers this kind."""
        self.by_key.setdefault((api_version, kind.lower()), schema)

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
    """Every schema under ``paths`` (files or directories of YAML or JSON), read once.

    Raises :class:`SchemaLocationError` naming the first file that cannot be used: one
    that cannot be read or parsed, a JSON schema whose kind cannot be told, a location
    that holds no schema at all. Other Kubernetes objects in the files are passed over,
    because a directory of CRDs commonly holds a ``kustomization.yaml`` too.
    """
    found = UserSchemas()
    for path in paths:
        manifests = load([path])
        if manifests.problems:
            raise SchemaLocationError(f"--schema-location {manifests.problems[0]}")
        added = 0
        for doc in manifests.documents:
            added += _add_document(found, doc, path)
        if not added:
            raise SchemaLocationError(
                f"--schema-location {path}: no CustomResourceDefinition or JSON schema found"
            )
    return found


def _add_document(found: UserSchemas, doc: Document, location: str) -> int:
    obj = doc.obj
    if obj is None:
        return 0
    where = f"{doc.path}:{doc.line}" if doc.line > 0 else doc.path
    if not isinstance(obj, dict):
        raise SchemaLocationError(f"--schema-location {where}: not a JSON schema or a CRD")
    if is_crd(obj):
        added = found.learn([obj], doc.path)
        if not added:
            raise SchemaLocationError(
                f"--schema-location {where}: a CustomResourceDefinition with no served "
                "version of a named group and kind"
            )
        return added
    if isinstance(obj.get("kind"), str):
        return 0  # another Kubernetes object beside the CRDs
    _check_schema(obj, where)
    keys = list(_schema_keys(obj, doc.path, location))
    if not keys:
        raise SchemaLocationError(
            f"--schema-location {where}: cannot tell which apiVersion and kind this JSON "
            "schema is for: name the file GROUP/KIND_VERSION.json under the location, or "
            "give the CustomResourceDefinition itself"
        )
    for api_version, kind in keys:
        found.add(api_version, kind, UserSchema(obj, False, doc.path))
    return len(keys)


def _check_schema(schema: dict[str, Any], where: str) -> None:
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "/".join(map(str, exc.absolute_path)) or "<root>"
        raise SchemaLocationError(
            f"--schema-location {where}: not a valid JSON schema at {at}: {exc.message}"
        ) from None
    except RecursionError:
        raise SchemaLocationError(
            f"--schema-location {where}: a JSON schema nested too deeply to check"
        ) from None


def _schema_keys(schema: dict[str, Any], path: str, location: str) -> Iterator[tuple[str, str]]:
    """The ``(apiVersion, kind)`` pairs a JSON schema is for, from itself or its file name."""
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
        if apis and kinds:
            yield from ((api, kind) for api in apis for kind in kinds)
            return
    # The CRDs catalog layout: GROUP/KIND_VERSION.json, below the location given.
    parts = PurePath(path).parts
    if len(parts) >= 2 and path != location:
        group, name = parts[-2], PurePath(parts[-1]).stem
        kind, sep, version = name.rpartition("_")
        if sep and kind and version and "." in group:
            yield f"{group}/{version}", kind


def _enum(schema: Any) -> list[str]:
    values = schema.get("enum") if isinstance(schema, dict) else None
    return [v for v in values if isinstance(v, str) and v] if isinstance(values, list) else []
