"""The align option: an earlier survey's elevation model (a GeoTIFF DEM) or point cloud (LAS/LAZ), read as heights
in the model's frame, and the model moved onto it (sfm/coregister.py) before anything is made from it, so that
every product of a repeat survey lines up with the earlier one's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import laspy
import numpy as np
import pycolmap
import rasterio
from rasterio.transform import from_origin
from rasterio.warp import Resampling, reproject
from scipy import ndimage

from ..errors import InputError
from ..geo import transform
from ..log import log
from .coregister import HeightGrid, register
from .frame import WorldFrame

MARGIN_M = 30.0  # of the reference read around the model's points
MAX_CELLS = 25_000_000
MIN_TRACK = 3  # points seen by fewer photographs are too uncertain to register
MAX_ERROR_PX = 2.0


def _grid_box(points: np.ndarray, cell: float) -> tuple[float, float, float, int, int]:
    """West, north, cell, columns and rows of a grid around the points, at `cell` or coarser where too large."""
    west, south = points[:, :2].min(axis=0) - MARGIN_M
    east, north = points[:, :2].max(axis=0) + MARGIN_M
    cell = max(cell, float(np.sqrt((east - west) * (north - south) / MAX_CELLS)))
    return float(west), float(north), cell, int(np.ceil((east - west) / cell)), int(np.ceil((north - south) / cell))


def _dem_grid(path: Path, frame: WorldFrame, points: np.ndarray) -> HeightGrid:
    with rasterio.open(path) as source:
        if source.crs is None:
            raise InputError(f"The align file {path.name} has no CRS")
        metres = abs(source.res[0]) * (111_000.0 if source.crs.is_geographic else 1.0)
        west, north, cell, cols, rows = _grid_box(points, metres)
        z = np.full((rows, cols), np.nan, np.float32)
        reproject(rasterio.band(source, 1), z, src_nodata=source.nodata, dst_nodata=np.nan,
                  dst_transform=from_origin(west + frame.offset[0], north + frame.offset[1], cell, cell),
                  dst_crs=frame.crs, resampling=Resampling.bilinear)
    return HeightGrid(z.astype(np.float64), west, north, cell)


def _cloud_grid(path: Path, frame: WorldFrame, points: np.ndarray) -> HeightGrid:
    """The cloud's highest point in each cell (the surface the photographs see), at twice its mean spacing."""
    cloud = laspy.read(path)
    xyz = np.column_stack([cloud.x, cloud.y, cloud.z]).astype(np.float64)
    crs = cloud.header.parse_crs()
    if crs is not None:
        xyz = transform(crs, frame.crs, xyz)
    else:
        log.warning("The align file %s states no CRS: taken to be in the model's (%s)", path.name, frame.crs)
    xyz[:, :2] -= frame.offset
    span = np.ptp(xyz[:, :2], axis=0)
    west, north, cell, cols, rows = _grid_box(points, 2 * float(np.sqrt(span.prod() / max(len(xyz), 1))))
    col = np.floor((xyz[:, 0] - west) / cell).astype(np.int64)
    row = np.floor((north - xyz[:, 1]) / cell).astype(np.int64)
    inside = (col >= 0) & (col < cols) & (row >= 0) & (row < rows)
    z = np.full(rows * cols, -np.inf)
    np.maximum.at(z, row[inside] * cols + col[inside], xyz[inside, 2])
    z[~np.isfinite(z)] = np.nan
    return HeightGrid(_fill_gaps(z.reshape(rows, cols)), west, north, cell)


def _fill_gaps(z: np.ndarray, cells: float = 2.0) -> np.ndarray:
    """Empty cells within `cells` of a filled one take its height: a cloud leaves some cells without a point."""
    empty = ~np.isfinite(z)
    distance, (rows, cols) = ndimage.distance_transform_edt(empty, return_indices=True)
    return np.where(empty & (distance <= cells), z[rows, cols], z)


def reference_grid(path: Path, frame: WorldFrame, points: np.ndarray) -> HeightGrid:
    """The heights of the align file around the points, in the frame (a DEM's, or a cloud's surface)."""
    try:
        if path.suffix.lower() in (".las", ".laz"):
            return _cloud_grid(path, frame, points)
        return _dem_grid(path, frame, points)
    except (OSError, rasterio.errors.RasterioError, laspy.errors.LaspyException, ValueError) as exc:
        raise InputError(f"Cannot read the align file {path.name}: {exc}") from None


def registration_points(model: pycolmap.Reconstruction) -> np.ndarray:
    """The model's well-measured points (N, 3): seen by three photographs or more, within 2 px of them."""
    return np.array([p.xyz for p in model.points3D.values()
                     if p.track.length() >= MIN_TRACK and p.error <= MAX_ERROR_PX], dtype=np.float64).reshape(-1, 3)


def align_model(model: pycolmap.Reconstruction, frame: WorldFrame, path: Path) -> dict[str, Any]:
    """Moves the model onto the align file's surface; the figures of the move for stats.json. A model with no
    frame, or too few points over the file, is left where it is, with the reason."""
    figures: dict[str, Any] = {"reference": path.name, "applied": False}
    if frame.crs is None:
        figures["reason"] = "the model has no geographic frame (no GPS and no control points) to align from"
    else:
        points = registration_points(model)
        found = register(points, reference_grid(path, frame, points)) if len(points) else None
        if found is None:
            figures["reason"] = "too few of the model's points lie over the align file"
        else:
            translation = found.centre + found.shift - found.rotation @ found.centre
            model.transform(pycolmap.Sim3d(1.0, pycolmap.Rotation3d(found.rotation), translation))
            figures.update(applied=True, shift_m=[round(float(v), 4) for v in found.shift],
                           rotation_deg=round(found.angle_deg, 5), points=found.points,
                           misfit_before_m=round(found.misfit_before_m, 4),
                           misfit_after_m=round(found.misfit_after_m, 4))
    if figures["applied"]:
        log.info("Aligned to %s: moved by %.3f m east, %.3f m north, %.3f m up, turned %.4f degrees; median height "
                 "misfit %.3f m before, %.3f m after (%d points)", path.name, *figures["shift_m"],
                 figures["rotation_deg"], figures["misfit_before_m"], figures["misfit_after_m"], figures["points"])
    else:
        log.warning("Not aligned to %s: %s", path.name, figures["reason"])
    return figures
