"""Volume over a polygon of an elevation model, as earthworks are measured: a base surface under the polygon made
from the heights along its boundary, and every cell whose centre lies inside adding (height - base) x cell area
to the cut (above the base: a stockpile, what would be dug away) or to the fill (below it: a pit, what would be
filled). The bases are WebODM's: a plane fitted to the boundary (least squares), the boundary triangulated
(linear between its samples), their average, highest or lowest height, or a height given. Pure: heights in,
figures out; the DEM's window is read in earthworks/measure.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import LinearNDInterpolator

from ..errors import InputError

BASES = ("plane", "triangulate", "average", "highest", "lowest", "custom")


@dataclass(frozen=True)
class Boundary:
    """Heights sampled along a polygon's edges: (n, 2) map coordinates, (n,) heights."""
    xy: np.ndarray
    z: np.ndarray


@dataclass(frozen=True)
class Volume:
    cut: float  # m3 above the base
    fill: float  # m3 below it, positive
    area: float  # m2 of the cells counted
    cells: int
    nodata_cells: int  # inside the polygon, without a height: left out
    base_mean: float  # the base's mean height under the polygon

    @property
    def net(self) -> float:
        return self.cut - self.fill


def base_heights(method: str, boundary: Boundary, xy: np.ndarray, custom: float | None = None) -> np.ndarray:
    """The base's height at map points (n, 2)."""
    if method == "custom":
        if custom is None or not np.isfinite(custom):
            raise InputError("The custom base needs its height (base)")
        return np.full(len(xy), float(custom))
    if method not in BASES:
        raise InputError(f"Unknown base {method}: the bases are {', '.join(BASES)}")
    if len(boundary.z) == 0:
        raise InputError("The elevation model holds no height along the polygon's boundary to make a base from")
    level = {"average": np.mean, "highest": np.max, "lowest": np.min}.get(method)
    if level is not None:
        return np.full(len(xy), float(level(boundary.z)))
    if method == "plane" or len(boundary.z) < 3:
        return plane_heights(boundary, xy)
    return triangulated_heights(boundary, xy)


def plane_heights(boundary: Boundary, xy: np.ndarray) -> np.ndarray:
    """The least-squares plane through the boundary's heights (level where the samples fix no tilt: a line)."""
    centre = boundary.xy.mean(axis=0)
    design = np.column_stack([np.ones(len(boundary.z)), boundary.xy - centre])
    coefficients, _, rank, _ = np.linalg.lstsq(design, boundary.z, rcond=None)
    if rank < 3:
        return np.full(len(xy), float(boundary.z.mean()))
    return coefficients[0] + (xy - centre) @ coefficients[1:]


def triangulated_heights(boundary: Boundary, xy: np.ndarray) -> np.ndarray:
    """Linear between the boundary's samples over their Delaunay triangulation; a point outside it (only on the
    polygon's very edge, as the samples ring the polygon) takes the plane's height."""
    centre = boundary.xy.mean(axis=0)
    try:
        heights = LinearNDInterpolator(boundary.xy - centre, boundary.z)(xy - centre)
    except Exception:  # noqa: BLE001 - Qhull refuses samples on one line: the plane's fallback is level then
        return plane_heights(boundary, xy)
    missing = ~np.isfinite(heights)
    if missing.any():
        heights[missing] = plane_heights(boundary, xy[missing])
    return heights


def measure_volume(heights: np.ndarray, cell_xy: np.ndarray, cell_area: float, boundary: Boundary, method: str,
                   custom: float | None = None) -> Volume:
    """The volume of the cells inside a polygon, their heights (n,) (NaN: no data) at their centres (n, 2),
    against the base `method` made from `boundary`."""
    known = np.isfinite(heights)
    base = base_heights(method, boundary, cell_xy[known], custom)
    difference = heights[known] - base
    return Volume(cut=float(difference[difference > 0].sum() * cell_area),
                  fill=float(abs(difference[difference < 0].sum()) * cell_area),
                  area=float(known.sum() * cell_area), cells=int(known.sum()),
                  nodata_cells=int((~known).sum()),
                  base_mean=float(base.mean()) if len(base) else float("nan"))
