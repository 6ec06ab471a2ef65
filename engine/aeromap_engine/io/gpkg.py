"""GeoPackage writing (OGC 12-128r18, version 1.4): one feature table of polygons in a CRS, written with SQLite as
the standard lays it out, since no vector library is among the engine's dependencies (GDAL through rasterio reads
and writes rasters only). The file is written under a temporary name and renamed into place when complete."""

from __future__ import annotations

import sqlite3
import struct
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from pyproj import CRS

from ..atomic_files import atomic_path

APPLICATION_ID = 0x47504B47  # "GPKG"
USER_VERSION = 10400  # 1.4.0
WKB_POLYGON, WKB_MULTIPOLYGON = 3, 6
LITTLE_ENDIAN = 1
# Flags of a geometry's header: little-endian, with an (minx, maxx, miny, maxy) envelope.
HEADER_FLAGS = LITTLE_ENDIAN | (1 << 1)

# The rows every GeoPackage holds (Requirement 11), and the core tables' definitions (Annex C).
_SCHEMA = """
CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT NOT NULL, srs_id INTEGER PRIMARY KEY, organization TEXT NOT NULL,
  organization_coordsys_id INTEGER NOT NULL, definition TEXT NOT NULL, description TEXT);
CREATE TABLE gpkg_contents (table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL, identifier TEXT UNIQUE,
  description TEXT DEFAULT '', last_change DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE, srs_id INTEGER,
  CONSTRAINT fk_gc_r_srs_id FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys(srs_id));
CREATE TABLE gpkg_geometry_columns (table_name TEXT NOT NULL, column_name TEXT NOT NULL,
  geometry_type_name TEXT NOT NULL, srs_id INTEGER NOT NULL, z TINYINT NOT NULL, m TINYINT NOT NULL,
  CONSTRAINT pk_geom_cols PRIMARY KEY (table_name, column_name),
  CONSTRAINT fk_gc_tn FOREIGN KEY (table_name) REFERENCES gpkg_contents(table_name),
  CONSTRAINT fk_gc_srs FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys (srs_id));
INSERT INTO gpkg_spatial_ref_sys VALUES ('Undefined cartesian SRS', -1, 'NONE', -1, 'undefined',
  'undefined cartesian coordinate reference system');
INSERT INTO gpkg_spatial_ref_sys VALUES ('Undefined geographic SRS', 0, 'NONE', 0, 'undefined',
  'undefined geographic coordinate reference system');
INSERT INTO gpkg_spatial_ref_sys VALUES ('WGS 84 geodetic', 4326, 'EPSG', 4326, '{wgs84}',
  'longitude/latitude coordinates in decimal degrees on the WGS 84 spheroid');
"""


def polygons_wkb(polygons: list[list[np.ndarray]]) -> bytes:
    """ISO WKB of a MultiPolygon: each polygon a list of closed rings, (N, 2) arrays."""
    parts = [struct.pack("<BII", LITTLE_ENDIAN, WKB_MULTIPOLYGON, len(polygons))]
    for rings in polygons:
        parts.append(struct.pack("<BII", LITTLE_ENDIAN, WKB_POLYGON, len(rings)))
        for ring in rings:
            points = np.ascontiguousarray(ring, dtype="<f8")
            parts.append(struct.pack("<I", len(points)) + points.tobytes())
    return b"".join(parts)


def geometry_blob(polygons: list[list[np.ndarray]], srs_id: int) -> bytes:
    """A GeoPackage geometry: the "GP" header with the SRS and the envelope, then the WKB."""
    points = np.concatenate([ring for rings in polygons for ring in rings])
    (xmin, ymin), (xmax, ymax) = points.min(axis=0), points.max(axis=0)
    header = struct.pack("<2sBBi4d", b"GP", 0, HEADER_FLAGS, srs_id, xmin, xmax, ymin, ymax)
    return header + polygons_wkb(polygons)


UNDEFINED_CARTESIAN = -1  # the srs_id of a local frame's coordinates


def srs_row(crs: str) -> tuple[str, int, str, int, str]:
    """(name, srs_id, organization, id, WKT definition) of a CRS, identified by its EPSG code."""
    parsed = CRS.from_user_input(crs)
    code = parsed.to_epsg()
    if code is None:
        raise ValueError(f"{crs} has no EPSG code")
    return parsed.name, code, "EPSG", code, parsed.to_wkt("WKT1_GDAL")


def write_polygons(path: Path, layer: str, geometry: dict, crs: str | None) -> None:
    """A GeoPackage at `path` with one feature table `layer` holding `geometry` (a GeoJSON Polygon or
    MultiPolygon in `crs`; None: a local frame) as one MultiPolygon feature."""
    parts = [geometry["coordinates"]] if geometry["type"] == "Polygon" else geometry["coordinates"]
    polygons = [[np.asarray(ring, dtype=np.float64)[:, :2] for ring in rings] for rings in parts]
    srs_id = UNDEFINED_CARTESIAN if crs is None else srs_row(crs)[1]
    blob = geometry_blob(polygons, srs_id)
    xmin, xmax, ymin, ymax = struct.unpack_from("<4d", blob, 8)
    with atomic_path(path) as tmp:
        tmp.unlink(missing_ok=True)
        db = sqlite3.connect(tmp)
        try:
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {USER_VERSION}")
            db.executescript(_SCHEMA.replace("{wgs84}", CRS.from_epsg(4326).to_wkt("WKT1_GDAL").replace("'", "''")))
            if crs is not None and srs_id != 4326:
                db.execute("INSERT INTO gpkg_spatial_ref_sys VALUES (?, ?, ?, ?, ?, NULL)", srs_row(crs))
            db.execute(f'CREATE TABLE "{layer}" (fid INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, geom MULTIPOLYGON)')
            db.execute("INSERT INTO gpkg_contents VALUES (?, 'features', ?, '', ?, ?, ?, ?, ?, ?)",
                       (layer, layer, datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                        xmin, ymin, xmax, ymax, srs_id))
            db.execute("INSERT INTO gpkg_geometry_columns VALUES (?, 'geom', 'MULTIPOLYGON', ?, 0, 0)",
                       (layer, srs_id))
            db.execute(f'INSERT INTO "{layer}" (geom) VALUES (?)', (blob,))
            db.commit()
        finally:
            db.close()

