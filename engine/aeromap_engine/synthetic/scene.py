"""The scene of a synthetic survey: a 2.5D height field (terrain, roads, box buildings with flat or pitched roofs,
trees with rounded crowns) and the surface class of every cell. Pure NumPy; deterministic from the generator.

Grids cover the square [0, size] x [0, size] of the scene's local frame (x east, y north, metres). Row 0 is the
southernmost row and cell (i, j) has its centre at ((j + 0.5) * cell, (i + 0.5) * cell); GeoTIFFs, north-up,
are written flipped. Heights between cell centres are bilinear, which makes the surface continuous: a wall is a
ramp one cell wide, which is also what the truth DSM says there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import cv2
import numpy as np

from .noise import fractal_noise, value_noise


class Surface(IntEnum):
    GRASS = 0
    SOIL = 1
    ROAD = 2
    ROOF = 3
    TREE = 4


@dataclass(frozen=True)
class SceneSpec:
    size_m: float = 150.0
    height_cell_m: float = 0.05  # the geometry; finer than any rendered GSD so walls stay sharp
    texture_cell_m: float = 0.025  # the albedo, finer still so that rendering can filter it
    relief_m: float = 4.0  # range of the terrain's heights
    buildings: int = 10
    trees: int = 45
    roads: int = 2
    control_points: int = 8
    marker_size_m: float = 1.0
    # Control points stay this far (as a fraction of the size) from the border, where the flight's overlap is.
    marker_inset: float = 0.2


def bilinear(grid: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bilinear samples of a (rows, cols[, channels]) grid at continuous column u and row v (cell centres at
    integers), clamped at the border. Flat indexing with np.take keeps it to four gathers: this is the
    renderer's innermost operation."""
    rows, cols = grid.shape[:2]
    u = np.clip(u, 0.0, cols - 1.000001)
    v = np.clip(v, 0.0, rows - 1.000001)
    j = u.astype(np.intp)
    i = v.astype(np.intp)
    fu, fv = u - j, v - i
    index = i * cols + j
    if grid.ndim == 3:
        flat = grid.reshape(rows * cols, grid.shape[2])
        fu, fv = fu[:, None], fv[:, None]
        a, b = np.take(flat, index, axis=0), np.take(flat, index + 1, axis=0)
        c, d = np.take(flat, index + cols, axis=0), np.take(flat, index + cols + 1, axis=0)
    else:
        flat = grid.reshape(-1)
        a, b, c, d = (np.take(flat, index + k) for k in (0, 1, cols, cols + 1))
    if not np.issubdtype(grid.dtype, np.floating):
        # Differences of unsigned bytes would wrap around.
        a, b, c, d = (values.astype(np.float32) for values in (a, b, c, d))
    south = a + (b - a) * fu
    north = c + (d - c) * fu
    return south + (north - south) * fv


@dataclass(frozen=True)
class HeightField:
    z: np.ndarray  # (rows, cols) float32, row 0 in the south
    cell: float

    @property
    def size_m(self) -> float:
        return self.z.shape[1] * self.cell

    def sample(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return bilinear(self.z, np.asarray(x, dtype=np.float64) / self.cell - 0.5,
                        np.asarray(y, dtype=np.float64) / self.cell - 0.5)


@dataclass(frozen=True)
class Road:
    centreline: np.ndarray  # (N, 2) metres
    width: float


@dataclass(frozen=True)
class Building:
    centre: np.ndarray  # (2,)
    half_length: float  # along the ridge
    half_width: float
    angle: float  # radians, of the long axis from east
    base_z: float
    eave_z: float
    ridge_z: float  # eave_z for a flat roof
    style: int  # which roof covering the texture paints

    @property
    def radius(self) -> float:
        return math.hypot(self.half_length, self.half_width)

    @property
    def gable(self) -> bool:
        return self.ridge_z > self.eave_z

    def local(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates along the ridge (u) and across it (v) from the centre."""
        c, s = math.cos(self.angle), math.sin(self.angle)
        dx, dy = x - self.centre[0], y - self.centre[1]
        return dx * c + dy * s, -dx * s + dy * c

    def roof(self, v: np.ndarray) -> np.ndarray:
        slope = 1.0 - np.minimum(np.abs(v) / self.half_width, 1.0)
        return self.eave_z + (self.ridge_z - self.eave_z) * slope


@dataclass(frozen=True)
class Tree:
    centre: np.ndarray
    radius: float
    base_z: float
    crown_bottom_z: float
    top_z: float
    hue: float  # 0..1, the texture's shade of green


@dataclass(frozen=True)
class Marker:
    """A ground control point: a black and white checker painted on open ground, its centre the surveyed point."""

    name: str
    centre: np.ndarray  # (2,)
    z: float
    size: float


@dataclass(frozen=True)
class Scene:
    spec: SceneSpec
    surface: HeightField  # everything: the truth DSM
    ground: HeightField  # the bare terrain: the truth DTM
    classes: np.ndarray  # (rows, cols) uint8 Surface, on the surface's grid
    roads: list[Road]
    buildings: list[Building]
    trees: list[Tree]
    markers: list[Marker]

    @property
    def size_m(self) -> float:
        return self.surface.size_m


def build_scene(spec: SceneSpec, rng: np.random.Generator) -> Scene:
    cell = spec.height_cell_m
    n = int(round(spec.size_m / cell))
    ground = terrain(n, cell, spec.relief_m, rng)
    roads = plan_roads(spec, rng)
    classes = np.full((n, n), Surface.GRASS, dtype=np.uint8)
    road_mask = rasterize_roads(roads, n, cell)
    # Bare patches break up the lawn, as paths and worn ground do.
    soil = fractal_noise((n, n), [4.0 / cell, 8.0 / cell], [1.0, 0.6], rng) > 1.3
    classes[soil] = Surface.SOIL
    classes[road_mask] = Surface.ROAD
    road_distance = cv2.distanceTransform((~road_mask).astype(np.uint8), cv2.DIST_L2, 5) * cell
    field = HeightField(ground, cell)

    markers = place_markers(spec, field, road_distance, rng)
    buildings = place_buildings(spec, field, road_distance, markers, rng)
    trees = place_trees(spec, field, road_distance, markers, buildings, rng)
    surface = ground.copy()
    for building in buildings:
        raise_building(surface, classes, ground, building, cell)
    bumps = value_noise((n, n), 0.8 / cell, rng) * np.float32(0.25)
    for tree in trees:
        raise_tree(surface, classes, ground, bumps, tree, cell)
    return Scene(spec, HeightField(surface, cell), field, classes, roads, buildings, trees, markers)


def terrain(n: int, cell: float, relief_m: float, rng: np.random.Generator) -> np.ndarray:
    """Rolling ground: three octaves of noise (80, 40 and 20 m) on a gentle slope, scaled to the relief. Made on a
    half-metre grid and upsampled bicubically, which keeps it smooth at the fine grid's scale."""
    coarse = 0.5
    m = int(math.ceil(n * cell / coarse))
    hills = fractal_noise((m, m), [80 / coarse, 40 / coarse, 20 / coarse], [1.0, 0.5, 0.25], rng)
    direction = rng.uniform(0, 2 * math.pi)
    yy, xx = np.mgrid[0:m, 0:m].astype(np.float32) * np.float32(coarse)
    tilt = np.float32(1.5 / (m * coarse))  # 1.5 standard deviations of the hills across the scene
    hills += tilt * (xx * np.float32(math.cos(direction)) + yy * np.float32(math.sin(direction)))
    hills = (hills - hills.min()) / max(float(np.ptp(hills)), 1e-6) * np.float32(relief_m)
    ground = cv2.resize(hills, (int(round(m * coarse / cell)),) * 2, interpolation=cv2.INTER_CUBIC)
    return np.ascontiguousarray(ground[:n, :n], dtype=np.float32)


def plan_roads(spec: SceneSpec, rng: np.random.Generator) -> list[Road]:
    """Gently curving roads across the scene, alternately east-west and north-south."""
    size = spec.size_m
    roads = []
    for k in range(spec.roads):
        along = np.linspace(-10.0, size + 10.0, int(size + 21))
        offset = rng.uniform(0.25, 0.75) * size
        wave = rng.uniform(3.0, 8.0) * np.sin(2 * math.pi * along / rng.uniform(90, 160) + rng.uniform(0, 6.3))
        across = offset + wave + rng.uniform(-0.05, 0.05) * (along - size / 2)
        points = np.stack([along, across], axis=1) if k % 2 == 0 else np.stack([across, along], axis=1)
        roads.append(Road(points, float(rng.uniform(5.0, 7.0))))
    return roads


def grid_points(points: np.ndarray, cell: float) -> np.ndarray:
    """Metres to OpenCV drawing coordinates (x = column, y = row, pixel centres at integers), in fixed point
    with 4 fractional bits (OpenCV's shift=4)."""
    return np.round((points / cell - 0.5) * 16).astype(np.int32)


def rasterize_roads(roads: list[Road], n: int, cell: float) -> np.ndarray:
    mask = np.zeros((n, n), dtype=np.uint8)
    for road in roads:
        cv2.polylines(mask, [grid_points(road.centreline, cell)], False, 1,
                      thickness=max(1, int(round(road.width / cell))), lineType=cv2.LINE_8, shift=4)
    return mask.astype(bool)


def _sample_point(spec: SceneSpec, rng: np.random.Generator, inset: float) -> np.ndarray:
    return rng.uniform(inset, spec.size_m - inset, size=2)


def _distance_at(distance: np.ndarray, point: np.ndarray, cell: float) -> float:
    n = distance.shape[0]
    i = min(max(int(point[1] / cell), 0), n - 1)
    j = min(max(int(point[0] / cell), 0), n - 1)
    return float(distance[i, j])


def place_markers(spec: SceneSpec, ground: HeightField, road_distance: np.ndarray,
                  rng: np.random.Generator) -> list[Marker]:
    """Control points spread over the well-overlapped interior, on open ground off the roads."""
    inset = spec.marker_inset * spec.size_m
    spacing = (spec.size_m - 2 * inset) / max(math.sqrt(spec.control_points), 1.0) * 0.8
    markers: list[Marker] = []
    for _ in range(5000):
        if len(markers) == spec.control_points:
            break
        point = _sample_point(spec, rng, inset)
        if _distance_at(road_distance, point, ground.cell) < spec.marker_size_m + 2.0:
            continue
        if any(np.hypot(*(point - m.centre)) < spacing for m in markers):
            continue
        z = float(ground.sample(point[:1], point[1:])[0])
        markers.append(Marker(f"gcp{len(markers) + 1:02d}", point, z, spec.marker_size_m))
    return markers


# Open ground kept around each control point, so that no roof or crown hides it from a nadir camera.
MARKER_CLEARANCE_M = 7.0


def place_buildings(spec: SceneSpec, ground: HeightField, road_distance: np.ndarray, markers: list[Marker],
                    rng: np.random.Generator) -> list[Building]:
    buildings: list[Building] = []
    for _ in range(20000):
        if len(buildings) == spec.buildings:
            break
        half_length, half_width = rng.uniform(5.0, 11.0), rng.uniform(4.0, 7.0)
        radius = math.hypot(half_length, half_width)
        centre = _sample_point(spec, rng, radius + 4.0)
        if _distance_at(road_distance, centre, ground.cell) < radius + 2.5:
            continue
        if any(np.hypot(*(centre - b.centre)) < radius + b.radius + 3.0 for b in buildings):
            continue
        if any(np.hypot(*(centre - m.centre)) < radius + MARKER_CLEARANCE_M for m in markers):
            continue
        angle = rng.uniform(0, math.pi)
        corners = _rectangle(centre, half_length, half_width, angle)
        base = float(ground.sample(corners[:, 0], corners[:, 1]).max())
        eave = base + rng.uniform(3.0, 7.0)
        ridge = eave + rng.uniform(1.5, 3.0) if rng.random() < 0.6 else eave
        buildings.append(Building(centre, half_length, half_width, angle, base, eave, ridge,
                                  int(rng.integers(0, 4))))
    return buildings


def _rectangle(centre: np.ndarray, half_length: float, half_width: float, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    local = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [0, 0]], dtype=np.float64) * [half_length, half_width]
    return centre + local @ np.array([[c, s], [-s, c]])


def place_trees(spec: SceneSpec, ground: HeightField, road_distance: np.ndarray, markers: list[Marker],
                buildings: list[Building], rng: np.random.Generator) -> list[Tree]:
    """Single trees and small groups (a new tree grows beside an earlier one half the time)."""
    trees: list[Tree] = []
    for _ in range(20000):
        if len(trees) == spec.trees:
            break
        radius = rng.uniform(2.0, 5.0)
        if trees and rng.random() < 0.5:
            parent = trees[int(rng.integers(len(trees)))]
            direction = rng.uniform(0, 2 * math.pi)
            distance = (parent.radius + radius) * rng.uniform(0.6, 0.9)
            centre = parent.centre + distance * np.array([math.cos(direction), math.sin(direction)])
        else:
            centre = _sample_point(spec, rng, radius + 2.0)
        if not (radius < centre[0] < spec.size_m - radius and radius < centre[1] < spec.size_m - radius):
            continue
        if _distance_at(road_distance, centre, ground.cell) < radius + 1.0:
            continue
        if any(np.hypot(*(centre - b.centre)) < radius + b.radius + 1.5 for b in buildings):
            continue
        if any(np.hypot(*(centre - m.centre)) < radius + MARKER_CLEARANCE_M for m in markers):
            continue
        height = float(np.clip(rng.uniform(1.4, 2.4) * radius + rng.uniform(0, 2.0), 4.0, 12.0))
        base = float(ground.sample(centre[:1], centre[1:])[0])
        bottom = base + height * rng.uniform(0.25, 0.45)
        trees.append(Tree(centre, radius, base, bottom, base + height, float(rng.random())))
    return trees


def _window(centre: np.ndarray, radius: float, cell: float, n: int) -> tuple[slice, slice, np.ndarray, np.ndarray]:
    """The rows and columns around a disc, and their cell centres' coordinates."""
    j0, j1 = max(int((centre[0] - radius) / cell) - 1, 0), min(int((centre[0] + radius) / cell) + 2, n)
    i0, i1 = max(int((centre[1] - radius) / cell) - 1, 0), min(int((centre[1] + radius) / cell) + 2, n)
    x = (np.arange(j0, j1) + 0.5) * cell
    y = (np.arange(i0, i1) + 0.5) * cell
    xx, yy = np.meshgrid(x, y)
    return slice(i0, i1), slice(j0, j1), xx, yy


def _coverage(signed_distance: np.ndarray, cell: float) -> np.ndarray:
    """The fraction of a cell inside a shape from the signed distance of its centre (negative inside):
    a one-cell ramp that keeps edges free of staircases."""
    return np.clip(0.5 - signed_distance / cell, 0.0, 1.0)


def raise_building(surface: np.ndarray, classes: np.ndarray, ground: np.ndarray, building: Building,
                   cell: float) -> None:
    rows, cols, xx, yy = _window(building.centre, building.radius, cell, surface.shape[0])
    u, v = building.local(xx, yy)
    cover = _coverage(np.maximum(np.abs(u) - building.half_length, np.abs(v) - building.half_width), cell)
    base = ground[rows, cols]
    heights = base + cover * (building.roof(v) - base)
    surface[rows, cols] = np.maximum(surface[rows, cols], heights)
    classes[rows, cols][cover >= 0.5] = Surface.ROOF


def raise_tree(surface: np.ndarray, classes: np.ndarray, ground: np.ndarray, bumps: np.ndarray, tree: Tree,
               cell: float) -> None:
    rows, cols, xx, yy = _window(tree.centre, tree.radius, cell, surface.shape[0])
    r = np.hypot(xx - tree.centre[0], yy - tree.centre[1])
    dome = np.sqrt(np.clip(1.0 - (r / tree.radius) ** 2, 0.0, 1.0))
    crown = tree.crown_bottom_z + (tree.top_z - tree.crown_bottom_z) * dome + bumps[rows, cols] * dome
    cover = _coverage(r - tree.radius, cell)
    base = ground[rows, cols]
    heights = base + cover * (crown - base)
    surface[rows, cols] = np.maximum(surface[rows, cols], heights)
    classes[rows, cols][cover >= 0.5] = Surface.TREE
