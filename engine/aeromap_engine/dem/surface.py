"""Elevation surfaces from points: binning, gap filling and smoothing, tile by tile.

Small gaps are filled from neighbouring cells, a few rings at a time (ODM's growing radii); what is left
(water, hidden ground, areas without texture) takes the value of a coarse surface of the whole area, filled by
smooth interpolation, so tiles filled separately still meet without steps. A median filter then
removes single-cell noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import cv2
import numpy as np

from .grid import CellStatistic, Grid, bin_points, sample_bilinear


MAX_COARSE_CELLS = 4_000_000
COARSE_FACTOR = 10  # the gap-filling surface is this many times coarser than the model
CONTEXT_CELLS = 64  # cells of context around a tile, for gap growing and smoothing
NODATA = -9999.0  # an elevation model's cells without a height


@dataclass(frozen=True)
class SurfaceSettings:
    statistic: str  # "max": the highest surface (DSM); "mean": an average surface (terrain from ground points)
    gapfill_steps: int = 3  # rings of cells grown into small gaps
    smoothing: int = 5  # median window (cells); 0 for none


def fill_all(values: np.ndarray) -> np.ndarray:
    """Every NaN cell filled by pull-push interpolation: the valid cells are averaged down a pyramid of
    halvings until no cell is empty, then each level is filled from the smoother level above (bilinear), in
    proportion to how empty its cells are. Gaps get smooth surfaces that meet their edges, in linear time."""
    valid = np.isfinite(values)
    if valid.all() or not valid.any():
        return values
    total, weight = np.where(valid, values, 0).astype(np.float32), valid.astype(np.float32)
    pyramid = [(total, weight)]
    while not (weight > 0).all():
        size = (max(1, (weight.shape[1] + 1) // 2), max(1, (weight.shape[0] + 1) // 2))
        total, weight = (cv2.resize(a, size, interpolation=cv2.INTER_AREA) for a in (total, weight))
        pyramid.append((total, weight))
    filled = total / weight
    for total, weight in reversed(pyramid[:-1]):
        above = cv2.resize(filled, (weight.shape[1], weight.shape[0]), interpolation=cv2.INTER_LINEAR)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(weight > 0, total / weight, 0)
        filled = weight * mean + (1 - weight) * above
    return np.where(valid, values, filled).astype(np.float32)


@dataclass(frozen=True)
class CoarseSurface:
    """A filled low-resolution surface of the whole area, for the gaps too wide for local filling."""

    grid: Grid
    values: np.ndarray

    @staticmethod
    def of(parts: Iterable[np.ndarray], bounds: tuple[float, float, float, float],
           resolution: float) -> "CoarseSurface":
        """The surface of the points (given in parts of (N, 3)) over `bounds` at `resolution`, or coarser where
        that would take more than MAX_COARSE_CELLS (far-apart parts of a survey: the grid spans the gap between
        them, so its cells are bounded)."""
        xmin, ymin, xmax, ymax = bounds
        resolution = max(resolution, math.sqrt((xmax - xmin) * (ymax - ymin) / MAX_COARSE_CELLS))
        binned = CellStatistic(Grid.covering(bounds, resolution), "mean")
        for xyz in parts:
            binned.add(xyz)
        return CoarseSurface(binned.grid, fill_all(binned.values()))

    def at(self, xy: np.ndarray) -> np.ndarray:
        return sample_bilinear(self.grid, self.values, xy)


def grow(values: np.ndarray, steps: int, statistic: str) -> np.ndarray:
    """Fill empty cells from their 3x3 neighbours (their highest for 'max', their average otherwise), `steps`
    rings deep."""
    values = values.copy()
    kernel = np.ones((3, 3), np.uint8)
    for _ in range(steps):
        empty = np.isnan(values)
        if not empty.any():
            break
        if statistic == "max":
            # OpenCV's default border for dilation is the lowest float, which is finite and would pass the
            # test below as a height: the border must count as empty.
            grown = cv2.dilate(np.where(empty, -np.inf, values).astype(np.float32), kernel,
                               borderType=cv2.BORDER_CONSTANT, borderValue=-np.inf)
        else:
            total = cv2.boxFilter(np.where(empty, 0, values).astype(np.float32), -1, (3, 3), normalize=False)
            count = cv2.boxFilter((~empty).astype(np.float32), -1, (3, 3), normalize=False)
            with np.errstate(invalid="ignore", divide="ignore"):
                grown = total / count
        take = empty & np.isfinite(grown)
        values[take] = grown[take]
    return values


def surface(xyz: np.ndarray, grid: Grid, coarse: CoarseSurface, settings: SurfaceSettings) -> np.ndarray:
    """A filled, smoothed surface over `grid` from the points near it (pass the points of a margin around the
    grid too, so edges see their neighbours)."""
    return filled_surface(bin_points(grid, xyz, settings.statistic), grid, coarse, settings)


def filled_surface(binned: np.ndarray, grid: Grid, coarse: CoarseSurface, settings: SurfaceSettings) -> np.ndarray:
    """The surface of points binned on `grid` (settings.statistic per cell, NaN where empty), filled and
    smoothed."""
    values = grow(binned, settings.gapfill_steps, settings.statistic)
    gaps = np.isnan(values)
    if gaps.any():
        x, y = grid.centers()
        rows, cols = np.nonzero(gaps)
        values[rows, cols] = coarse.at(np.c_[x[0, cols], y[rows, 0]])
    if settings.smoothing:
        values = cv2.medianBlur(values.astype(np.float32), settings.smoothing)
    return values
