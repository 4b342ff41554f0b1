"""Render the Helm chart offline with the Helm SDK (helm-python-sdk: Helm's own Go engine).

Why the real engine: a chart is only as good as what ``helm install`` would produce, and
Sprig functions, ``fromYaml``, ``lookup`` and schema validation behave as in Helm itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml
from helm_python import _native

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "placement-webhooks"
RELEASE = "placement-webhooks"
NAMESPACE = "placement"


def render(
    values: dict[str, Any] | None = None,
    *,
    name: str = RELEASE,
    namespace: str = NAMESPACE,
    chart_dir: Path = CHART,
    upgrade: bool = False,
    kube_version: str | None = None,
) -> list[dict[str, Any]]:
    """Every object the chart renders for ``values`` (NOTES.txt and empty documents dropped),
    hooks included, as `helm install` renders them (``upgrade``: as `helm upgrade` does),
    for a cluster of ``kube_version`` (``helm template --kube-version``; Helm's default
    otherwise)."""
    manifests = _manifests(
        values,
        name=name,
        namespace=namespace,
        chart_dir=chart_dir,
        upgrade=upgrade,
        kube_version=kube_version,
    )
    objects: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def _manifests(
    values: dict[str, Any] | None,
    *,
    name: str = RELEASE,
    namespace: str = NAMESPACE,
    chart_dir: Path = CHART,
    upgrade: bool = False,
    kube_version: str | None = None,
) -> dict[str, str]:
    """Each template's rendered text, by path.

    Why the SDK's render call directly when a version is given: its Python wrapper does not
    pass ``kube_version`` on, while the engine beneath takes it (``.Capabilities.KubeVersion``).
    """
    opts: dict[str, Any] = {"name": name, "namespace": namespace}
    opts |= {"is_install": not upgrade, "is_upgrade": upgrade}
    with helm.Chart.load(str(chart_dir)) as chart:
        if kube_version is None:
            return chart.render(values, **opts)
        raw = _native.call_string(
            "helm_render",
            chart._raw(),  # the handle the wrapper passes itself
            json.dumps(values) if values is not None else None,
            json.dumps({**opts, "kube_version": kube_version}),
        )
        manifests: dict[str, str] = json.loads(raw)
        return manifests


def notes(values: dict[str, Any] | None = None, *, kube_version: str | None = None) -> str:
    """The rendered NOTES.txt."""
    manifests = _manifests(values, kube_version=kube_version)
    return next(text for path, text in manifests.items() if path.endswith("NOTES.txt"))


def is_hook(obj: dict[str, Any]) -> bool:
    """Whether Helm treats ``obj`` as a hook (run at an event, not part of the release)."""
    return "helm.sh/hook" in (obj.get("metadata", {}).get("annotations") or {})


def released(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects of the release itself: hooks left out."""
    return [obj for obj in objects if not is_hook(obj)]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of ``kind``, in render order."""
    return [obj for obj in objects if obj.get("kind") == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The single object of ``kind`` (fails the test when there is not exactly one)."""
    found = of_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def chart_table() -> list[dict[str, Any]]:
    """The chart's plugin table (files/plugins.yaml), as the templates read it."""
    data = yaml.safe_load((CHART / "files" / "plugins.yaml").read_text(encoding="utf-8"))
    return list(data["plugins"])


def values_file() -> dict[str, Any]:
    """The chart's default values.yaml."""
    data = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def chart_finding(tmp_path: Path, template: str, lookup: str, existing: dict[str, Any]) -> Path:
    """A copy of the chart under ``tmp_path`` whose one ``lookup`` call in ``template`` (a
    file under ``templates/``) answers with ``existing``, as on a live cluster.

    Offline, Helm's ``lookup`` always answers nothing; swapping that one call for a file
    read lets the real engine run the upgrade branches of the template unchanged otherwise.
    """
    copy_dir = tmp_path / "chart"
    shutil.copytree(CHART, copy_dir)
    path = copy_dir / "templates" / template
    text = path.read_text(encoding="utf-8")
    assert text.count(lookup) == 1
    path.write_text(text.replace(lookup, '(.Files.Get "existing.yaml" | fromYaml)'))
    (copy_dir / "existing.yaml").write_text(yaml.safe_dump(existing))
    return copy_dir
