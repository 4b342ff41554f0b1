"""``--schema``: strict validation against the Kubernetes OpenAPI schemas of a given version.

The schemas ship with ``kubernetes-validate`` (the optional ``schema`` extra), imported only
when ``--schema`` is used. Validators are built once per (apiVersion, kind) and reused: the
package's own ``validate()`` re-reads and re-parses a 1.5 MB definitions file on every call,
which would make checking a chart take seconds per object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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
            validator = jsonschema.Draft202012Validator(schema, registry=registry)
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


def _dotted(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else part)
    return out
