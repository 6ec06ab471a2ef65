"""The surveyed area: polygons with holes, in one part or several, world frame (traced from the points by
area_tracing.py, read and written as GeoJSON by io/geojson.py).

Everything downstream works from the polygons (written to bounds.geojson): masks of raster tiles are the
polygons rasterized by GDAL (a cell is inside when its centre is), and `contains` agrees with that.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np
import rasterio.features
from matplotlib.path import Path as MplPath
from rasterio.transform import Affine

from ..dem.grid import Grid, Window

LOOKUP_CELLS = 4_000_000  # cells of the lookup raster `contains` uses per part, at most
EXACT_WORK = 20_000_000  # points x ring vertices below which `contains` tests every point exactly


def ring_area(ring: np.ndarray) -> float:
    """Signed area of a ring (N, 2), not closed: positive when counter-clockwise."""
    x, y = ring[:, 0], ring[:, 1]
    return float(0.5 * (np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def oriented(ring: np.ndarray, counter_clockwise: bool) -> np.ndarray:
    return ring if (ring_area(ring) > 0) == counter_clockwise else ring[::-1]


def _closed(ring: np.ndarray, offset: tuple[float, float] = (0.0, 0.0)) -> list[list[float]]:
    """A ring as GeoJSON positions, first position repeated at the end."""
    shifted = ring + np.asarray(offset, dtype=np.float64)
    return [[float(x), float(y)] for x, y in np.vstack([shifted, shifted[:1]])]


def open_ring(positions: list) -> np.ndarray:
    """GeoJSON positions as a ring (N, 2) without the closing repeat."""
    ring = np.asarray(positions, dtype=np.float64)[:, :2]
    return ring[:-1] if len(ring) > 1 and np.array_equal(ring[0], ring[-1]) else ring


def _affine(grid: Grid) -> Affine:
    return Affine(grid.resolution, 0.0, grid.x0, 0.0, -grid.resolution, grid.y1)


def _rasterized(geometries: list[dict], grid: Grid, all_touched: bool = False) -> np.ndarray:
    """Cells of `grid` whose centre lies inside any of the geometries (all_touched: also those a ring crosses)."""
    if not geometries:
        return np.zeros((grid.height, grid.width), dtype=bool)
    return rasterio.features.rasterize([(geometry, 1) for geometry in geometries], (grid.height, grid.width),
                                       transform=_affine(grid), all_touched=all_touched, dtype="uint8").astype(bool)


def rings_bounds(rings: Sequence[np.ndarray]) -> tuple[float, float, float, float]:
    """(xmin, ymin, xmax, ymax) of rings (N, 2), at least one."""
    low = np.min([ring.min(axis=0) for ring in rings], axis=0)
    high = np.max([ring.max(axis=0) for ring in rings], axis=0)
    return float(low[0]), float(low[1]), float(high[0]), float(high[1])


def rings_mask(rings: Sequence[np.ndarray], grid: Grid) -> np.ndarray:
    """Cells of `grid` whose centre lies inside any of the rings (N, 2), which may overlap."""
    return _rasterized([{"type": "Polygon", "coordinates": [_closed(ring)]} for ring in rings], grid)


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


@dataclass(frozen=True, eq=False)
class Polygon:
    """One part of the area: an exterior ring (counter-clockwise) and holes (clockwise), world frame."""

    exterior: np.ndarray  # (N, 2), the first vertex not repeated
    holes: tuple[np.ndarray, ...] = ()

    @property
    def rings(self) -> tuple[np.ndarray, ...]:
        return (self.exterior, *self.holes)

    @property
    def area(self) -> float:
        return abs(ring_area(self.exterior)) - sum(abs(ring_area(hole)) for hole in self.holes)

    @cached_property
    def bounds(self) -> tuple[float, float, float, float]:
        (xmin, ymin), (xmax, ymax) = self.exterior.min(axis=0), self.exterior.max(axis=0)
        return float(xmin), float(ymin), float(xmax), float(ymax)

    def coordinates(self, offset: tuple[float, float] = (0.0, 0.0)) -> list:
        return [_closed(ring, offset) for ring in self.rings]

    @cached_property
    def geometry(self) -> dict:
        """GeoJSON-like geometry in the world frame (what GDAL rasterizes)."""
        return {"type": "Polygon", "coordinates": self.coordinates()}

    def contains_exactly(self, xy: np.ndarray) -> np.ndarray:
        """Points inside the exterior and outside every hole (even-odd test on each ring)."""
        inside = MplPath(np.vstack([self.exterior, self.exterior[:1]])).contains_points(xy)
        for hole in self.holes:
            inside &= ~MplPath(np.vstack([hole, hole[:1]])).contains_points(xy)
        return inside

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Points (N, 2) inside the polygon; cells of a lookup raster that no ring crosses answer for their
        points, only the points in cells that a ring crosses are tested exactly."""
        vertices = sum(len(ring) for ring in self.rings)
        if len(xy) * vertices <= EXACT_WORK:
            return self.contains_exactly(xy)
        xmin, ymin, xmax, ymax = self.bounds
        size = max(math.sqrt(max((xmax - xmin) * (ymax - ymin), 1e-12) / min(LOOKUP_CELLS, len(xy))), 1e-6)
        grid = Grid.covering(self.bounds, size)
        transform = _affine(grid)
        shape = (grid.height, grid.width)
        interior = rasterio.features.rasterize([(self.geometry, 1)], shape, transform=transform, dtype="uint8")
        lines = [({"type": "LineString", "coordinates": _closed(ring)}, 1) for ring in self.rings]
        crossed = rasterio.features.rasterize(lines, shape, transform=transform, all_touched=True, dtype="uint8")
        crossed = cv2.dilate(crossed, np.ones((3, 3), np.uint8)).astype(bool)  # float rounding at cell edges
        row, col = grid.cell_of(xy)
        row, col = np.clip(row, 0, grid.height - 1), np.clip(col, 0, grid.width - 1)
        inside = interior[row, col].astype(bool)
        near = np.flatnonzero(crossed[row, col])
        inside[near] = self.contains_exactly(xy[near])
        return inside


@dataclass(frozen=True, eq=False)
class SurveyArea:
    """The surveyed area: non-overlapping polygons, world frame."""

    polygons: tuple[Polygon, ...]

    @property
    def area(self) -> float:
        return float(sum(polygon.area for polygon in self.polygons))

    @cached_property
    def bounds(self) -> tuple[float, float, float, float]:
        boxes = np.array([polygon.bounds for polygon in self.polygons])
        return (float(boxes[:, 0].min()), float(boxes[:, 1].min()), float(boxes[:, 2].max()),
                float(boxes[:, 3].max()))

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Points (N, 2) inside the area."""
        xy = np.asarray(xy, dtype=np.float64)
        inside = np.zeros(len(xy), dtype=bool)
        for polygon in self.polygons:
            xmin, ymin, xmax, ymax = polygon.bounds
            candidates = np.flatnonzero((xy[:, 0] >= xmin) & (xy[:, 0] <= xmax) & (xy[:, 1] >= ymin)
                                        & (xy[:, 1] <= ymax))
            if len(candidates):
                inside[candidates] |= polygon.contains(xy[candidates])
        return inside

    def mask(self, grid: Grid, all_touched: bool = False) -> np.ndarray:
        """Cells of `grid` whose centre lies inside the area (all_touched: also those a ring crosses)."""
        return _rasterized([polygon.geometry for polygon in self.polygons if _overlap(polygon.bounds, grid.bounds)],
                           grid, all_touched)

    def covered_cells(self, grid: Grid) -> np.ndarray:
        """Cells of `grid` the area covers, the cells its outline crosses included: those a product fills."""
        return self.mask(grid, all_touched=True)

    def tile_mask(self, grid: Grid, size: int) -> np.ndarray:
        """Which tiles of `size` cells (as Grid.tiles cuts them) hold some of the area: (tile rows, tile cols)."""
        tiles = Grid(grid.x0, grid.y1, grid.resolution * size, -(-grid.width // size), -(-grid.height // size))
        return self.mask(tiles, all_touched=True)

    def tiles(self, grid: Grid, size: int, margin: int) -> Iterator[tuple[Window, Window]]:
        """(tile, tile grown by `margin` cells) over the tiles of `grid` (as Grid.tiles cuts them) that hold some
        of the area, each tile cut down to the box of the area's cells in it: a small part in a large tile costs
        its own size, and the gap between far-apart parts costs nothing."""
        for whole, _ in grid.tiles(size, 0, self.tile_mask(grid, size)):
            inside = self.mask(grid.sub(whole), all_touched=True)
            rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
            if not len(rows):
                continue
            core = Window(whole.row + int(rows[0]), whole.col + int(cols[0]), int(rows[-1] - rows[0]) + 1,
                          int(cols[-1] - cols[0]) + 1)
            yield core, Window(core.row - margin, core.col - margin, core.height + 2 * margin,
                               core.width + 2 * margin)

    def geometry(self, offset: tuple[float, float] = (0.0, 0.0)) -> dict:
        """A GeoJSON Polygon (one part) or MultiPolygon, coordinates shifted by `offset` (world frame to CRS)."""
        if len(self.polygons) == 1:
            return {"type": "Polygon", "coordinates": self.polygons[0].coordinates(offset)}
        return {"type": "MultiPolygon", "coordinates": [p.coordinates(offset) for p in self.polygons]}

    @staticmethod
    def from_geometry(geometry: dict, offset: tuple[float, float] = (0.0, 0.0)) -> "SurveyArea":
        """The area of a GeoJSON Polygon or MultiPolygon, coordinates shifted by -`offset` (CRS to world frame)."""
        parts = [geometry["coordinates"]] if geometry["type"] == "Polygon" else geometry["coordinates"]
        shift = np.asarray(offset, dtype=np.float64)
        polygons = []
        for rings in parts:
            exterior = oriented(open_ring(rings[0]) - shift, counter_clockwise=True)
            holes = tuple(oriented(open_ring(ring) - shift, counter_clockwise=False) for ring in rings[1:])
            polygons.append(Polygon(exterior, holes))
        return SurveyArea(tuple(polygons))

    @staticmethod
    def of_ring(vertices: np.ndarray) -> "SurveyArea":
        """A one-part area without holes from its outline's vertices (N, 2)."""
        return SurveyArea((Polygon(oriented(np.asarray(vertices, dtype=np.float64), True)),))
