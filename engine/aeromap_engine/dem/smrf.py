"""Ground points by the Simple Morphological Filter (Pingel, Clarke and McBride, 2013), as ODM uses through PDAL.

A grid of the lowest point per cell is opened (erosion then dilation) with windows of growing radius; cells
that drop by more than the slope allows between two window sizes sit on objects (trees, cars, buildings).
The remaining cells, interpolated, give a provisional terrain; a point is ground when it lies within a threshold
of that terrain, the threshold growing with the local terrain slope.

The opening removes what stands above the ground but keeps pits, so points below the ground (reflections on
water, matching noise) would drag the terrain down with them: they are removed first, as PDAL's low-noise step
(ELM) does before SMRF. The filter runs on the point cloud's tiles with margins, only where there are points, so
its grid never spans the gap between far-apart parts of a survey.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np
from scipy.ndimage import rank_filter

from .grid import Grid, bin_points, sample_bilinear
from .surface import fill_all

if TYPE_CHECKING:
    from ..options import Options

# The lower envelope a point is compared with: the LOW_RANK-th lowest of the lowest points of the cells within
# LOW_RADIUS cells that hold points (ELM compares the lowest point with the next lowest; this asks for a few
# cells' agreement). Noise and glints covering fewer cells than that lie below it and go; ground seen through a
# few gaps in a canopy, a ditch or a hollow sets it, since empty cells and the canopy do not count against them.
LOW_RANK = 5
LOW_RADIUS = 5
# The LOW_RANK-th lowest of the 3 x 3 cells around a cell is at least the envelope (they lie inside the disk): a
# cell whose lowest point lies within the threshold of that needs no look at the disk.
LOW_BOX = 3

# What one process holds to find the ground of one tile of a tiled cloud with its margin (bench/NOTES.md).
TILE_WORKING_BYTES = 900 * 2**20


@dataclass(frozen=True)
class SmrfSettings:
    scalar: float = 1.25  # extra threshold per unit of terrain slope
    slope: float = 0.15  # rise over run the terrain may have
    threshold: float = 0.5  # metres above or below the terrain still counted as ground
    window: float = 18.0  # metres: radius of the largest opening (the widest object removed)
    cell: float = 1.0  # metres
    low_threshold: float = 1.0  # metres below the lower envelope of its neighbourhood that make a point noise

    @staticmethod
    def of(options: "Options") -> "SmrfSettings":
        """The settings the smrf-* options give."""
        return SmrfSettings(options.smrf_scalar, options.smrf_slope, options.smrf_threshold, options.smrf_window)


@dataclass(frozen=True)
class Terrain:
    """The provisional terrain of SMRF and its slope (rise over run), on a grid."""

    grid: Grid
    height: np.ndarray
    slope: np.ndarray


def object_cells(lowest: np.ndarray, settings: SmrfSettings) -> np.ndarray:
    """Cells of a filled lowest-point grid that the progressive opening marks as objects, not terrain."""
    objects = np.zeros(lowest.shape, dtype=bool)
    last = lowest.astype(np.float32)
    for radius in range(1, math.ceil(settings.window / settings.cell) + 1):
        disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
        opened = cv2.morphologyEx(last, cv2.MORPH_OPEN, disk, borderType=cv2.BORDER_REPLICATE)
        objects |= (last - opened) > settings.slope * radius * settings.cell
        last = opened
    return objects


def terrain(xyz: np.ndarray, bounds: tuple[float, float, float, float], settings: SmrfSettings) -> Terrain:
    grid = Grid.covering(bounds, settings.cell)
    lowest = bin_points(grid, xyz, "min")
    if not np.isfinite(lowest).any():
        raise ValueError("no points to find the terrain from")
    filled = fill_all(lowest)
    ground = np.where(object_cells(filled, settings) | np.isnan(lowest), np.nan, filled)
    height = fill_all(ground) if np.isfinite(ground).any() else filled
    gy, gx = np.gradient(height, settings.cell)
    return Terrain(grid, height, np.hypot(gx, gy).astype(np.float32))


def is_ground(xyz: np.ndarray, ground: Terrain, settings: SmrfSettings) -> np.ndarray:
    """Points within the (slope-dependent) threshold of the provisional terrain."""
    xy = xyz[:, :2].astype(np.float64)
    height = sample_bilinear(ground.grid, ground.height, xy)
    slope = sample_bilinear(ground.grid, ground.slope, xy)
    return np.abs(xyz[:, 2] - height) <= settings.threshold + settings.scalar * slope


def _disk_offsets(radius: int) -> np.ndarray:
    rows, cols = np.nonzero(cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1)))
    return np.c_[rows - radius, cols - radius]


def lower_envelope(lowest: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """At cells (rows, cols) of a lowest-point grid (NaN where empty), the LOW_RANK-th lowest of the lowest points
    of the cells within LOW_RADIUS that hold points; inf where fewer cells hold points."""
    values = np.where(np.isnan(lowest), np.inf, lowest)
    offsets = _disk_offsets(LOW_RADIUS)
    envelope = np.empty(len(rows), dtype=np.float64)
    for start in range(0, len(rows), 8192):
        r = rows[start:start + 8192, None] + offsets[:, 0]
        c = cols[start:start + 8192, None] + offsets[:, 1]
        outside = (r < 0) | (r >= lowest.shape[0]) | (c < 0) | (c >= lowest.shape[1])
        around = np.where(outside, np.inf, values[np.clip(r, 0, lowest.shape[0] - 1),
                                                  np.clip(c, 0, lowest.shape[1] - 1)])
        envelope[start:start + 8192] = np.partition(around, LOW_RANK - 1, axis=1)[:, LOW_RANK - 1]
    return envelope


def low_outliers(xyz: np.ndarray, grid: Grid, settings: SmrfSettings) -> np.ndarray:
    """Points more than settings.low_threshold below the lower envelope of their neighbourhood."""
    lowest = bin_points(grid, xyz, "min")
    values = np.where(np.isnan(lowest), np.inf, lowest)
    bound = rank_filter(values, LOW_RANK - 1, size=LOW_BOX, mode="constant", cval=np.inf)
    rows, cols = np.nonzero(lowest + settings.low_threshold < bound)
    limit = np.full(lowest.shape, -np.inf)
    limit[rows, cols] = lower_envelope(lowest, rows, cols) - settings.low_threshold
    row, col = grid.cell_of(xyz)
    ok = (row >= 0) & (row < grid.height) & (col >= 0) & (col < grid.width)
    low = np.zeros(len(xyz), dtype=bool)
    low[ok] = xyz[ok, 2] < limit[row[ok], col[ok]]
    return low


def classify(xyz: np.ndarray, bounds: tuple[float, float, float, float], settings: SmrfSettings) -> np.ndarray:
    """Ground points among points over `bounds`: low outliers removed, then the terrain of the rest, then the
    points near it."""
    grid = Grid.covering(bounds, settings.cell)
    low = low_outliers(xyz, grid, settings)
    if low.all():
        return np.zeros(len(xyz), dtype=bool)
    return is_ground(xyz, terrain(xyz[~low], bounds, settings), settings) & ~low


def terrain_margin(settings: SmrfSettings) -> int:
    """Cells of context around a tile: the widest opening reaches `window` metres, and the envelope LOW_RADIUS
    cells; twice the window keeps the tile's edge from changing the opening at its core."""
    return math.ceil(2 * settings.window / settings.cell) + LOW_RADIUS + 2
