"""The surveyed area traced from the points: where the photographs saw the ground densely enough to match it.

The cloud's occupancy on a coarse grid is closed by a small distance (gaps in matching over trees, water or
plain roofs narrower than twice that distance belong to the survey), enclosed holes up to about an image's
footprint are filled (a pond in a field), parts smaller than the closing disk are dropped (stray points, distant
landscape seen by obliques) and what is left is shrunk by the crop distance. Where the points are tie points
(fast-orthophoto), the ground the photographs' frames cover joins them: a few hundred tie points of a small set
span a fraction of what the photographs show, and cropping that would leave nothing. Unlike a convex hull, two fields
flown apart stay two parts and an L or a corridor keeps its shape, so nothing is invented between them. The
outline is traced as polygons (area.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import rasterio.features
from rasterio.transform import Affine

from ..dem.grid import Grid
from .area import Polygon, SurveyArea, open_ring, oriented, ring_area, rings_bounds, rings_mask
from .boundary import Region

POINTS_PER_CELL = 8  # points an averagely covered occupancy cell holds at least (2 make a cell seen)
MAX_CELLS = 16_000_000  # occupancy cells at most: over a very large extent the cell grows instead
SUBCELLS = 2  # occupancy counts are kept on cells this many times finer than the area's
SIMPLIFY = 0.75  # cells: the traced staircase outline is simplified within this (a 45-degree staircase needs
# over 0.71 to become a line); a simplification that makes rings cross is not used
MAX_CHECKED_SEGMENTS = 8000  # a simplified polygon with more segments is not checked for crossings: kept as traced


@dataclass(frozen=True)
class AreaSettings:
    cell: float  # m: side of the occupancy cells (at least: larger where the cloud is sparse)
    closing: float  # m: gaps in the cloud narrower than twice this are part of the survey
    max_hole: float  # m2: enclosed gaps up to this area are filled
    min_part: float  # m2: parts smaller than this are dropped (before cropping)
    crop: float = 0.0  # m: the area is shrunk by this much
    min_count: int = 2  # points a cell needs to count as seen (a single stray point does not)


class Occupancy:
    """Points counted chunk by chunk on a grid over bounds (x, y) reaching `margin` metres past them, so that
    the surveyed area of a cloud larger than memory is traced from the counts. The counting cells are SUBCELLS
    times finer than `cell`, so that they can be gathered into cells of the size the density asks for with an
    error of a fraction of a cell; over a very large extent they grow so that the grid keeps within MAX_CELLS."""

    def __init__(self, bounds: tuple[float, float, float, float], cell: float, margin: float) -> None:
        xmin, ymin, xmax, ymax = bounds
        fine = max(cell / SUBCELLS, math.sqrt((xmax - xmin + 2 * margin) * (ymax - ymin + 2 * margin) / MAX_CELLS))
        self.cell = max(cell, fine)  # the area's cells are at least this large
        reach = margin + self.cell
        self.grid = Grid.covering((xmin - reach, ymin - reach, xmax + reach, ymax + reach), fine)
        self.counts = np.zeros(self.grid.height * self.grid.width, np.int64)
        self.points = 0

    def add(self, xy: np.ndarray) -> None:
        row, col = self.grid.cell_of(xy)
        ok = (row >= 0) & (row < self.grid.height) & (col >= 0) & (col < self.grid.width)
        self.counts += np.bincount(row[ok] * self.grid.width + col[ok], minlength=len(self.counts))
        self.points += len(xy)

    def regridded(self, cell: float) -> tuple[Grid, np.ndarray]:
        """The grid of `cell` metres from the same corner and the points each holds (each counting cell's points go
        to the cell its centre falls in)."""
        grid = self.grid
        scale = grid.resolution / cell
        coarse = Grid(grid.x0, grid.y1, cell, math.ceil(grid.width * scale), math.ceil(grid.height * scale))
        flat = np.flatnonzero(self.counts)
        row, col = ((np.divmod(flat, grid.width)[i] + 0.5) * scale for i in (0, 1))
        counts = np.bincount(row.astype(np.int64) * coarse.width + col.astype(np.int64), weights=self.counts[flat],
                             minlength=coarse.width * coarse.height)
        return coarse, counts.reshape(coarse.height, coarse.width)

    def seen(self, min_count: int) -> tuple[Grid, np.ndarray]:
        """The cells seen (holding `min_count` points), on cells at least `cell` and large enough that a cell as
        densely covered as the cloud is on average holds POINTS_PER_CELL points (a sparse or clumped cloud, such
        as tie points, would otherwise leave most of its cells below the count). The density is measured over the
        cells the points occupy, so the gap between far-apart parts does not dilute it."""
        grid, counts = self.regridded(self.cell)
        for _ in range(4):
            cell = grid.resolution
            wanted = math.sqrt(POINTS_PER_CELL * np.count_nonzero(counts) * cell**2 / max(self.points, 1))
            if wanted <= 1.1 * cell:
                break
            grid, counts = self.regridded(wanted)
        return grid, counts >= min_count


def _distance(mask: np.ndarray) -> np.ndarray:
    """Per cell of `mask`, the distance (cells, Euclidean) to the nearest cell outside it; 0 outside."""
    return cv2.distanceTransform(mask.astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)


def dilate(mask: np.ndarray, radius: float) -> np.ndarray:
    """Cells within `radius` cells of the mask (a distance transform: the cost does not grow with the radius)."""
    return _distance(~mask) <= radius


def erode(mask: np.ndarray, radius: float) -> np.ndarray:
    """Cells farther than `radius` cells from every cell outside the mask."""
    return _distance(mask) > radius


def close(mask: np.ndarray, radius: float) -> np.ndarray:
    """Morphological closing by a disk: gaps and notches narrower than 2 x radius filled; the outline does not
    grow past the mask's convex hull. The mask is padded first: the distance transform takes the grid's edge for
    inside, so what the dilation pushed against it would never erode back."""
    pad = math.ceil(radius) + 1
    closed = erode(dilate(np.pad(mask, pad), radius), radius)[pad:-pad, pad:-pad]
    return closed | mask


def fill_holes(mask: np.ndarray, max_cells: float) -> np.ndarray:
    """The mask with its enclosed holes (gaps not connected to the grid's edge) of up to `max_cells` cells filled."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats((~mask).astype(np.uint8), connectivity=4)
    edge = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    fill = stats[:, cv2.CC_STAT_AREA] <= max_cells
    fill[edge] = False
    fill[0] = False  # label 0: the mask itself
    return mask | fill[labels]


def drop_small_parts(mask: np.ndarray, min_cells: float) -> np.ndarray:
    """The mask without its connected parts of fewer than `min_cells` cells."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    keep = stats[:, cv2.CC_STAT_AREA] >= min_cells
    keep[0] = False  # the background
    return keep[labels]


def depinch(mask: np.ndarray) -> np.ndarray:
    """The mask with every pair of cells that touch only at a corner joined (the two other cells of the 2x2 block
    filled), so that traced outlines never touch themselves or each other at a point."""
    mask = mask.copy()
    for _ in range(100):
        a, b, c, d = mask[:-1, :-1], mask[:-1, 1:], mask[1:, :-1], mask[1:, 1:]
        falling = a & d & ~b & ~c
        rising = b & c & ~a & ~d
        if not (falling.any() or rising.any()):
            break
        rows, cols = np.nonzero(falling)
        mask[rows, cols + 1] = mask[rows + 1, cols] = True
        rows, cols = np.nonzero(rising)
        mask[rows, cols] = mask[rows + 1, cols + 1] = True
    return mask


def _segments_cross(rings: list[np.ndarray]) -> bool:
    """Whether any two segments of the rings cross (properly: touching at an end is not crossing)."""
    starts = np.concatenate(rings)
    ends = np.concatenate([np.roll(ring, -1, axis=0) for ring in rings])
    if len(starts) > MAX_CHECKED_SEGMENTS:
        return True  # too many to check cheaply: the caller keeps the traced outline, which is valid

    def orient(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        return np.sign((q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1])
                       - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0]))

    for first in range(0, len(starts), 512):
        p1, p2 = starts[first:first + 512, None], ends[first:first + 512, None]
        q1, q2 = starts[None], ends[None]
        crossing = ((orient(p1, p2, q1) * orient(p1, p2, q2) < 0) & (orient(q1, q2, p1) * orient(q1, q2, p2) < 0))
        if crossing.any():
            return True
    return False


def _simplified(rings: list[np.ndarray], tolerance: float) -> list[np.ndarray]:
    """Rings simplified (Douglas-Peucker) within `tolerance`, or as given where that would make them cross."""
    simple = []
    for ring in rings:
        reduced = cv2.approxPolyDP(ring.astype(np.float64).reshape(-1, 1, 2).astype(np.float32), tolerance,
                                   True).reshape(-1, 2).astype(np.float64)
        simple.append(reduced if len(reduced) >= 3 and abs(ring_area(reduced)) > 0 else ring)
    return rings if _segments_cross(simple) else simple


def vectorize(mask: np.ndarray, grid: Grid, tolerance: float) -> SurveyArea | None:
    """The outline of the mask's cells as polygons (GDAL's polygonize), simplified within `tolerance` metres."""
    origin = np.array([grid.x0, grid.y1])
    polygons = []
    # Traced in cell units about the grid's corner, so that simplification works on small numbers.
    unit = Affine(1.0, 0.0, 0.0, 0.0, -1.0, 0.0)
    for geometry, _ in rasterio.features.shapes(mask.astype(np.uint8), mask=mask, connectivity=4, transform=unit):
        rings = [open_ring(ring) for ring in geometry["coordinates"]]
        rings = _simplified(rings, tolerance / grid.resolution)
        rings = [origin + ring * grid.resolution for ring in rings]
        polygons.append(Polygon(oriented(rings[0], True), tuple(oriented(r, False) for r in rings[1:])))
    return SurveyArea(tuple(polygons)) if polygons else None


@dataclass(frozen=True)
class GroundFrames:
    """The ground the photographs' frames cover (rings (N, 2), world frame), traced on cells of `cell` metres at
    least: tie points are far apart, and cells of their spacing would square the frames' outline off by metres."""

    rings: tuple[np.ndarray, ...]
    cell: float

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        return rings_bounds(self.rings)


def refined(grid: Grid, mask: np.ndarray, cell: float) -> tuple[Grid, np.ndarray]:
    """The mask on a grid split into cells of about `cell` (whole divisions of its own; at most MAX_CELLS)."""
    factor = max(1, min(math.floor(grid.resolution / cell),
                        math.floor(math.sqrt(MAX_CELLS / max(grid.width * grid.height, 1)))))
    fine = Grid(grid.x0, grid.y1, grid.resolution / factor, grid.width * factor, grid.height * factor)
    return fine, np.repeat(np.repeat(mask, factor, axis=0), factor, axis=1)


def surveyed_area(occupancy: Occupancy, settings: AreaSettings, frames: GroundFrames | None = None,
                  within: Region | None = None) -> SurveyArea | None:
    """The surveyed area of the counted points, joined by the ground `frames` cover and kept `within` an area
    (before the crop), world frame; None when nothing is left of it. The occupancy must reach over the frames'
    bounds."""
    if occupancy.points == 0:
        return None
    grid, mask = occupancy.seen(settings.min_count)
    if frames is not None:
        grid, mask = refined(grid, mask, frames.cell)
        mask |= rings_mask(frames.rings, grid)
    cell_area = grid.resolution ** 2
    mask = close(mask, settings.closing / grid.resolution)
    mask = fill_holes(mask, settings.max_hole / cell_area)
    mask = drop_small_parts(mask, settings.min_part / cell_area)
    if within is not None:
        x, y = grid.centers()
        xx, yy = np.broadcast_arrays(x, y)
        mask &= within.contains(np.column_stack([xx.ravel(), yy.ravel()])).reshape(mask.shape)
    if settings.crop > 0:
        # Erosion may cut a part at a narrow neck; what falls off is kept unless it is a mere sliver.
        mask = drop_small_parts(erode(mask, settings.crop / grid.resolution), 0.01 * settings.min_part / cell_area)
    if not mask.any():
        return None
    return vectorize(depinch(mask), grid, SIMPLIFY * grid.resolution)


def area_of_points(xy: np.ndarray, settings: AreaSettings) -> SurveyArea | None:
    """The surveyed area of points (N, 2) held in memory."""
    if len(xy) == 0:
        return None
    occupancy = Occupancy((*xy.min(axis=0), *xy.max(axis=0)), settings.cell, settings.closing)
    occupancy.add(xy)
    return surveyed_area(occupancy, settings)
