"""Coordinate reference systems: the declarations ODM's input files use, the UTM zone of a survey, conversions.

All transformers use (x, y) = (easting or longitude, northing or latitude) order, whatever the CRS's own axis
order, so that callers never juggle latitude-first conventions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyproj

WGS84 = "EPSG:4326"

# ODM's short form, e.g. "WGS84 UTM 30N".
_ODM_UTM = re.compile(r"^\s*WGS\s*-?\s*84\s+UTM\s+(\d{1,2})\s*([NS])\s*$", re.IGNORECASE)


def parse_crs(text: str) -> pyproj.CRS:
    """A CRS as ODM's gcp_list.txt and geo.txt declare it: "EPSG:32630", a proj4 string or "WGS84 UTM 30N"."""
    match = _ODM_UTM.match(text)
    if match:
        zone, hemisphere = int(match.group(1)), match.group(2).upper()
        if not 1 <= zone <= 60:
            raise ValueError(f"UTM zone {zone} does not exist")
        return pyproj.CRS.from_epsg((32600 if hemisphere == "N" else 32700) + zone)
    try:
        return pyproj.CRS.from_user_input(text.strip())
    except pyproj.exceptions.CRSError as exc:
        raise ValueError(f"Unknown coordinate system {text.strip()!r}: {exc}") from None


def odm_crs_text(crs: pyproj.CRS) -> str:
    """A CRS in the form ODM's coords.txt and geo.txt use: "WGS84 UTM 30N" for a WGS84 UTM zone, else as
    crs_name gives it. parse_crs reads both back."""
    epsg = crs.to_epsg() or 0
    if 32601 <= epsg <= 32660 or 32701 <= epsg <= 32760:
        return f"WGS84 UTM {epsg % 100}{'N' if epsg < 32700 else 'S'}"
    return crs_name(crs)


def crs_name(crs: pyproj.CRS) -> str:
    """The shortest faithful text for a CRS: "EPSG:code" when it has one, else its WKT."""
    epsg = crs.to_epsg()
    return f"EPSG:{epsg}" if epsg is not None else crs.to_wkt()


def utm_crs(longitude: float, latitude: float) -> pyproj.CRS:
    """The WGS84 UTM zone that contains a point, by the standard 6-degree zones (as ODM picks it)."""
    zone = int((longitude + 180.0) // 6.0) % 60 + 1
    return pyproj.CRS.from_epsg((32600 if latitude >= 0 else 32700) + zone)


def is_metric_projected(crs: pyproj.CRS) -> bool:
    """Whether a CRS can serve as the world frame: projected, with metre axes."""
    return crs.is_projected and all(axis.unit_name in ("metre", "meter") for axis in crs.axis_info[:2])


@lru_cache(maxsize=16)
def _transformer(source: str, target: str) -> pyproj.Transformer:
    return pyproj.Transformer.from_crs(source, target, always_xy=True)


def transform(source: pyproj.CRS | str, target: pyproj.CRS | str, xyz: np.ndarray) -> np.ndarray:
    """(N, 3) points from one CRS to another; heights pass through unchanged when neither CRS has a vertical
    component, which is how ODM treats GPS and GCP altitudes."""
    xyz = np.asarray(xyz, dtype=np.float64).reshape(-1, 3)
    key = [c if isinstance(c, str) else c.to_wkt() for c in (source, target)]
    x, y, z = _transformer(key[0], key[1]).transform(xyz[:, 0], xyz[:, 1], xyz[:, 2])
    return np.column_stack([x, y, z])


def raster_crs(path: Path) -> tuple[int | None, str | None]:
    """A georeferenced raster's CRS as WebODM keeps a task's: its EPSG code when it has one, else its WKT; (None,
    None) for a raster without a CRS."""
    import rasterio

    from .errors import InputError

    try:
        with rasterio.open(path) as src:
            crs = src.crs
    except rasterio.errors.RasterioIOError as exc:
        raise InputError(f"cannot read {path.name}: {exc}") from exc
    if crs is None:
        return None, None
    epsg = crs.to_epsg()
    return (epsg, None) if epsg is not None else (None, crs.to_wkt())
