"""Where surface cells fall in an image, and whether the surface hides them from it (a z-buffer of surface
points, or of the triangles of a mesh)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dense.views import View

# Depth (fraction of the distance to the camera) by which a cell may lie behind the nearest surface in its
# z-buffer bucket and still count as seen: covers the surface's slope within a bucket and its noise, while
# anything standing a few metres above the ground (cars, trees, walls) still hides what is behind it.
DEPTH_TOLERANCE = 0.02


@dataclass
class Projection:
    """Image positions (full-resolution pixels, OpenCV convention) and depths of world points in one view."""

    u: np.ndarray
    v: np.ndarray
    depth: np.ndarray
    in_image: np.ndarray  # in front of the camera and inside the frame
    near: np.ndarray  # in front of the camera and near the frame: u and v hold its position (else -1)

    @staticmethod
    def of(view: View, world: np.ndarray) -> "Projection":
        cam = view.to_camera(world)
        depth = cam[:, 2]
        # The lens model is evaluated only near the frame (a distortion-free projection with a wide margin
        # decides which points may be there): most of a large area lies outside any one image.
        K = view.camera.calibration_matrix()
        with np.errstate(divide="ignore", invalid="ignore"):
            x, y = K[0, 0] * cam[:, 0] / depth + K[0, 2], K[1, 1] * cam[:, 1] / depth + K[1, 2]
        w, h = view.camera.width, view.camera.height
        near = np.flatnonzero((depth > 1e-6) & (x > -0.25 * w) & (x < 1.25 * w) & (y > -0.25 * h) & (y < 1.25 * h))
        uv = np.full((len(world), 2), -1.0)
        if len(near):
            uv[near] = view.camera.img_from_cam(cam[near], check_cheirality=False) - 0.5
        u, v = uv[:, 0], uv[:, 1]
        in_image = (depth > 1e-6) & (u >= 0) & (v >= 0) & (u <= view.camera.width - 1) & (v <= view.camera.height - 1)
        projected = np.zeros(len(world), dtype=bool)
        projected[near] = True
        return Projection(u.astype(np.float32), v.astype(np.float32), depth.astype(np.float32), in_image,
                          projected)


def zbuffer(projection: Projection, bucket: float, shape: tuple[int, int]) -> np.ndarray:
    """Nearest depth per square bucket of `bucket` image pixels, over an image of `shape` (h, w) pixels; inf
    where no surface cell lands. Built from the cells of the surface around the area being rendered."""
    ok = projection.in_image
    return _nearest(projection.u[ok], projection.v[ok], projection.depth[ok], bucket, shape)


def visible(projection: Projection, buffer: np.ndarray, bucket: float) -> np.ndarray:
    """Points of a projection not hidden by the surface recorded in the z-buffer."""
    seen = np.zeros(len(projection.depth), dtype=bool)
    ok = np.flatnonzero(projection.in_image)
    nearest = buffer[(projection.v[ok] // bucket).astype(np.int64), (projection.u[ok] // bucket).astype(np.int64)]
    seen[ok] = projection.depth[ok] <= nearest * (1 + DEPTH_TOLERANCE)
    return seen


def off_nadir(view: View, world: np.ndarray) -> np.ndarray:
    """tan^2 of the angle between the vertical and the ray from each point to the camera: 0 straight below."""
    delta = view.center - world
    return ((delta[:, 0] ** 2 + delta[:, 1] ** 2) / np.maximum(delta[:, 2], 1e-6) ** 2).astype(np.float32)


def mesh_zbuffer(projection: Projection, faces: np.ndarray, bucket: float, shape: tuple[int, int]) -> np.ndarray:
    """zbuffer's nearest depth per bucket, from the triangles of a mesh (`projection` of its vertices): every
    bucket a triangle covers holds its depth, however far apart its vertices fall. Triangles reaching far
    outside the frame, or behind the camera, are left out."""
    corners = faces[projection.near[faces].all(axis=1) & projection.in_image[faces].any(axis=1)]
    values = np.stack([projection.u[corners], projection.v[corners], projection.depth[corners]], axis=-1)
    u, v, depth = triangle_samples(values[:, :, :2] / np.float32(bucket), values, 0.7)[1].T
    inside = (u >= 0) & (v >= 0) & (u < shape[1]) & (v < shape[0])
    return _nearest(u[inside], v[inside], depth[inside], bucket, shape)


def _nearest(u: np.ndarray, v: np.ndarray, depth: np.ndarray, bucket: float, shape: tuple[int, int]) -> np.ndarray:
    rows, cols = int(np.ceil(shape[0] / bucket)), int(np.ceil(shape[1] / bucket))
    flat = (v // bucket).astype(np.int64) * cols + (u // bucket).astype(np.int64)
    buffer = np.full(rows * cols, np.inf, dtype=np.float32)
    np.minimum.at(buffer, flat, depth)
    return buffer.reshape(rows, cols)


def triangle_samples(corners: np.ndarray, values: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Points that cover triangles densely, with values interpolated from their corners: each triangle of
    `corners` (T, 3, 2) is cut into similar ones with edges at most `spacing` long, whose corners are the
    samples, so that every pixel a triangle covers gets one when spacing is under a pixel (a rasteriser,
    vectorised over triangles of alike size). Returns each sample's triangle (S,) and values (S, A), linear
    across the triangle from `values` (T, 3, A) at its corners."""
    longest = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2).max(axis=1)
    levels = np.maximum(1, np.ceil(longest / spacing)).astype(np.int64)
    triangles, samples = [np.zeros(0, np.int64)], [np.zeros((0, values.shape[2]), values.dtype)]
    for level in np.unique(levels):
        members = np.flatnonzero(levels == level)
        i, j = np.triu_indices(level + 1)
        lattice = (np.c_[level - j, j - i, i] / level).astype(values.dtype)  # i + j + k = level, all >= 0
        triangles.append(np.repeat(members, len(lattice)))
        interpolated = values[members].transpose(0, 2, 1) @ lattice.T  # (members, A, samples each)
        samples.append(interpolated.transpose(0, 2, 1).reshape(-1, values.shape[2]))
    return np.concatenate(triangles), np.concatenate(samples)
