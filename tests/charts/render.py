"""Render the Helm chart offline with the Helm SDK (helm-python-sdk: Helm's own Go engine).

Why the real engine: a chart is only as good as what ``helm install`` would produce, and
Sprig functions, ``fromYaml``, ``lookup`` and schema validation behave as in Helm itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

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
) -> list[dict[str, Any]]:
    """Every object the chart renders for ``values`` (NOTES.txt and empty documents dropped),
    hooks included, as `helm install` renders them (``upgrade``: as `helm upgrade` does)."""
    with helm.Chart.load(str(chart_dir)) as chart:
        manifests = chart.render(
            values,
            name=name,
            namespace=namespace,
            is_install=not upgrade,
            is_upgrade=upgrade,
        )
    objects: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def notes(values: dict[str, Any] | None = None) -> str:
    """The rendered NOTES.txt."""
    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
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
