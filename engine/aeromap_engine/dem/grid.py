"""North-up raster grids over the world frame, their tiles, and points binned into cells."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import cv2
import numpy as np

from ..log import log


@dataclass(frozen=True)
class Window:
    row: int
    col: int
    height: int
    width: int

    def inside(self, outer: "Window") -> tuple[slice, slice]:
        """Slices that cut this window out of an array covering `outer`."""
        return (slice(self.row - outer.row, self.row - outer.row + self.height),
                slice(self.col - outer.col, self.col - outer.col + self.width))


@dataclass(frozen=True)
class Grid:
    x0: float  # west edge, world frame
    y1: float  # north edge
    resolution: float  # metres per cell
    width: int
    height: int

    @staticmethod
    def covering(bounds: tuple[float, float, float, float], resolution: float) -> "Grid":
        """The grid of cells aligned on multiples of the resolution that covers (xmin, ymin, xmax, ymax)."""
        xmin, ymin, xmax, ymax = bounds
        x0 = math.floor(xmin / resolution) * resolution
        y1 = math.ceil(ymax / resolution) * resolution
        return Grid(x0, y1, resolution, max(1, math.ceil((xmax - x0) / resolution)),
                    max(1, math.ceil((y1 - ymin) / resolution)))

    def sub(self, window: Window) -> "Grid":
        """The part of the grid under a window (which may reach past the grid's edges)."""
        return Grid(self.x0 + window.col * self.resolution, self.y1 - window.row * self.resolution,
                    self.resolution, window.width, window.height)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        return (self.x0, self.y1 - self.height * self.resolution, self.x0 + self.width * self.resolution, self.y1)

    def cell_of(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row and column (int64) of the cell holding each point; may fall outside the grid."""
        col = np.floor((xy[:, 0] - self.x0) / self.resolution).astype(np.int64)
        row = np.floor((self.y1 - xy[:, 1]) / self.resolution).astype(np.int64)
        return row, col

    def centers(self) -> tuple[np.ndarray, np.ndarray]:
        """World x (1, W) and y (H, 1) of the cell centres."""
        x = self.x0 + (np.arange(self.width) + 0.5) * self.resolution
        y = self.y1 - (np.arange(self.height) + 0.5) * self.resolution
        return x[None, :], y[:, None]

    def fractional(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Continuous row and column of points, with cell centres at integers (for interpolation)."""
        return ((self.y1 - xy[:, 1]) / self.resolution - 0.5, (xy[:, 0] - self.x0) / self.resolution - 0.5)

    def tiles(self, size: int, margin: int, selected: np.ndarray | None = None) -> Iterator[tuple[Window, Window]]:
        """(tile, tile grown by `margin` cells on every side) over the whole grid, or only the tiles marked in
        `selected` (tile rows, tile cols), e.g. those that hold some of the surveyed area."""
        for row in range(0, self.height, size):
            for col in range(0, self.width, size):
                if selected is not None and not selected[row // size, col // size]:
                    continue
                core = Window(row, col, min(size, self.height - row), min(size, self.width - col))
                yield core, Window(row - margin, col - margin, core.height + 2 * margin, core.width + 2 * margin)


class PointIndex:
    """Points bucketed by square blocks of the world plane, to fetch those near a window without scanning all."""

    def __init__(self, xyz: np.ndarray, block: float) -> None:
        self.xyz = xyz
        self.block = block
        self._origin = xyz[:, :2].min(axis=0) if len(xyz) else np.zeros(2)
        key = np.floor((xyz[:, :2] - self._origin) / block).astype(np.int64)
        self._cols = int(key[:, 0].max()) + 1 if len(xyz) else 1
        self._rows = int(key[:, 1].max()) + 1 if len(xyz) else 1
        flat = key[:, 1] * self._cols + key[:, 0]
        self._order = np.argsort(flat, kind="stable")
        self._starts = np.searchsorted(flat[self._order], np.arange(self._rows * self._cols + 1))

    def near(self, bounds: tuple[float, float, float, float]) -> np.ndarray:
        """The points (N, 3) inside bounds (xmin, ymin, xmax, ymax)."""
        return self.xyz[self.indices_near(bounds)]

    def indices_near(self, bounds: tuple[float, float, float, float]) -> np.ndarray:
        """Indices of the points inside bounds (xmin, ymin, xmax, ymax), the west and south edges included."""
        xmin, ymin, xmax, ymax = bounds
        c0, r0 = np.floor((np.array([xmin, ymin]) - self._origin) / self.block).astype(int)
        c1, r1 = np.floor((np.array([xmax, ymax]) - self._origin) / self.block).astype(int)
        c0, r0, c1, r1 = max(c0, 0), max(r0, 0), min(c1, self._cols - 1), min(r1, self._rows - 1)
        if c0 > c1 or r0 > r1:
            return np.zeros(0, dtype=np.int64)
        picks = np.concatenate([self._order[self._starts[r * self._cols + c0]:self._starts[r * self._cols + c1 + 1]]
                                for r in range(r0, r1 + 1)])
        points = self.xyz[picks]
        inside = ((points[:, 0] >= xmin) & (points[:, 0] < xmax) & (points[:, 1] >= ymin) & (points[:, 1] < ymax))
        return picks[inside]


class CellStatistic:
    """Per-cell 'max', 'min' or 'mean' of point heights, accumulated part by part (a cloud larger than memory is
    binned tile by tile)."""

    def __init__(self, grid: Grid, statistic: str) -> None:
        self.grid, self.statistic = grid, statistic
        size = grid.width * grid.height
        if statistic == "mean":
            self._total, self._count = np.zeros(size), np.zeros(size)
        else:
            self._extreme = np.full(size, -np.inf if statistic == "max" else np.inf)

    def add(self, xyz: np.ndarray) -> "CellStatistic":
        grid = self.grid
        row, col = grid.cell_of(xyz)
        ok = (row >= 0) & (row < grid.height) & (col >= 0) & (col < grid.width)
        flat = row[ok] * grid.width + col[ok]
        z = xyz[ok, 2].astype(np.float64)
        if self.statistic == "mean":
            self._total += np.bincount(flat, weights=z, minlength=len(self._total))
            self._count += np.bincount(flat, minlength=len(self._count))
        else:
            (np.maximum if self.statistic == "max" else np.minimum).at(self._extreme, flat, z)
        return self

    def values(self) -> np.ndarray:
        """The statistic per cell (float32, NaN where a cell has no point)."""
        if self.statistic == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                out = self._total / self._count
        else:
            out = np.where(np.isinf(self._extreme), np.nan, self._extreme)
        return out.reshape(self.grid.height, self.grid.width).astype(np.float32)


def bin_points(grid: Grid, xyz: np.ndarray, statistic: str) -> np.ndarray:
    """Per-cell 'max', 'min' or 'mean' of the points' heights (float32, NaN where a cell has none)."""
    return CellStatistic(grid, statistic).add(xyz).values()


def resample(source: Grid, values: np.ndarray, target: Grid) -> np.ndarray:
    """A filled raster bilinearly resampled onto another north-up grid (edges clamped)."""
    scale = target.resolution / source.resolution
    matrix = np.array([[scale, 0.0, (target.x0 - source.x0) / source.resolution + 0.5 * scale - 0.5],
                       [0.0, scale, (source.y1 - target.y1) / source.resolution + 0.5 * scale - 0.5]])
    return cv2.warpAffine(values.astype(np.float32), matrix, (target.width, target.height),
                          flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE)


def sample_bilinear(grid: Grid, values: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Values of a filled raster at world points, interpolated between cell centres (edges clamped)."""
    r, c = grid.fractional(xy)
    r = np.clip(r, 0, grid.height - 1)
    c = np.clip(c, 0, grid.width - 1)
    r0, c0 = np.minimum(np.floor(r).astype(np.int64), grid.height - 2).clip(0), \
        np.minimum(np.floor(c).astype(np.int64), grid.width - 2).clip(0)
    r1, c1 = np.minimum(r0 + 1, grid.height - 1), np.minimum(c0 + 1, grid.width - 1)
    fr, fc = r - r0, c - c0
    top = values[r0, c0] * (1 - fc) + values[r0, c1] * fc
    bottom = values[r1, c0] * (1 - fc) + values[r1, c1] * fc
    return top * (1 - fr) + bottom * fr


def output_resolution(requested_cm: float, gsd_cm: float | None, ignore_gsd: bool) -> float:
    """Metres per pixel: the requested resolution, but no finer than 0.9 x the mean GSD (ODM's cap: finer
    pixels would only interpolate what the images did not resolve)."""
    if ignore_gsd or not gsd_cm:
        return requested_cm / 100.0
    capped = max(requested_cm, 0.9 * float(gsd_cm))
    if capped > requested_cm:
        log.info("Resolution %.2f cm/px is finer than the images resolve (GSD %.2f cm): using %.2f cm/px",
                 requested_cm, gsd_cm, capped)
    return capped / 100.0
