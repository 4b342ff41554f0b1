"""Schemas the user supplies: CRDs read as the API server reads them, and schema locations."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("kubernetes_validate")

from webhooks.dryrun.schema import KubernetesSchema
from webhooks.dryrun.userschemas import SchemaLocationError, UserSchemas, load_locations

#: The schema of a small custom resource, one field per structural-schema rule.
SPEC: dict[str, Any] = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "minimum": 1, "exclusiveMinimum": True},
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string", "nullable": True},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        },
        "opaque": {"type": "object"},
    },
}


def _crd(*versions: tuple[str, bool], group: str = "example.com") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": name,
                    "served": served,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}},
                }
                for name, served in versions
            ],
        },
    }


def _widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"app": "w"}, "annotations": {"a": "b"}},
        "spec": {"size": 2, **spec},
    }


@pytest.fixture(scope="module")
def schema() -> KubernetesSchema:
    checker = KubernetesSchema("1.30")
    checker.learn([_crd(("v1", True), ("v2", False))])
    return checker


STRUCTURAL = [
    pytest.param({}, [], id="a valid resource, metadata free of the CRD's schema, passes"),
    pytest.param(
        {"sise": 3},
        ['spec: Additional properties are not allowed ("sise" was unexpected)'],
        id="a field the CRD does not declare is unknown",
    ),
    pytest.param(
        {"opaque": {"x": 1}},
        ['spec.opaque: Additional properties are not allowed ("x" was unexpected)'],
        id="an object with no properties declared holds no unknown field",
    ),
    pytest.param(
        {"extra": {"anything": {"at": "all"}}}, [], id="preserve-unknown-fields keeps anything"
    ),
    pytest.param(
        {"labels": {"a": 1}}, ["spec.labels.a: 1 is not of type string"], id="a map's values"
    ),
    pytest.param({"note": None}, [], id="nullable admits null"),
    pytest.param({"port": "http"}, [], id="int-or-string takes a string"),
    pytest.param({"port": 8080}, [], id="int-or-string takes an integer"),
    pytest.param(
        {"port": True},
        ["spec.port: true is not of type integer or string"],
        id="int-or-string refuses a boolean",
    ),
    pytest.param(
        {"size": 1},
        ["spec.size: 1 is less than or equal to the minimum of 1"],
        id="OpenAPI's boolean exclusiveMinimum excludes the minimum",
    ),
    pytest.param(
        {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"x": 1}}},
        [],
        id="an embedded resource may hold apiVersion, kind and metadata",
    ),
    pytest.param(
        {"template": {"kind": "Pod", "status": {}}},
        ['spec.template: Additional properties are not allowed ("status" was unexpected)'],
        id="an embedded resource holds no other undeclared field",
    ),
]


@pytest.mark.parametrize(("spec", "messages"), STRUCTURAL)
def test_a_crd_schema_is_read_as_a_structural_schema(
    schema: KubernetesSchema, spec: dict[str, Any], messages: list[str]
) -> None:
    obj = _widget(**spec)
    errors = schema.errors(obj)
    assert errors is not None
    assert [e.message for e in errors] == messages


def test_a_version_the_crd_does_not_serve_has_no_schema(schema: KubernetesSchema) -> None:
    errors = schema.errors({**_widget(), "apiVersion": "example.com/v2"})
    assert errors is not None
    assert [e.message.split(":")[0] for e in errors] == ["no schema for example.com/v2 Widget"]


def test_the_first_definition_of_a_kind_wins() -> None:
    first, second = _crd(("v1", True)), _crd(("v1", True))
    second["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    user = UserSchemas()
    assert user.learn([first, second]) == 2
    checker = KubernetesSchema("1.30", user=user)
    errors = checker.errors(_widget(sise=1))
    assert errors is not None and len(errors) == 1


def test_a_v1beta1_crd_still_defines_its_kind() -> None:
    old = {
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "version": "v1",
            "names": {"kind": "Widget", "plural": "widgets"},
            "validation": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}},
        },
    }
    checker = KubernetesSchema("1.30")
    checker.learn([old])
    errors = checker.errors(_widget(sise=1))
    assert errors is not None
    assert [e.path for e in errors] == ["spec.sise"]


def test_a_malformed_crd_schema_among_the_inputs_is_a_finding_naming_its_source() -> None:
    crd = _crd(("v1", True))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
        "type": "object",
        "properties": [],
    }
    checker = KubernetesSchema("1.30")
    checker.learn([crd])
    errors = checker.errors(_widget())
    assert errors is not None
    ((path, message, action),) = errors
    assert (path, action) == ("apiVersion", "enforce")
    assert message.startswith("the schema of example.com/v1 Widget from the inputs cannot be used")


# Schema locations ------------------------------------------------------------------------


def _write(root: Path, files: dict[str, Any]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content)
        elif name.endswith(".json"):
            path.write_text(json.dumps(content))
        else:
            path.write_text(yaml.safe_dump_all(content))


STRICT_SPEC = {"type": "object", "additionalProperties": False, "properties": {"size": {}}}
CATALOG = {"type": "object", "properties": {"spec": STRICT_SPEC}}
NAMED = {
    "type": "object",
    "properties": {
        "apiVersion": {"enum": ["example.com/v1"]},
        "kind": {"enum": ["Widget"]},
        "spec": STRICT_SPEC,
    },
}

LOCATIONS = [
    pytest.param(
        {"crds/widget.yaml": [_crd(("v1", True)), {"apiVersion": "v1", "kind": "ConfigMap"}]},
        "crds",
        id="a directory of CRDs beside other objects",
    ),
    pytest.param({"crds/widget.yaml": [_crd(("v1", True))]}, "crds/widget.yaml", id="one CRD file"),
    pytest.param(
        {"schemas/example.com/widget_v1.json": CATALOG},
        "schemas",
        id="the CRDs catalog layout GROUP/KIND_VERSION.json",
    ),
    pytest.param(
        {"schemas/example.com/widget_v1.json": CATALOG},
        "schemas/example.com",
        id="one group of the catalog",
    ),
    pytest.param(
        {"schemas/example.com/widget_v1.json": CATALOG},
        "schemas/example.com/widget_v1.json",
        id="one file of the catalog",
    ),
    pytest.param(
        {"schemas/widget.json": NAMED},
        "schemas",
        id="a JSON schema naming its apiVersion and kind",
    ),
]


@pytest.mark.parametrize(("files", "location"), LOCATIONS)
def test_a_location_supplies_the_schema_of_a_custom_kind(
    tmp_path: Path, files: dict[str, Any], location: str
) -> None:
    _write(tmp_path, files)
    checker = KubernetesSchema("1.30", user=load_locations([str(tmp_path / location)]))
    assert checker.errors(_widget()) == []
    errors = checker.errors(_widget(sise=1))
    assert errors is not None
    assert [e.path for e in errors] == ["spec.sise"]


def _unusable_crd() -> dict[str, Any]:
    crd = _crd(("v1", True), group="example.org")
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {"required": "x"}
    return crd


UNUSABLE = [
    pytest.param({"s/a.yaml": "kind: [\n"}, "s/a.yaml", "s/a.yaml:2: ", id="invalid YAML"),
    pytest.param({"s/a.json": ["a list"]}, "s/a.json", "not a JSON schema or a CRD", id="a list"),
    pytest.param(
        {"s/widget_v1.json": CATALOG},
        "s/widget_v1.json",
        "s/widget_v1.json:1: cannot tell which apiVersion and kind",
        id="a JSON schema whose kind cannot be told",
    ),
    pytest.param(
        {"s/example.com/widget_v1.json": {"type": 5}},
        "s/example.com/widget_v1.json",
        "s/example.com/widget_v1.json:1: not a valid JSON schema at type: 5 is not a type name",
        id="an invalid JSON schema",
    ),
    pytest.param(
        {"s/crd.yaml": [{**_crd(), "spec": {"group": "example.com"}}]},
        "s",
        "s/crd.yaml:1: a CustomResourceDefinition with no served version",
        id="a CRD that defines nothing, even in a directory",
    ),
    pytest.param(
        {"s/good.yaml": [_crd(("v1", True))], "s/bad/crd.yaml": [_unusable_crd()]},
        "s",
        's/bad/crd.yaml:1: not a valid JSON schema at required: "x" is not a list',
        id="a CRD whose schema cannot be used, even in a directory",
    ),
    pytest.param(
        {"s/only.yaml": [{"apiVersion": "v1", "kind": "ConfigMap"}]},
        "s/only.yaml",
        "s/only.yaml: no CustomResourceDefinition or JSON schema found",
        id="a file with no schema",
    ),
    pytest.param(
        {"s/a.yaml": "kind: [\n", "s/b.json": ["a list"], "s/widget_v1.json": CATALOG},
        "s",
        "s: no CustomResourceDefinition or JSON schema found",
        id="a directory of nothing recognisable",
    ),
    pytest.param({}, "nowhere", "nowhere: cannot read: No such file", id="a missing path"),
]


@pytest.mark.parametrize(("files", "location", "reason"), UNUSABLE)
def test_an_unusable_location_names_the_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, Any],
    location: str,
    reason: str,
) -> None:
    _write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SchemaLocationError) as raised:
        load_locations([location])
    assert str(raised.value).startswith("--schema-location ")
    assert reason in str(raised.value)


def test_a_directory_passes_over_what_is_not_a_schema(tmp_path: Path) -> None:
    # A catalog clone or a CRD directory also holds CI workflows, templates and the like.
    _write(
        tmp_path,
        {
            ".krew.yaml": "spec: {{ .Version }}\n",
            ".github/workflows/ci.yaml": [{"on": "push", "jobs": {}}],
            "index.json": {"groups": ["example.com"]},
            "config/crd/widget.yaml": [_crd(("v1", True))],
            "config/crd/kustomization.yaml": [{"kind": "Kustomization", "resources": []}],
        },
    )
    checker = KubernetesSchema("1.30", user=load_locations([str(tmp_path)]))
    errors = checker.errors(_widget(sise=1))
    assert errors is not None
    assert [e.path for e in errors] == ["spec.sise"]


def test_a_catalog_file_is_read_only_when_a_kind_needs_it(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "example.com/widget_v1.json": CATALOG,
            "example.org/broken_v1.json": "{not json",
        },
    )
    checker = KubernetesSchema("1.30", user=load_locations([str(tmp_path)]))
    assert checker.errors(_widget()) == []
    broken = {"apiVersion": "example.org/v1", "kind": "Broken"}
    with pytest.raises(SchemaLocationError, match=r"example.org/broken_v1.json:\d+: invalid"):
        checker.errors(broken)


def test_the_first_location_to_cover_a_kind_wins(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "one/example.com/widget_v1.json": {"type": "object"},
            "two/crd.yaml": [_crd(("v1", True))],
        },
    )
    first = load_locations([str(tmp_path / "one"), str(tmp_path / "two")])
    assert KubernetesSchema("1.30", user=first).errors(_widget(sise=1)) == []
    second = load_locations([str(tmp_path / "two"), str(tmp_path / "one")])
    errors = KubernetesSchema("1.30", user=second).errors(_widget(sise=1))
    assert errors is not None and [e.path for e in errors] == ["spec.sise"]


def test_a_fifo_location_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "schemas.json"
    os.mkfifo(fifo)
    with pytest.raises(SchemaLocationError, match="FIFO"):
        load_locations([str(fifo)])
