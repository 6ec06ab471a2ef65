"""Where surface cells fall in an image, and whether the surface hides them from it (a z-buffer)."""

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
        return Projection(u.astype(np.float32), v.astype(np.float32), depth.astype(np.float32), in_image)


def zbuffer(projection: Projection, bucket: float, shape: tuple[int, int]) -> np.ndarray:
    """Nearest depth per square bucket of `bucket` image pixels, over an image of `shape` (h, w) pixels; inf
    where no surface cell lands. Built from the cells of the surface around the area being rendered."""
    rows, cols = int(np.ceil(shape[0] / bucket)), int(np.ceil(shape[1] / bucket))
    ok = projection.in_image
    flat = (projection.v[ok] // bucket).astype(np.int64) * cols + (projection.u[ok] // bucket).astype(np.int64)
    buffer = np.full(rows * cols, np.inf, dtype=np.float32)
    np.minimum.at(buffer, flat, projection.depth[ok])
    return buffer.reshape(rows, cols)


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
