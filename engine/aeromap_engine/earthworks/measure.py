"""Earthworks measured on an elevation model file: the window of the DEM a polygon covers, the cells inside it, the
heights along its boundary (earthworks/volume.py computes the volume). The polygon comes as GeoJSON in WGS84, as
WebODM's map sends it, or in another CRS."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
import rasterio.features
import rasterio.windows
from pyproj import CRS, Transformer

from ..errors import InputError
from .volume import Boundary, Volume, measure_volume

MAX_CELLS = 400_000_000  # a window larger than this would not fit the memory a measure is given


def polygon_ring(geometry: dict[str, Any]) -> np.ndarray:
    """The outer ring (n, 2) of a GeoJSON Polygon, a Feature holding one, or a MultiPolygon of one part."""
    if geometry.get("type") == "Feature":
        geometry = geometry.get("geometry") or {}
    coordinates = geometry.get("coordinates")
    if geometry.get("type") == "MultiPolygon" and isinstance(coordinates, list) and len(coordinates) == 1:
        coordinates = coordinates[0]
    elif geometry.get("type") != "Polygon":
        raise InputError("The area must be a GeoJSON Polygon")
    try:
        ring = np.array(coordinates[0], dtype=float)[:, :2]
    except (TypeError, ValueError, IndexError):
        raise InputError("The area's coordinates are not a ring of [x, y] positions") from None
    if len(ring) < 3 or not np.isfinite(ring).all():
        raise InputError("The area needs at least three positions")
    return ring


def volume_of(dem: Path, geometry: dict[str, Any], method: str, custom: float | None = None,
              crs: str = "EPSG:4326") -> dict[str, Any]:
    """The volume figures of the DEM over the polygon (its positions in `crs`) against the base `method`."""
    with rasterio.open(dem) as source:
        given = polygon_ring(geometry)
        to_dem = Transformer.from_crs(CRS.from_user_input(crs), source.crs, always_xy=True)
        ring = np.column_stack(to_dem.transform(given[:, 0], given[:, 1]))
        window = covering_window(source, ring)
        heights = source.read(1, window=window, masked=True).astype(np.float64).filled(np.nan)
        transform = source.window_transform(window)
    polygon = {"type": "Polygon", "coordinates": [ring.tolist()]}
    inside = rasterio.features.geometry_mask([polygon], heights.shape, transform, invert=True, all_touched=False)
    rows, cols = np.nonzero(inside)  # the centres of the cells inside alone: a window's worth would be large
    volume = measure_volume(heights[rows, cols], cell_centres(transform, rows, cols),
                            abs(transform.a * transform.e), boundary(heights, transform, ring), method, custom)
    return figures(volume, method)


def cell_centres(transform: rasterio.Affine, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Map coordinates (..., 2) of the centres of the cells at rows, cols."""
    x = transform.c + (cols + 0.5) * transform.a + (rows + 0.5) * transform.b
    y = transform.f + (cols + 0.5) * transform.d + (rows + 0.5) * transform.e
    return np.stack([x, y], axis=-1)


def covering_window(source: rasterio.io.DatasetReader, ring: np.ndarray) -> rasterio.windows.Window:
    """The DEM's cells under the polygon's bounds, a cell more each side for the boundary's samples."""
    left, bottom = ring.min(axis=0)
    right, top = ring.max(axis=0)
    window = rasterio.windows.from_bounds(left, bottom, right, top, source.transform)
    col, row = int(np.floor(window.col_off)) - 1, int(np.floor(window.row_off)) - 1
    window = rasterio.windows.Window(col, row, int(np.ceil(window.width)) + 3, int(np.ceil(window.height)) + 3)
    full = rasterio.windows.Window(0, 0, source.width, source.height)
    try:
        window = window.intersection(full)
    except rasterio.errors.WindowError:
        raise InputError("The area lies outside the elevation model") from None
    if window.width * window.height > MAX_CELLS:
        raise InputError(f"The area covers {window.width * window.height:.0f} cells of the elevation model, more "
                         f"than the {MAX_CELLS} a measure may read")
    return window


def boundary(heights: np.ndarray, transform: rasterio.Affine, ring: np.ndarray) -> Boundary:
    """The heights of the cells the polygon's edges cross (each once, nodata left out), at their cells' centres:
    the height belongs there, and the edge's point would tilt a plane by up to half a cell's slope."""
    closed = np.vstack([ring, ring[:1]]) if not np.allclose(ring[0], ring[-1]) else ring
    step = abs(transform.a) / 2
    points = [np.linspace(a, b, max(2, int(np.ceil(np.hypot(*(b - a)) / step)) + 1))
              for a, b in zip(closed[:-1], closed[1:])]
    xy = np.vstack(points)
    rows, cols = rasterio.transform.rowcol(transform, xy[:, 0], xy[:, 1])
    cells = np.unique(np.column_stack([rows, cols]), axis=0)
    h, w = heights.shape
    cells = cells[(cells[:, 0] >= 0) & (cells[:, 0] < h) & (cells[:, 1] >= 0) & (cells[:, 1] < w)]
    z = heights[cells[:, 0], cells[:, 1]]
    known = np.isfinite(z)
    return Boundary(cell_centres(transform, cells[known, 0], cells[known, 1]), z[known])


def figures(volume: Volume, method: str) -> dict[str, Any]:
    """What the volume measure answers: WebODM's net `volume`, and the cut, fill and net, the area measured."""
    values = {key: round(value, 3) if isinstance(value, float) else value for key, value in asdict(volume).items()}
    return {"volume": round(volume.net, 3), **values, "net": round(volume.net, 3), "base": method}
