"""The survey boundary as a GeoJSON polygon in the output CRS (named in the legacy `crs` member, which GDAL
reads), so other tools can use it to crop."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..files import atomic_path


def write_polygon(path: Path, vertices: np.ndarray, crs: str | None) -> None:
    ring = [[float(x), float(y)] for x, y in vertices] + [[float(vertices[0, 0]), float(vertices[0, 1])]]
    data = {"type": "FeatureCollection",
            "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
                                                                          "coordinates": [ring]}}]}
    if crs is not None:
        data["crs"] = {"type": "name", "properties": {"name": crs}}
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data))


def read_polygon(path: Path) -> np.ndarray:
    """The outer ring's vertices (N, 2) of the first polygon, without the closing repeat."""
    data = json.loads(path.read_text())
    ring = np.asarray(data["features"][0]["geometry"]["coordinates"][0], dtype=np.float64)
    return ring[:-1] if len(ring) > 1 and np.array_equal(ring[0], ring[-1]) else ring
