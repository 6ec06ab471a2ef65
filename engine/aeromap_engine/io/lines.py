"""Lines with a height, written through GDAL's vector drivers (pyogrio): contour lines as GeoJSON, GeoPackage, DXF
or a zipped Shapefile. Each line is a LineString Z at its height, with the height also as the field `level` where
the format holds fields (DXF holds none of its own: CAD reads the Z)."""

from __future__ import annotations

import struct
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pyogrio.raw

from ..atomic_files import atomic_path

LITTLE_ENDIAN = 1
WKB_LINESTRING_Z = 1002
# Format name (WebODM's contours plugin) -> GDAL driver, file extension of the result.
LINE_FORMATS = {"GeoJSON": ("GeoJSON", "geojson"), "GPKG": ("GPKG", "gpkg"), "DXF": ("DXF", "dxf"),
                "ESRI Shapefile": ("ESRI Shapefile", "zip")}


def line_wkb(points: np.ndarray, z: float) -> bytes:
    """ISO WKB of a LineString Z: (n, 2) points at height z."""
    xyz = np.column_stack([points, np.full(len(points), z)]).astype("<f8")
    return struct.pack("<BII", LITTLE_ENDIAN, WKB_LINESTRING_Z, len(xyz)) + xyz.tobytes()


def write_lines(path: Path, lines: list[tuple[float, np.ndarray]], crs: str, fmt: str, layer: str) -> None:
    """`lines` as (height, (n, 2) points in `crs`) to `path` in format `fmt` (a key of LINE_FORMATS)."""
    driver, _ = LINE_FORMATS[fmt]
    geometry = np.array([line_wkb(points, level) for level, points in lines], dtype=object)
    fields = ([], []) if driver == "DXF" else ([np.array([level for level, _ in lines], dtype=np.float64)],
                                               ["level"])
    with atomic_path(path) as tmp:
        tmp.unlink(missing_ok=True)
        if driver != "ESRI Shapefile":
            pyogrio.raw.write(str(tmp), geometry, fields[0], fields[1], layer=layer, driver=driver,
                              geometry_type="LineString Z", crs=crs)
            return
        # A Shapefile is several files: they travel zipped, as WebODM's contours do.
        with tempfile.TemporaryDirectory(dir=tmp.parent) as folder:
            shapefile = Path(folder, f"{layer}.shp")
            pyogrio.raw.write(str(shapefile), geometry, fields[0], fields[1], layer=layer, driver=driver,
                              geometry_type="LineString Z", crs=crs)
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
                for part in sorted(Path(folder).iterdir()):
                    archive.write(part, part.name)
