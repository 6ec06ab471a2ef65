"""The classes of a point cloud's points, as ASPRS LAS codes (what ODM's pc-classify writes): ground, low, medium
and high vegetation, buildings, and the rest unclassified.

Ground comes from the Simple Morphological Filter, as the DTM does. Above the terrain two measures tell a roof
from a crown on a grid of half-metre cells: how far the surface departs from the plane through each cell's 3 x 3
neighbourhood (a roof face is flat, a crown is lumpy, whatever its size) and how green the points are (leaves
are, roofs seldom). Roofs are smooth, not green, reach a storey above the ground and are larger than a shed; the
walls and eaves beside them are building too. What is left above the ground is vegetation where it is green or
lumpy and tall, by its height above the ground, and unclassified otherwise (cars, fences, people).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.ndimage import binary_fill_holes

from ..cloud.points import PointCloud
from ..dem.grid import Grid, bin_points, sample_bilinear
from ..dem.smrf import SmrfSettings
from ..dem.smrf import classify as smrf_ground
from ..dem.surface import fill_all

UNCLASSIFIED, GROUND, LOW_VEGETATION, MEDIUM_VEGETATION, HIGH_VEGETATION, BUILDING = 1, 2, 3, 4, 5, 6
NAMES = {UNCLASSIFIED: "unclassified", GROUND: "ground", LOW_VEGETATION: "low vegetation",
         MEDIUM_VEGETATION: "medium vegetation", HIGH_VEGETATION: "high vegetation", BUILDING: "building"}


@dataclass(frozen=True)
class ClassSettings:
    cell: float = 0.5  # metres: the grid the surface's roughness and the roofs are measured on
    roof_height: float = 2.0  # metres above the ground a roof is at least
    roof_area: float = 10.0  # square metres: the smallest roof
    roughness: float = 0.08  # metres: RMS departure from the local plane below which a surface is smooth
    greenness: float = 0.03  # green's lead over red and blue (greenness()) from which a point is foliage
    medium_vegetation: float = 0.5  # metres above the ground: low vegetation below, medium above
    high_vegetation: float = 2.0  # metres above the ground: high vegetation above


BOX = np.ones((3, 3), np.uint8)
DARKEST = 60  # r + g + b below which a colour is too dark for its hue to mean anything


def greenness(rgb: np.ndarray) -> np.ndarray:
    """How far green exceeds the larger of red and blue, over the brightness (r + g + b): about 0 for greys and
    for the cyan of shadows, above 0.1 for leaves and grass; 0 for colours too dark to tell (8-bit noise)."""
    values = rgb.astype(np.float32)
    total = values.sum(axis=1)
    lead = values[:, 1] - np.maximum(values[:, 0], values[:, 2])
    return np.where(total >= DARKEST, lead / np.maximum(total, 1.0), 0.0).astype(np.float32)


def roughness(height: np.ndarray) -> np.ndarray:
    """RMS residual of the least-squares plane through each cell's 3 x 3 neighbourhood. On a regular window the
    plane's terms are independent: the mean and the two slopes, each from one filter. The edges are extended
    linearly, so that a plane is flat up to them."""
    h = np.pad(height.astype(np.float64), 1, mode="reflect", reflect_type="odd")
    slope_x = np.tile([-1.0, 0.0, 1.0], (3, 1))
    total = cv2.boxFilter(h, -1, (3, 3), normalize=False)
    squares = cv2.boxFilter(h * h, -1, (3, 3), normalize=False)
    along_x = cv2.filter2D(h, -1, slope_x)
    along_y = cv2.filter2D(h, -1, slope_x.T)
    # Sum of squares about the plane: about the mean, less what each slope explains (sum of x^2 over 9 cells: 6).
    residual = (squares - total**2 / 9 - along_x**2 / 6 - along_y**2 / 6)[1:-1, 1:-1]
    return np.sqrt(np.clip(residual, 0, None) / 9).astype(np.float32)


def height_above_ground(xyz: np.ndarray, ground: np.ndarray, cell: float,
                        bounds: tuple[float, float, float, float]) -> np.ndarray:
    """Each point's height above the surface interpolated through the ground points' mean heights per cell."""
    grid = Grid.covering(bounds, cell)
    terrain = fill_all(bin_points(grid, xyz[ground], "mean"))
    return xyz[:, 2] - sample_bilinear(grid, terrain, xyz[:, :2].astype(np.float64))


def patches(cells: np.ndarray, least: float, height: np.ndarray | None = None,
            reach: float = 0.0) -> np.ndarray:
    """The cells of the 8-connected patches of `cells` of at least `least` cells (and, with `height`, whose highest
    cell reaches `reach`)."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(cells.astype(np.uint8), connectivity=8)
    kept = stats[:, cv2.CC_STAT_AREA] >= least
    if height is not None:
        highest = np.zeros(count)
        np.maximum.at(highest, labels.ravel(), height.ravel())
        kept &= highest >= reach
    kept[0] = False  # the background
    return kept[labels]


def roofs(smooth: np.ndarray, raised: np.ndarray, above: np.ndarray, settings: ClassSettings) -> np.ndarray:
    """Cells of roofs: smooth raised cells in connected patches (ridges and small gaps closed) of at least the
    smallest roof's area that reach a storey's height somewhere (eaves may hang lower), with what they enclose."""
    closed = cv2.morphologyEx(smooth.astype(np.uint8), cv2.MORPH_CLOSE, BOX).astype(bool)
    found = patches(closed & raised, settings.roof_area / settings.cell**2, above, settings.roof_height)
    # What a roof surrounds is roof: a cone's apex, a chimney, a skylight.
    return binary_fill_holes(found) & raised


def classify(xyz: np.ndarray, rgb: np.ndarray, bounds: tuple[float, float, float, float], smrf: SmrfSettings,
             settings: ClassSettings = ClassSettings()) -> np.ndarray:
    """The ASPRS class (uint8) of each point among points over `bounds` (x, y in metres)."""
    classes = np.full(len(xyz), UNCLASSIFIED, np.uint8)
    ground = smrf_ground(xyz, bounds, smrf)
    if not ground.any():
        return classes
    classes[ground] = GROUND
    above = height_above_ground(xyz, ground, smrf.cell, bounds)
    green = greenness(rgb) >= settings.greenness

    grid = Grid.covering(bounds, settings.cell)
    cell_above = np.nan_to_num(bin_points(grid, np.c_[xyz[:, :2], above], "max"), nan=0.0)
    cell_green = bin_points(grid, np.c_[xyz[:, :2], green], "mean") >= 0.5
    rough = roughness(fill_all(bin_points(grid, xyz, "max"))) >= settings.roughness
    raised = (cell_above >= settings.roof_height / 2) & ~cell_green
    smooth = raised & ~rough
    # Walls and eaves: the cells along a roof's edge, down to the ground.
    building_cells = cv2.dilate(roofs(smooth, raised, cell_above, settings).astype(np.uint8), BOX).astype(bool)
    # The cells along a smooth surface's edge are rough for the step down, not for foliage (a surface of a square
    # metre at least: a lumpy crown has a few cells that happen to be smooth).
    surfaces = patches(smooth, 1.0 / settings.cell**2)
    lumpy = rough & ~cv2.dilate(surfaces.astype(np.uint8), BOX).astype(bool)

    rows, cols = grid.cell_of(xyz)
    rows, cols = np.clip(rows, 0, grid.height - 1), np.clip(cols, 0, grid.width - 1)
    objects = ~ground & (above > 0)
    building = objects & building_cells[rows, cols] & ~green
    classes[building] = BUILDING
    # Below a tree's height, lumpy and grey is as often a car, a rock or a wall as a bush: only green says foliage.
    vegetation = objects & ~building & (green | (lumpy[rows, cols] & (above >= settings.high_vegetation)))
    heights = np.digitize(above[vegetation], [settings.medium_vegetation, settings.high_vegetation])
    classes[vegetation] = np.array([LOW_VEGETATION, MEDIUM_VEGETATION, HIGH_VEGETATION], np.uint8)[heights]
    return classes


def class_counts(parts: Iterable[PointCloud]) -> dict[str, int]:
    """Points per class, by the classes' names, of a classified cloud given part by part."""
    counts = np.zeros(256, np.int64)
    for part in parts:
        counts += np.bincount(part.classes, minlength=256)
    return {NAMES.get(code, f"class {code}"): int(counts[code]) for code in np.flatnonzero(counts)}
