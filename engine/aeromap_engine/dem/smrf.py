"""Ground points by the Simple Morphological Filter (Pingel, Clarke and McBride, 2013), as ODM uses through PDAL.

A grid of the lowest point per cell is opened (erosion then dilation) with windows of growing radius; cells
that drop by more than the slope allows between two window sizes sit on objects (trees, cars, buildings).
The remaining cells, interpolated, give a provisional terrain; a point is ground when it lies within a threshold
of that terrain, the threshold growing with the local terrain slope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from .grid import Grid, bin_points, sample_bilinear
from .surface import fill_all


@dataclass(frozen=True)
class SmrfSettings:
    scalar: float = 1.25  # extra threshold per unit of terrain slope
    slope: float = 0.15  # rise over run the terrain may have
    threshold: float = 0.5  # metres above or below the terrain still counted as ground
    window: float = 18.0  # metres: radius of the largest opening (the widest object removed)
    cell: float = 1.0  # metres


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
