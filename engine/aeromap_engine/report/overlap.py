"""How many images see each ground cell: the report's overlap map. The cells of a coarse grid over the surveyed
area sit at the mean height of the points in them (gaps interpolated); a cell counts for an image when it falls
inside the image's frame. Hidden ground is not looked for: at a few hundred cells across, buildings and trees
change the counts little, and the map is about the flight plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cloud.boundary import Region
from ..dem.grid import Grid, bin_points
from ..dem.surface import fill_all
from ..dense.views import View
from ..ortho.visibility import Projection

CELLS_ACROSS = 160  # cells along the longer side of the surveyed area
WELL_COVERED = 5  # images: ODM's colour scale tops out here, and dense matching wants that many


@dataclass(frozen=True)
class OverlapMap:
    counts: np.ndarray  # (H, W) float32 images per cell, NaN outside the surveyed area
    grid: Grid

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(xmin, xmax, ymin, ymax) in the world frame, as matplotlib's imshow takes it."""
        xmin, ymin, xmax, ymax = self.grid.bounds
        return xmin, xmax, ymin, ymax

    def inside(self) -> np.ndarray:
        return self.counts[np.isfinite(self.counts)]

    @property
    def median(self) -> float:
        inside = self.inside()
        return float(np.median(inside)) if inside.size else float("nan")

    def share_with_at_least(self, images: int) -> float:
        """Fraction of the surveyed area seen by at least this many images."""
        inside = self.inside()
        return float(np.mean(inside >= images)) if inside.size else 0.0


def cell_heights(grid: Grid, xyz: np.ndarray) -> np.ndarray:
    """Mean height of the points in each cell; empty cells interpolated from their surroundings."""
    return fill_all(bin_points(grid, xyz, "mean"))


def images_per_point(views: Sequence[View], world: np.ndarray) -> np.ndarray:
    """For each world point (N, 3), the number of views whose frame holds it."""
    counts = np.zeros(len(world), dtype=np.int32)
    for view in views:
        counts += Projection.of(view, world).in_image
    return counts


def overlap_map(views: Sequence[View], boundary: Region, xyz: np.ndarray,
                cells_across: int = CELLS_ACROSS) -> OverlapMap:
    """Images per cell over the boundary, the surface given by points xyz (world frame, not empty)."""
    xmin, ymin, xmax, ymax = boundary.bounds
    grid = Grid.covering(boundary.bounds, max(xmax - xmin, ymax - ymin, 1e-6) / cells_across)
    heights = cell_heights(grid, xyz)
    x, y = grid.centers()
    xx, yy = np.broadcast_arrays(x, y)
    centres = np.c_[xx.ravel(), yy.ravel()]
    inside = boundary.contains(centres)
    counts = np.full(len(centres), np.nan, dtype=np.float32)
    counts[inside] = images_per_point(views, np.c_[centres[inside], heights.ravel()[inside]])
    return OverlapMap(counts.reshape(grid.height, grid.width), grid)
