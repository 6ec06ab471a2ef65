"""Whether an orthophoto shows the ground the photographs show: a product whose pixels are (nearly) all
transparent is a failure to report, not a success, and the figures measured here name where the ground was lost
(the area it was cropped to, or the colouring of that area)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cloud.area import SurveyArea, rings_bounds, rings_mask
from ..dem.grid import Grid
from ..errors import EngineError

MIN_GROUND_SHARE = 0.1  # of the ground the placed photographs show, the orthophoto colours at least this much
# (over water or featureless ground a dense cloud may leave much of it out, never nine tenths)
MAX_CELLS = 4_000_000  # cells the ground is measured on, at most


@dataclass(frozen=True)
class Coverage:
    covered_m2: float  # the orthophoto's coloured pixels
    area_m2: float  # the surveyed area it is cropped to
    area_on_ground_m2: float  # the part of that area under the photographs
    ground_m2: float  # the ground the placed (near-nadir) photographs show

    @property
    def share(self) -> float:
        """The share of the photographs' ground the orthophoto colours (1 without a nadir photograph)."""
        return self.covered_m2 / self.ground_m2 if self.ground_m2 > 0 else 1.0


def measure_coverage(covered_m2: float, area: SurveyArea, rings: Sequence[np.ndarray],
                     resolution: float) -> Coverage:
    """The coverage of an orthophoto of `covered_m2` cropped to `area`, against the ground the photographs'
    frames (rings (N, 2)) cover, counted on cells of `resolution` or coarser (at most MAX_CELLS)."""
    if not rings:
        return Coverage(covered_m2, area.area, 0.0, 0.0)
    xmin, ymin, xmax, ymax = bounds = rings_bounds(rings)
    cell = max(resolution, math.sqrt((xmax - xmin) * (ymax - ymin) / MAX_CELLS))
    grid = Grid.covering(bounds, cell)
    ground = rings_mask(rings, grid)
    return Coverage(covered_m2, area.area, float((ground & area.mask(grid)).sum()) * cell**2,
                    float(ground.sum()) * cell**2)


def check_coverage(c: Coverage) -> None:
    """Raise EngineError naming the measured cause when the orthophoto is empty or nearly."""
    if c.covered_m2 > 0 and c.share >= MIN_GROUND_SHARE:
        return
    shown = (f"the orthophoto colours {c.covered_m2:,.0f} m2, {c.share:.0%} of the {c.ground_m2:,.0f} m2 the "
             "placed photographs show" if c.ground_m2 > 0 else f"the orthophoto colours {c.covered_m2:,.0f} m2")
    if c.ground_m2 > 0 and c.area_on_ground_m2 < MIN_GROUND_SHARE * c.ground_m2:
        cause = (f"the surveyed area it is cropped to ({c.area_m2:,.0f} m2) lies outside their ground "
                 f"({c.area_on_ground_m2:,.0f} m2 of it inside)")
    else:
        cause = (f"no photograph coloured most of the surveyed area ({c.area_m2:,.0f} m2, "
                 f"{c.area_on_ground_m2:,.0f} m2 of it under the photographs)")
    raise EngineError(f"No orthophoto written: {shown}; {cause}")
