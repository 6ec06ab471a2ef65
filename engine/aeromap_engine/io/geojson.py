"""The survey boundary as a GeoJSON Polygon or MultiPolygon in the output CRS (named in the legacy `crs` member,
which GDAL reads), so other tools can use it to crop; and the boundary a user gives (the boundary option)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyproj

from ..atomic_files import atomic_path
from ..cloud.area import SurveyArea
from ..geo import WGS84, transform


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


@dataclass(frozen=True)
class UserBoundary:
    """Polygons a user limits the reconstruction to: GeoJSON Polygon coordinates, in `crs`."""

    polygons: tuple[list, ...]
    crs: str

    def area(self, crs: str, offset: tuple[float, float]) -> SurveyArea:
        """The polygons in another CRS, world frame (shifted by -offset)."""
        parts = [[transform(self.crs, crs, np.column_stack([np.asarray(ring)[:, :2], np.zeros(len(ring))]))[:, :2]
                  .tolist() for ring in rings] for rings in self.polygons]
        return SurveyArea.from_geometry({"type": "MultiPolygon", "coordinates": parts}, offset)


def _polygons_of(item: object, where: str) -> list[list]:
    """The Polygon coordinates in a GeoJSON object (geometry, Feature or FeatureCollection)."""
    if not isinstance(item, dict):
        raise ValueError(f"{where} is not a GeoJSON object")
    kind = item.get("type")
    if kind == "FeatureCollection":
        features = item.get("features")
        if not isinstance(features, list):
            raise ValueError(f"{where} has no list of features")
        return [p for n, feature in enumerate(features) for p in _polygons_of(feature, f"feature {n + 1}")]
    if kind == "Feature":
        return _polygons_of(item.get("geometry"), f"the geometry of {where}")
    if kind == "Polygon":
        return [_checked_rings(item.get("coordinates"), where)]
    if kind == "MultiPolygon":
        parts = item.get("coordinates")
        if not isinstance(parts, list):
            raise ValueError(f"{where} has no coordinates")
        return [_checked_rings(rings, where) for rings in parts]
    raise ValueError(f"{where} is a {kind!r}, not a Polygon, MultiPolygon, Feature or FeatureCollection")


def _checked_rings(rings: object, where: str) -> list:
    if not isinstance(rings, list) or not rings:
        raise ValueError(f"{where} has no rings")
    for ring in rings:
        if not isinstance(ring, list) or len(ring) < 4:
            raise ValueError(f"{where} has a ring of fewer than 4 positions")
        for position in ring:
            if (not isinstance(position, list) or len(position) < 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                               for v in position)):
                raise ValueError(f"{where} has a position that is not a pair of numbers: {position!r}")
    return rings


def parse_boundary(text: str) -> UserBoundary:
    """A boundary given as GeoJSON text: a Polygon or MultiPolygon, a Feature or a FeatureCollection of them,
    in WGS84 longitude and latitude unless a legacy `crs` member names another CRS. Raises ValueError saying
    what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    polygons = _polygons_of(data, "the boundary")
    if not polygons:
        raise ValueError("the boundary holds no polygon")
    crs = WGS84
    named = data.get("crs") if isinstance(data, dict) else None
    if named is not None:
        crs = named.get("properties", {}).get("name") if isinstance(named, dict) else None
        try:
            pyproj.CRS.from_user_input(crs)
        except (pyproj.exceptions.CRSError, TypeError):
            raise ValueError(f"the boundary's crs {crs!r} is not a coordinate reference system") from None
    return UserBoundary(tuple(polygons), crs)


def check_boundary(text: str) -> None:
    """The boundary option's check: empty (no boundary) or a boundary parse_boundary takes."""
    if text.strip():
        parse_boundary(text)
