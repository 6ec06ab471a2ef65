"""Rendering a photograph of the scene: every pixel's ray intersected with the height field, the albedo sampled
where it lands (filtered to the pixel's footprint), Lambert shading from the surface normal under a fixed sun.

The intersection is exact for the bilinear surface (no shortcut that assumes a nadir view), so oblique views,
facades and occlusions are right. Rays are marched with steps that a pyramid of block maxima proves safe: a
ray that stays above the highest point within a step's reach cannot hit anything during the step. Where no
coarse step is safe, the ray is sampled every cell and the crossing refined by secant and bisection steps.

A ray grazing an edge can pass through a sliver of surface thinner than a cell between two samples and meet
the surface just behind it instead (a few rays in a million, always at a silhouette, where the pixel sees both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from scipy import ndimage

from .camera import Lens, Pose
from .scene import HeightField, Marker, Scene, bilinear
from .texture import Texture, Walls, wall_owners

SUN_AZIMUTH_DEG = 135.0  # from the south-east, clockwise from north
SUN_ELEVATION_DEG = 50.0
AMBIENT = 0.4  # the share of light from the sky, which also reaches faces turned from the sun
CHUNK = 1 << 17  # rays per batch: bounds the memory of the marching state
ROLLING_BAND_ROWS = 16  # rows that a rolling shutter renders from one camera position


@dataclass(frozen=True)
class MaxPyramid:
    """Per level, the highest height within a block and its eight neighbours, so that the value at the block
    containing a point bounds the surface within one block width of that point (bilinear samples included:
    they never exceed the cells around them)."""

    cell: float
    blocks: tuple[int, ...]  # cells per block side, finest first
    maxima: tuple[np.ndarray, ...]
    top: float
    bottom: float

    def step_m(self, level: int) -> float:
        return self.blocks[level] * self.cell

    def bound(self, level: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        out = np.empty(len(x), dtype=np.float64)
        for k, maxima in enumerate(self.maxima):
            sel = level == k
            if not sel.any():
                continue
            size = self.blocks[k] * self.cell
            rows, cols = maxima.shape
            i = np.clip((y[sel] / size).astype(np.int64), 0, rows - 1)
            j = np.clip((x[sel] / size).astype(np.int64), 0, cols - 1)
            out[sel] = maxima[i, j]
        return out


def max_pyramid(field: HeightField, blocks: tuple[int, ...] = (4, 16, 64)) -> MaxPyramid:
    # A bilinear sample near a block's border also weighs the cells just across it: each cell first takes the
    # highest of its neighbours, so that the blocks bound the interpolated surface, not only the cells.
    z = ndimage.maximum_filter(field.z, size=3, mode="nearest")
    maxima = []
    for b in blocks:
        rows, cols = -(-z.shape[0] // b), -(-z.shape[1] // b)
        padded = np.pad(z, ((0, rows * b - z.shape[0]), (0, cols * b - z.shape[1])), mode="edge")
        block = padded.reshape(rows, b, cols, b).max(axis=(1, 3))
        maxima.append(ndimage.maximum_filter(block, size=3, mode="nearest"))
    return MaxPyramid(field.cell, tuple(blocks), tuple(maxima), float(field.z.max()), float(field.z.min()))


def _height_gap(field: HeightField, origin: np.ndarray, dx: np.ndarray, dy: np.ndarray, dz: np.ndarray,
                t: np.ndarray) -> np.ndarray:
    """Ray height minus surface height at parameter t (positive above the surface)."""
    return origin[2] + t * dz - field.sample(origin[0] + t * dx, origin[1] + t * dy)


def intersect(field: HeightField, pyramid: MaxPyramid, origin: np.ndarray, directions: np.ndarray,
              max_iterations: int = 100_000) -> np.ndarray:
    """Distance along each unit direction from one origin (a camera's centre) to the first point of the surface
    ((N,) float64). Every ray must descend; such a ray always meets the surface."""
    directions = np.asarray(directions, dtype=np.float64)
    origin = np.asarray(origin, dtype=np.float64)
    if np.any(directions[:, 2] >= 0):
        raise ValueError("Every ray must point downwards")
    result = np.full(len(directions), np.nan)
    z_top, z_bottom = pyramid.top + 1e-3, pyramid.bottom - 1e-3
    descent = -directions[:, 2]
    # The marching state in one array, so that dropping finished rays is one gather: direction, t, last t,
    # and the inverse of the horizontal speed (steps are horizontal distances).
    state = np.empty((6, len(directions)))
    state[0:3] = directions.T
    state[3] = np.maximum((origin[2] - z_top) / descent, 0.0)
    state[4] = (origin[2] - z_bottom) / descent
    state[5] = 1.0 / np.maximum(np.hypot(directions[:, 0], directions[:, 1]), 1e-12)
    top_level = len(pyramid.blocks) - 1
    level = np.full(len(directions), top_level, dtype=np.int64)
    ids = np.arange(len(directions))
    steps = np.array([pyramid.step_m(k) for k in range(top_level + 1)])
    substeps = pyramid.blocks[0]  # samples at most one cell apart over a finest step
    live = np.ones(len(ids), dtype=bool)
    for _ in range(max_iterations):
        if not len(ids):
            return result
        dx, dy, dz, t, t_end, inverse_speed = state
        t1 = np.minimum(t + steps[level] * inverse_speed, t_end)
        safe = origin[2] + t1 * dz > pyramid.bound(level, origin[0] + t1 * dx, origin[1] + t1 * dy)
        fine = ~safe & (level == 0) & live
        level = np.where(safe, np.minimum(level + 1, top_level), np.where(fine, 0, np.maximum(level - 1, 0)))
        state[3] = np.where(safe, t1, t)
        if not fine.any():
            continue
        f = np.flatnonzero(fine)
        hit, t_hit = _march_cells(field, origin, dx[f], dy[f], dz[f], t[f], t1[f], substeps)
        result[ids[f[hit]]] = t_hit
        state[3, f[~hit]] = t1[f[~hit]]
        live[f[hit]] = False
        # Dropping finished rays copies the whole state: worth it only once many have finished.
        if 4 * np.count_nonzero(~live) > len(live):
            state, level, ids, live = state[:, live], level[live], ids[live], live[live]
            if not len(ids):
                return result
    raise RuntimeError(f"{len(ids)} rays found no surface in {max_iterations} steps")


def _march_cells(field: HeightField, origin: np.ndarray, dx: np.ndarray, dy: np.ndarray, dz: np.ndarray,
                 t0: np.ndarray, t1: np.ndarray, substeps: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample each ray's step [t0, t1] at `substeps` evenly spaced points; where one lies on or below the
    surface, refine the first crossing. Returns which rays hit and their distances."""
    fractions = np.arange(1, substeps + 1, dtype=np.float64) / substeps
    ts = t0[:, None] + (t1 - t0)[:, None] * fractions
    x = (origin[0] + ts * dx[:, None]).ravel()
    y = (origin[1] + ts * dy[:, None]).ravel()
    gap = origin[2] + ts * dz[:, None] - field.sample(x, y).reshape(ts.shape)
    below = gap <= 0
    hit = below.any(axis=1)
    rows = np.flatnonzero(hit)
    first = below[rows].argmax(axis=1)
    high, g_high = ts[rows, first], gap[rows, first]
    previous = np.maximum(first - 1, 0)
    low, g_low = ts[rows, previous], gap[rows, previous]
    at_start = first == 0
    if at_start.any():
        r = rows[at_start]
        low[at_start] = t0[r]
        g_low[at_start] = _height_gap(field, origin, dx[r], dy[r], dz[r], t0[r])
    return hit, refine(field, origin, dx[rows], dy[rows], dz[rows], low, high, g_low, g_high)


def refine(field: HeightField, origin: np.ndarray, dx: np.ndarray, dy: np.ndarray, dz: np.ndarray,
           low: np.ndarray, high: np.ndarray, g_low: np.ndarray, g_high: np.ndarray, iterations: int = 10
           ) -> np.ndarray:
    """The crossing between low (above the surface, gap g_low > 0) and high (on or below it, g_high <= 0).
    Secant (regula falsi) steps converge in a step or two where the gap is smooth along the ray, but stall
    where the ray crosses a kink of the bilinear surface (a cell border, a wall's foot); alternating them with
    bisections bounds the bracket whatever the surface does."""
    for k in range(iterations):
        if k % 2:
            t = 0.5 * (low + high)
        else:
            t = high - g_high * (high - low) / (g_high - g_low)
        g = _height_gap(field, origin, dx, dy, dz, t)
        above = g > 0
        low, g_low = np.where(above, t, low), np.where(above, g, g_low)
        high, g_high = np.where(above, high, t), np.where(above, g_high, g)
    return high - g_high * (high - low) / (g_high - g_low)


@dataclass(frozen=True)
class Hotspot:
    """The ground's brightening towards the antisolar point: exp(amplitude * exp(-angle / width)), the angle
    between the viewing ray and the sunlight."""

    amplitude: float
    width_deg: float

    def factor(self, directions: np.ndarray, sun: np.ndarray) -> np.ndarray:
        cosines = np.clip(-(directions @ sun) / np.linalg.norm(directions, axis=1), -1.0, 1.0)
        return np.exp(self.amplitude * np.exp(-np.degrees(np.arccos(cosines)) / self.width_deg))


@dataclass(frozen=True)
class ViewSlope:
    """The ground's brightening looking away from the sun, and darkening looking towards it (the first-order
    term of a field's reflectance's dependence on the viewing angle): exp(amplitude * the ray's horizontal
    component away from the sun)."""

    amplitude: float

    def factor(self, directions: np.ndarray, sun: np.ndarray) -> np.ndarray:
        away = -sun[:2] / np.linalg.norm(sun[:2])
        return np.exp(self.amplitude * (directions[:, :2] @ away) / np.linalg.norm(directions, axis=1))


@dataclass(frozen=True)
class RenderModel:
    """Everything the renderer samples, precomputed once per scene."""

    field: HeightField
    pyramid: MaxPyramid
    gradient_x: np.ndarray  # dz/dx per geometry cell (float32)
    gradient_y: np.ndarray
    walls: Walls
    texture: Texture
    sun: np.ndarray  # unit vector towards the sun
    hotspot: Hotspot | None = None
    view_slope: ViewSlope | None = None

    @classmethod
    def build(cls, scene: Scene, texture: Texture, sun: np.ndarray | None = None,
              hotspot: Hotspot | None = None, view_slope: ViewSlope | None = None) -> "RenderModel":
        field = scene.surface
        gy, gx = np.gradient(field.z.astype(np.float32), field.cell)
        return cls(field, max_pyramid(field), gx.astype(np.float32), gy.astype(np.float32),
                   wall_owners(scene), texture, sun_direction() if sun is None else sun, hotspot, view_slope)

    def gradient(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u, v = x / self.field.cell - 0.5, y / self.field.cell - 0.5
        return bilinear(self.gradient_x, u, v), bilinear(self.gradient_y, u, v)


def sun_direction(azimuth_deg: float = SUN_AZIMUTH_DEG, elevation_deg: float = SUN_ELEVATION_DEG) -> np.ndarray:
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    return np.array([math.sin(az) * math.cos(el), math.cos(az) * math.cos(el), math.sin(el)])


def shading(gx: np.ndarray, gy: np.ndarray, sun: np.ndarray) -> np.ndarray:
    """Lambert with ambient light, scaled so that level ground gets 1: the albedo is what level ground shows."""
    norm = np.sqrt(1.0 + gx * gx + gy * gy)
    lambert = np.maximum((-gx * sun[0] - gy * sun[1] + sun[2]) / norm, 0.0)
    return (AMBIENT + (1.0 - AMBIENT) * lambert) / (AMBIENT + (1.0 - AMBIENT) * sun[2])


def sample_albedo(texture: Texture, x: np.ndarray, y: np.ndarray, footprint: np.ndarray) -> np.ndarray:
    """Trilinear sampling of the albedo pyramid: the two levels whose cells bracket the pixel's footprint on the
    ground, blended; this filters the texture as a lens would, where point samples would alias."""
    last = len(texture.levels) - 1
    lod = np.clip(np.log2(np.maximum(footprint, 1e-9) / texture.cell), 0.0, last)
    l0 = np.floor(lod).astype(np.int64)
    l1 = np.minimum(l0 + 1, last)
    frac = lod - l0
    colour = np.zeros((len(x), texture.albedo.shape[2]), dtype=np.float64)
    for k, level in enumerate(texture.levels):
        size = texture.cell * 2 ** k
        for sel, weight in ((l0 == k, 1.0 - frac), (l1 == k, frac)):
            if sel.any():
                samples = bilinear(level, x[sel] / size - 0.5, y[sel] / size - 0.5)
                colour[sel] += weight[sel, None] * samples
    return colour / 255.0


def sample_wrapped(tile: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bilinear samples of a periodic (rows, cols, 3) tile at continuous column u and row v."""
    rows, cols = tile.shape[:2]
    j0 = np.floor(u).astype(np.int64)
    i0 = np.floor(v).astype(np.int64)
    fu, fv = (u - j0)[:, None], (v - i0)[:, None]
    j0, i0 = j0 % cols, i0 % rows
    j1, i1 = (j0 + 1) % cols, (i0 + 1) % rows
    return ((tile[i0, j0] * (1 - fu) + tile[i0, j1] * fu) * (1 - fv)
            + (tile[i1, j0] * (1 - fu) + tile[i1, j1] * fu) * fv)


def surface_colour(model: RenderModel, points: np.ndarray, directions: np.ndarray, footprint_scale: np.ndarray
                   ) -> np.ndarray:
    """Linear colour (about 0..1) seen along each ray at its surface point. footprint_scale is the distance
    over the focal length in pixels: the width on the ground of one pixel seen head-on."""
    x, y = points[:, 0], points[:, 1]
    gx, gy = model.gradient(x, y)
    norm = np.sqrt(1.0 + gx * gx + gy * gy)
    facing = np.clip((directions[:, 0] * gx + directions[:, 1] * gy - directions[:, 2]) / norm, 0.25, 1.0)
    colour = sample_albedo(model.texture, x, y, footprint_scale / facing)
    # Steep ramps are walls: they show a facade (or the side of a crown) instead of the plan-view albedo.
    wall = np.clip((np.hypot(gx, gy) - 1.5) / 1.5, 0.0, 1.0)
    steep = np.flatnonzero(wall > 0)
    if len(steep):
        colour[steep] = _blend_walls(model, points[steep], directions[steep], gx[steep], gy[steep],
                                     footprint_scale[steep], colour[steep], wall[steep])
    light = shading(gx, gy, model.sun)
    for term in (model.hotspot, model.view_slope):
        if term is not None:
            light = light * term.factor(directions, model.sun)
    return colour * light[:, None]


def _blend_walls(model: RenderModel, points: np.ndarray, directions: np.ndarray, gx: np.ndarray, gy: np.ndarray,
                 footprint_scale: np.ndarray, colour: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Facade colours blended over the plan-view colour by how wall-like the surface is. Each facade is sampled
    from the reduction matching the pixel's footprint on the wall, which grazing views stretch."""
    x, y, z = points[:, 0], points[:, 1], points[:, 2]
    field, texture = model.field, model.texture
    i = np.clip((y / field.cell).astype(np.int64), 0, field.z.shape[0] - 1)
    j = np.clip((x / field.cell).astype(np.int64), 0, field.z.shape[1] - 1)
    owner = model.walls.owner[i, j]
    kinds = model.walls.kind(owner)
    along = model.walls.along(owner, x, y)
    slope = np.maximum(np.hypot(gx, gy), 1e-9)
    facing = np.clip(np.abs(directions[:, 0] * gx + directions[:, 1] * gy) / slope, 0.1, 1.0)
    out = colour.copy()
    for kind, levels in texture.facades.items():
        sel = kinds == kind
        if not sel.any():
            continue
        wanted = np.log2(footprint_scale[sel] / facing[sel] / texture.facade_cell)
        level = np.clip(np.round(wanted), 0, len(levels) - 1).astype(np.int64)
        facade = np.empty((int(sel.sum()), 3))
        for k in np.unique(level):
            at = level == k
            size = texture.facade_cell * 2 ** k
            facade[at] = sample_wrapped(levels[k], along[sel][at] / size - 0.5, z[sel][at] / size - 0.5)
        w = weight[sel, None]
        out[sel] = colour[sel] * (1 - w) + facade * w
    return out


def render(model: RenderModel, lens: Lens, pose: Pose, camera_rays: np.ndarray | None = None,
           readout_motion: np.ndarray | None = None) -> np.ndarray:
    """The linear image (height, width, channels of the texture: RGB, or a multispectral scene's bands) float32 a
    camera at pose sees; camera_rays, when given, are
    lens.pixel_rays() computed once for many poses. readout_motion: how far a rolling shutter's camera moves
    while the sensor is read top row to bottom row (world frame, metres), the middle row at the pose."""
    rays = lens.pixel_rays() if camera_rays is None else camera_rays
    channels = model.texture.albedo.shape[2]
    out = np.empty((len(rays), channels), dtype=np.float32)
    rows_per_chunk = max(1, min(CHUNK // lens.width, ROLLING_BAND_ROWS if readout_motion is not None else lens.height))
    chunk = rows_per_chunk * lens.width
    for start in range(0, len(rays), chunk):
        centre = pose.centre
        if readout_motion is not None:
            middle_row = (start // lens.width) + 0.5 * min(rows_per_chunk, lens.height - start // lens.width)
            centre = pose.centre + readout_motion * (middle_row / lens.height - 0.5)
        directions = pose.to_world_directions(rays[start:start + chunk])
        t = intersect(model.field, model.pyramid, centre, directions)
        points = centre + t[:, None] * directions
        out[start:start + chunk] = surface_colour(model, points, directions, t / lens.focal_px)
    return out.reshape(lens.height, lens.width, channels)


def to_photograph(linear: np.ndarray, rng: np.random.Generator, exposure: float = 1.0,
                  noise_dn: float = 1.5) -> np.ndarray:
    """8-bit RGB with the sensor's read noise."""
    values = linear * np.float32(255.0 * exposure)
    if noise_dn > 0:
        values += rng.normal(0.0, noise_dn, size=values.shape).astype(np.float32)
    return np.clip(values + 0.5, 0, 255).astype(np.uint8)


def true_orthophoto(model: RenderModel) -> np.ndarray:
    """What a perfect orthophoto shows: the albedo under the same shading, at the albedo's resolution."""
    shade = shading(model.gradient_x, model.gradient_y, model.sun).astype(np.float32)
    albedo = model.texture.albedo
    shade = cv2.resize(shade, (albedo.shape[1], albedo.shape[0]), interpolation=cv2.INTER_LINEAR)
    out = np.empty_like(albedo)
    for c in range(3):
        out[:, :, c] = np.clip(albedo[:, :, c] * shade + 0.5, 0, 255).astype(np.uint8)
    return out


def observe_markers(model: RenderModel, lens: Lens, pose: Pose, markers: list[Marker], tolerance_m: float = 0.01
                    ) -> list[tuple[Marker, np.ndarray]]:
    """The control points a photograph shows whole (the checker inside the frame) and unhidden (the ray through
    the projected centre reaches the point itself), with their exact pixel positions."""
    if not markers:
        return []
    points = np.array([[m.centre[0], m.centre[1], m.z] for m in markers])
    camera_points = pose.to_camera(points)
    pixels = lens.project(camera_points)
    in_front = camera_points[:, 2] > 0
    depth = np.where(in_front, camera_points[:, 2], 1.0)
    margin = np.array([m.size for m in markers]) / depth * lens.focal_px
    inside = in_front & np.all(np.isfinite(pixels), axis=1)
    inside &= (pixels[:, 0] >= margin) & (pixels[:, 0] <= lens.width - 1 - margin)
    inside &= (pixels[:, 1] >= margin) & (pixels[:, 1] <= lens.height - 1 - margin)
    seen = []
    for k in np.flatnonzero(inside):
        direction = pose.to_world_directions(lens.rays(pixels[k:k + 1]))
        t = intersect(model.field, model.pyramid, pose.centre, direction)
        hit = pose.centre + t[:, None] * direction
        if np.linalg.norm(hit[0] - points[k]) < tolerance_m:
            seen.append((markers[k], pixels[k]))
    return seen

