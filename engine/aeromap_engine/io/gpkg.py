"""GeoPackage writing through GDAL's vector driver (pyogrio): one layer of one MultiPolygon feature in a CRS. The
file is written under a temporary name and renamed into place when complete."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyogrio.raw

from ..atomic_files import atomic_path

LITTLE_ENDIAN = 1
WKB_POLYGON, WKB_MULTIPOLYGON = 3, 6


def polygons_wkb(polygons: list[list[np.ndarray]]) -> bytes:
    """ISO WKB of a MultiPolygon: each polygon a list of closed rings, (N, 2) arrays."""
    parts = [struct.pack("<BII", LITTLE_ENDIAN, WKB_MULTIPOLYGON, len(polygons))]
    for rings in polygons:
        parts.append(struct.pack("<BII", LITTLE_ENDIAN, WKB_POLYGON, len(rings)))
        for ring in rings:
            points = np.ascontiguousarray(ring, dtype="<f8")
            parts.append(struct.pack("<I", len(points)) + points.tobytes())
    return b"".join(parts)


def write_polygons(path: Path, layer: str, geometry: dict, crs: str | None) -> None:
    """A GeoPackage at `path` with one feature table `layer` holding `geometry` (a GeoJSON Polygon or
    MultiPolygon in `crs`; None: a local frame) as one MultiPolygon feature."""
    parts = [geometry["coordinates"]] if geometry["type"] == "Polygon" else geometry["coordinates"]
    polygons = [[np.asarray(ring, dtype=np.float64)[:, :2] for ring in rings] for rings in parts]
    wkb = np.array([polygons_wkb(polygons)], dtype=object)
    with atomic_path(path) as tmp:
        tmp.unlink(missing_ok=True)
        pyogrio.raw.write(str(tmp), wkb, [], [], layer=layer, driver="GPKG", geometry_type="MultiPolygon", crs=crs)
