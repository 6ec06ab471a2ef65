"""The survey boundary as a GeoJSON Polygon or MultiPolygon in the output CRS (named in the legacy `crs` member,
which GDAL reads), so other tools can use it to crop."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..atomic_files import atomic_path
from ..cloud.area import SurveyArea


def write_polygon(path: Path, vertices: np.ndarray, crs: str | None) -> None:
    ring = [[float(x), float(y)] for x, y in vertices] + [[float(vertices[0, 0]), float(vertices[0, 1])]]
    write_geometry(path, {"type": "Polygon", "coordinates": [ring]}, crs)


def write_geometry(path: Path, geometry: dict, crs: str | None) -> None:
    """One feature holding `geometry` (a GeoJSON geometry object)."""
    data = {"type": "FeatureCollection",
            "features": [{"type": "Feature", "properties": {}, "geometry": geometry}]}
    if crs is not None:
        data["crs"] = {"type": "name", "properties": {"name": crs}}
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data))


def read_geometry(path: Path) -> dict:
    """The first feature's geometry."""
    return json.loads(path.read_text())["features"][0]["geometry"]


def read_polygon(path: Path) -> np.ndarray:
    """The outer ring's vertices (N, 2) of the first polygon (of a MultiPolygon too), without the closing
    repeat."""
    geometry = read_geometry(path)
    rings = geometry["coordinates"][0] if geometry["type"] == "MultiPolygon" else geometry["coordinates"]
    ring = np.asarray(rings[0], dtype=np.float64)
    return ring[:-1] if len(ring) > 1 and np.array_equal(ring[0], ring[-1]) else ring


def read_survey_area(path: Path, offset: tuple[float, float]) -> SurveyArea:
    """The surveyed area that odm_filterpoints outlined (bounds.geojson, in the CRS), in the world frame."""
    return SurveyArea.from_geometry(read_geometry(path), offset)
