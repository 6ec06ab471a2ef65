"""The surface the orthophoto is draped on: smoother than the DSM, computed per tile from the tiled points, its gaps
filled from a coarse surface of the whole area."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cloud.filters import median_spacing
from ..cloud.tiled import TiledCloud
from ..dem.grid import Grid, resample
from ..dem.surface import CoarseSurface, SurfaceSettings, surface

SURFACE_CELLS = 4  # orthophoto pixels per cell of the surface, at least
SPACING_SAMPLE = 20_000  # points drawn to measure the cloud's spacing


def surface_resolution(cloud: TiledCloud, resolution: float) -> float:
    """The surface the orthophoto is draped on is smoother than the DSM: SURFACE_CELLS orthophoto pixels per
    cell at least (the detail of ODM's decimated 2.5D mesh; finer height noise would only warp the texture),
    and twice the points' spacing (sparse points would each raise a bump)."""
    return max(SURFACE_CELLS * resolution, 2 * median_spacing(cloud.sample(SPACING_SAMPLE), total=len(cloud)))


@dataclass(frozen=True)
class SurfaceModel:
    """The surface the orthophoto is draped on: the tiled points and the gap-filling coarse surface."""

    cloud: TiledCloud
    coarse: CoarseSurface
    resolution: float
    settings: SurfaceSettings

    def heights(self, grid: Grid) -> np.ndarray:
        """Surface heights at the cells of `grid`, computed at the surface's own resolution."""
        native = Grid.covering(grid.bounds, self.resolution)
        margin = 4 * self.resolution
        xmin, ymin, xmax, ymax = native.bounds
        values = surface(self.cloud.near((xmin - margin, ymin - margin, xmax + margin, ymax + margin)).xyz, native,
                         self.coarse, self.settings)
        return resample(native, values, grid)
