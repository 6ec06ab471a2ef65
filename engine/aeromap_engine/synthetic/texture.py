"""The scene's colours: an albedo map finer than any rendered GSD, painted per surface class from noise (grass,
bare soil, asphalt with markings, roof tiles, foliage) with the control points' checkers, and tiles for the
walls that only oblique rays see. Matching needs texture at every scale from a few pixels to tens of pixels,
so the noise spans 5 cm to 8 m."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import cv2
import numpy as np
from scipy import ndimage

from .noise import fractal_noise, value_noise
from .scene import Building, Marker, Road, Scene, Surface, Tree, grid_points

# Colour pairs per class; the noise mixes between them. Roofs and trees are painted over per object.
_COLOUR_A = np.array([[0.25, 0.42, 0.14], [0.42, 0.33, 0.22], [0.26, 0.26, 0.27], [0.5, 0.5, 0.5],
                      [0.15, 0.28, 0.09]], dtype=np.float32)
_COLOUR_B = np.array([[0.52, 0.50, 0.24], [0.60, 0.48, 0.33], [0.35, 0.34, 0.31], [0.5, 0.5, 0.5],
                      [0.22, 0.34, 0.10]], dtype=np.float32)
_GRAIN = np.array([0.30, 0.30, 0.16, 0.2, 0.3], dtype=np.float32)  # contrast of the fine noise per class
_ROOF_COLOURS = np.array([[0.62, 0.30, 0.20], [0.30, 0.32, 0.36], [0.47, 0.33, 0.24], [0.63, 0.62, 0.58]])
_MARKING = 0.88
_MARKER_BLACK, _MARKER_WHITE = 0.06, 0.94


class WallKind(IntEnum):
    """What a steep part of the surface shows: nothing steep, a crown's side or a building's facade."""

    NONE = 0
    TREE = 1
    BUILDING = 2


@dataclass(frozen=True)
class Texture:
    cell: float
    levels: list[np.ndarray]  # uint8 (rows, cols, 3) albedo; level k has cells of cell * 2**k
    facade_cell: float
    # float32 (rows, cols, 3) periodic wall tiles (columns along the wall, rows up), each with its reductions.
    facades: dict[WallKind, list[np.ndarray]]

    @property
    def albedo(self) -> np.ndarray:
        return self.levels[0]


def paint_texture(scene: Scene, rng: np.random.Generator, levels: int = 5) -> Texture:
    albedo = paint_albedo(scene, rng)
    pyramid = halvings(albedo, levels)
    facade_cell = 0.05
    facades = {kind: halvings(tile, 3) for kind, tile in facade_tiles(rng, facade_cell).items()}
    return Texture(scene.spec.texture_cell_m, pyramid, facade_cell, facades)


def halvings(tile: np.ndarray, count: int) -> list[np.ndarray]:
    levels = [tile]
    for _ in range(count - 1):
        rows, cols = levels[-1].shape[:2]
        levels.append(cv2.resize(levels[-1], (cols // 2, rows // 2), interpolation=cv2.INTER_AREA))
    return levels


def paint_albedo(scene: Scene, rng: np.random.Generator) -> np.ndarray:
    cell = scene.spec.texture_cell_m
    n = int(round(scene.size_m / cell))
    classes = cv2.resize(scene.classes, (n, n), interpolation=cv2.INTER_NEAREST)
    grain = fractal_noise((n, n), [2, 4, 8, 16, 32], [0.5, 0.8, 1.0, 1.0, 0.8], rng)
    patches = fractal_noise((n, n), [2.0 / cell, 4.0 / cell, 8.0 / cell], [0.5, 0.8, 1.0], rng)
    mix = np.clip(np.float32(0.5) + np.float32(0.35) * patches, 0.0, 1.0)
    lum = np.float32(1.0) + _GRAIN[classes] * grain
    albedo = np.empty((n, n, 3), dtype=np.uint8)
    for c in range(3):
        channel = (_COLOUR_A[classes, c] + (_COLOUR_B[classes, c] - _COLOUR_A[classes, c]) * mix) * lum
        albedo[:, :, c] = _to_bytes(channel)
    del classes, mix, lum
    for road in scene.roads:
        paint_markings(albedo, road, cell)
    tiles = rng.uniform(-1.0, 1.0, size=(64, 64)).astype(np.float32)
    for building in scene.buildings:
        paint_roof(albedo, building, cell, grain, patches, tiles, rng)
    for tree in scene.trees:
        paint_crown(albedo, tree, cell, rng)
    for marker in scene.markers:
        paint_marker(albedo, marker, cell)
    return albedo


def _to_bytes(values: np.ndarray) -> np.ndarray:
    return np.clip(values * np.float32(255.0) + np.float32(0.5), 0, 255).astype(np.uint8)


def _window(albedo: np.ndarray, centre: np.ndarray, radius: float, cell: float
            ) -> tuple[slice, slice, np.ndarray, np.ndarray]:
    n = albedo.shape[0]
    j0, j1 = max(int((centre[0] - radius) / cell) - 1, 0), min(int((centre[0] + radius) / cell) + 2, n)
    i0, i1 = max(int((centre[1] - radius) / cell) - 1, 0), min(int((centre[1] + radius) / cell) + 2, n)
    xx, yy = np.meshgrid((np.arange(j0, j1) + 0.5) * cell, (np.arange(i0, i1) + 0.5) * cell)
    return slice(i0, i1), slice(j0, j1), xx, yy


def _blend(albedo: np.ndarray, rows: slice, cols: slice, colour: np.ndarray, weight: np.ndarray) -> None:
    """Paint colour (float, (h, w, 3) or (3,)) over the window with a per-cell weight in 0..1."""
    region = albedo[rows, cols].astype(np.float32) / np.float32(255.0)
    w = weight[:, :, None].astype(np.float32)
    albedo[rows, cols] = _to_bytes(region * (1.0 - w) + np.asarray(colour, dtype=np.float32) * w)


def paint_markings(albedo: np.ndarray, road: Road, cell: float) -> None:
    """A dashed centre line (3 m dashes, 3 m gaps) and solid edge lines, as painted on a country road."""
    mask = np.zeros(albedo.shape[:2], dtype=np.uint8)
    line = road.centreline
    steps = np.linalg.norm(np.diff(line, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(steps)])
    dash = (arc // 3.0) % 2 == 0
    segments = [grid_points(line[k:k + 2], cell) for k in np.flatnonzero(dash[:-1])]
    cv2.polylines(mask, segments, False, 1, thickness=max(1, int(round(0.15 / cell))), lineType=cv2.LINE_AA,
                  shift=4)
    tangent = np.gradient(line, axis=0)
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], axis=1) / np.linalg.norm(tangent, axis=1, keepdims=True)
    for side in (-1.0, 1.0):
        edge = line + side * (road.width / 2 - 0.35) * normal
        cv2.polylines(mask, [grid_points(edge, cell)], False, 1, thickness=max(1, int(round(0.12 / cell))),
                      lineType=cv2.LINE_AA, shift=4)
    painted = mask > 0
    albedo[painted] = np.uint8(round(_MARKING * 255))


def paint_roof(albedo: np.ndarray, building: Building, cell: float, grain: np.ndarray, patches: np.ndarray,
               tiles: np.ndarray, rng: np.random.Generator) -> None:
    rows, cols, xx, yy = _window(albedo, building.centre, building.radius, cell)
    u, v = building.local(xx, yy)
    inside = np.clip(0.5 - np.maximum(np.abs(u) - building.half_length, np.abs(v) - building.half_width) / cell,
                     0.0, 1.0)
    fine = grain[rows, cols]
    if building.gable:
        up_slope = building.half_width - np.abs(v)  # from the eave towards the ridge
        row = np.floor(up_slope / 0.33).astype(np.int64)
        shifted = u + 0.125 * (row % 2)
        col = np.floor(shifted / 0.25).astype(np.int64)
        tone = tiles[row % 64, (col + 17 * (v > 0)) % 64]
        gap = np.minimum((up_slope / 0.33) % 1.0, (shifted / 0.25) % 1.0)
        lum = (1.0 + 0.14 * tone + 0.08 * fine) * np.where(gap < 0.12, 0.6, 1.0)
        lum = lum * np.where(np.abs(v) < 0.15, 0.75, 1.0)  # the ridge's capping
    else:
        # A flat roof: sealed panels with seams every 2.5 m and a few vents and skylights.
        seam = np.minimum(np.abs((u / 2.5) % 1.0 - 0.5), np.abs((v / 2.5) % 1.0 - 0.5))
        lum = (1.0 + 0.18 * fine) * np.where(seam > 0.47, 0.7, 1.0)
        for _ in range(int(rng.integers(2, 6))):
            cu = rng.uniform(-building.half_length + 1.5, building.half_length - 1.5)
            cv = rng.uniform(-building.half_width + 1.5, building.half_width - 1.5)
            su, sv = rng.uniform(0.3, 0.8, size=2)
            vent = (np.abs(u - cu) < su) & (np.abs(v - cv) < sv)
            lum = np.where(vent, rng.choice([0.35, 1.35]) + 0.1 * fine, lum)
    lum = lum * (1.0 + 0.08 * patches[rows, cols])
    colour = _ROOF_COLOURS[building.style].astype(np.float32)
    _blend(albedo, rows, cols, lum[:, :, None] * colour, inside)


def paint_crown(albedo: np.ndarray, tree: Tree, cell: float, rng: np.random.Generator) -> None:
    """Clumps of leaves: bright tops and dark gaps between them, at 10 to 60 cm."""
    rows, cols, xx, yy = _window(albedo, tree.centre, tree.radius, cell)
    r = np.hypot(xx - tree.centre[0], yy - tree.centre[1])
    inside = np.clip(0.5 - (r - tree.radius) / cell, 0.0, 1.0)
    shape = xx.shape
    clumps = fractal_noise(shape, [4, 8, 16, 24], [0.4, 0.8, 1.0, 0.7], rng)
    lum = 0.55 + 0.6 / (1.0 + np.exp(-1.8 * clumps))
    dark = np.array([0.10, 0.20, 0.06]) + tree.hue * np.array([0.08, 0.10, 0.02])
    light = dark + np.array([0.08, 0.12, 0.04])
    mix = np.clip(0.5 + 0.4 * value_noise(shape, 1.0 / cell, rng), 0.0, 1.0)[:, :, None]
    colour = (dark + (light - dark) * mix) * lum[:, :, None]
    _blend(albedo, rows, cols, colour, inside)


def paint_marker(albedo: np.ndarray, marker: Marker, cell: float) -> None:
    """A 2 x 2 checker, white in the north-east and south-west quarters. Each cell is painted with the exact
    fraction of it that is white (a box filter), so that the checker's centre is where the survey says, not
    rounded to a texture cell."""
    half = marker.size / 2.0
    rows, cols, xx, yy = _window(albedo, marker.centre, half + cell, cell)
    dx, dy = xx - marker.centre[0], yy - marker.centre[1]
    east = np.clip(0.5 + dx / cell, 0.0, 1.0)
    north = np.clip(0.5 + dy / cell, 0.0, 1.0)
    white = east * north + (1.0 - east) * (1.0 - north)
    inside = np.clip(0.5 + (half - np.abs(dx)) / cell, 0.0, 1.0) * np.clip(0.5 + (half - np.abs(dy)) / cell, 0.0, 1.0)
    value = _MARKER_BLACK + (_MARKER_WHITE - _MARKER_BLACK) * white
    _blend(albedo, rows, cols, np.repeat(value[:, :, None], 3, axis=2), inside)


def facade_tiles(rng: np.random.Generator, cell: float) -> dict[WallKind, np.ndarray]:
    """Periodic wall textures: plastered facades with rows of windows (floors every 3 m), and foliage for the
    sides of crowns."""
    rows, cols = int(12.0 / cell), int(24.0 / cell)
    v, u = np.mgrid[0:rows, 0:cols].astype(np.float32) * np.float32(cell)
    grain = fractal_noise((rows, cols), [2, 4, 8, 16], [0.6, 1.0, 1.0, 0.7], rng)
    plaster = np.array([0.74, 0.69, 0.61], dtype=np.float32)
    facade = plaster * (1.0 + 0.1 * grain)[:, :, None]
    floor_v, bay_u = v % 3.0, u % 2.4
    bay = (u // 2.4).astype(np.int64) + 10 * (v // 3.0).astype(np.int64)
    shade = rng.uniform(0.1, 0.35, size=int(bay.max()) + 1)
    window = (bay_u > 0.6) & (bay_u < 1.8) & (floor_v > 0.9) & (floor_v < 2.3)
    frame = (bay_u > 0.52) & (bay_u < 1.88) & (floor_v > 0.82) & (floor_v < 2.38) & ~window
    facade[window] = (shade[bay[window]][:, None] * np.array([0.9, 1.0, 1.15])).astype(np.float32)
    facade[frame] = 0.9
    facade[floor_v < 0.12] *= 0.7  # the floor's band
    leaves = fractal_noise((rows, cols), [4, 8, 16], [0.6, 1.0, 0.8], rng)
    foliage = np.array([0.13, 0.24, 0.08], dtype=np.float32) * (0.6 + 0.6 / (1.0 + np.exp(-1.8 * leaves)))[:, :, None]
    return {WallKind.BUILDING: facade.astype(np.float32), WallKind.TREE: foliage.astype(np.float32)}


@dataclass(frozen=True)
class Walls:
    """Which object's wall each geometry cell may show, and each object's frame, so that a facade's texture runs
    continuously along its wall. (The height gradient's direction cannot give that: along a wall that is not
    aligned with the grid it wavers by degrees from cell to cell, and metres from the origin that would make
    the texture jump.)"""

    owner: np.ndarray  # (rows, cols) int32: 0 none, 1..B buildings, B+1..B+T trees
    kinds: np.ndarray  # WallKind per owner
    centres: np.ndarray  # (owners, 2)
    axes: np.ndarray  # (owners, 2): the unit direction of a building's ridge
    half_sizes: np.ndarray  # (owners, 2): a building's half length and width, a tree's radius twice

    def kind(self, owner: np.ndarray) -> np.ndarray:
        return self.kinds[owner]

    def along(self, owner: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Metres along the wall: for a building, along whichever side is nearest; for a crown, around it."""
        dx, dy = x - self.centres[owner, 0], y - self.centres[owner, 1]
        c, s = self.axes[owner, 0], self.axes[owner, 1]
        u, v = dx * c + dy * s, -dx * s + dy * c
        half = self.half_sizes[owner]
        side = np.where(np.abs(u) - half[:, 0] > np.abs(v) - half[:, 1], v, u)
        around = np.arctan2(dy, dx) * half[:, 0]
        return np.where(self.kinds[owner] == WallKind.TREE, around, side)


def wall_owners(scene: Scene) -> Walls:
    """A wall's ramp cells are half inside and half outside its object; the largest owner id in each 3 x 3
    neighbourhood gives both halves the object's (buildings and trees never touch, crowns may overlap)."""
    cell = scene.surface.cell
    owner = np.zeros(scene.classes.shape, dtype=np.int32)
    objects: list[tuple[WallKind, np.ndarray, np.ndarray, np.ndarray]] = []
    for building in scene.buildings:
        objects.append((WallKind.BUILDING, building.centre,
                        np.array([np.cos(building.angle), np.sin(building.angle)]),
                        np.array([building.half_length, building.half_width])))
    for tree in scene.trees:
        objects.append((WallKind.TREE, tree.centre, np.array([1.0, 0.0]), np.array([tree.radius, tree.radius])))
    surface_class = {WallKind.BUILDING: Surface.ROOF, WallKind.TREE: Surface.TREE}
    for number, (kind, centre, _, half) in enumerate(objects, start=1):
        reach = float(np.hypot(*half)) + 2 * cell
        n = owner.shape[0]
        j0, j1 = max(int((centre[0] - reach) / cell), 0), min(int((centre[0] + reach) / cell) + 1, n)
        i0, i1 = max(int((centre[1] - reach) / cell), 0), min(int((centre[1] + reach) / cell) + 1, n)
        window = owner[i0:i1, j0:j1]
        mine = scene.classes[i0:i1, j0:j1] == surface_class[kind]
        if kind == WallKind.TREE:
            yy, xx = np.mgrid[i0:i1, j0:j1]
            mine &= np.hypot((xx + 0.5) * cell - centre[0], (yy + 0.5) * cell - centre[1]) <= half[0] + cell
        window[mine] = number
    owner = ndimage.grey_dilation(owner, size=(3, 3))
    kinds = np.array([WallKind.NONE] + [o[0] for o in objects], dtype=np.uint8)
    centres = np.array([[0.0, 0.0]] + [o[1] for o in objects])
    axes = np.array([[1.0, 0.0]] + [o[2] for o in objects])
    half_sizes = np.array([[1.0, 1.0]] + [o[3] for o in objects])
    return Walls(owner, kinds, centres, axes, half_sizes)
