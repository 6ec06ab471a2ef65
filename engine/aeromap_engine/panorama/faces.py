"""The geometry of a panorama's faces: which way each looks, and where each of its pixels lies in the
equirectangular image.

Frames: a panorama's camera frame is OpenCV's as for any photograph, x right, y down, z at the image's centre
column on the horizon; an equirectangular pixel's longitude grows to the right from -180° at the left edge, its
latitude from +90° at the top row to -90° at the bottom. A face is a pinhole of 90° field of view, so that the
five faces (the cube without its top, which sees the sky above a drone or a pole) cover everything below the
horizon and the band above it without gaps.
"""

from __future__ import annotations

import math

import numpy as np

# Panorama-from-face rotations: the columns are the face camera's x, y and z axes in the panorama's frame.
FACES: dict[str, np.ndarray] = {
    "front": np.eye(3),
    "right": np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]),
    "back": np.array([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]]),
    "left": np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
    # Looking down with the image's top towards the panorama's front.
    "down": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]),
}
FOCAL_RATIO = 0.5  # focal length over the face's side: 90° across
FOCAL_35MM = 36.0 * FOCAL_RATIO  # a 35 mm film frame is 36 mm wide


def face_size(panorama_width: int) -> int:
    """A face's side in pixels: at its centre, a face pixel spans the angle of a panorama pixel (whole turn over
    the width); even, so that the principal point falls between pixels as in the panorama's own grid."""
    return max(2, 2 * round(panorama_width / math.pi / 2))


def face_rays(size: int) -> np.ndarray:
    """Unit directions (size, size, 3) of a face's pixel centres in its own camera frame."""
    centre = (size - 1) / 2.0
    focal = FOCAL_RATIO * size
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float64)
    rays = np.stack([(cols - centre) / focal, (rows - centre) / focal, np.ones_like(cols)], axis=-1)
    return rays / np.linalg.norm(rays, axis=-1, keepdims=True)


def equirectangular_pixels(directions: np.ndarray, width: int, height: int) -> np.ndarray:
    """Where directions (..., 3) in the panorama's frame fall in a width x height equirectangular image: (..., 2)
    column and row, pixel centres at whole numbers."""
    x, y, z = directions[..., 0], directions[..., 1], directions[..., 2]
    longitude = np.arctan2(x, z)
    latitude = np.arctan2(-y, np.hypot(x, z))
    col = (longitude + math.pi) / (2.0 * math.pi) * width - 0.5
    row = (math.pi / 2.0 - latitude) / math.pi * height - 0.5
    return np.stack([col, row], axis=-1)


def equirectangular_rays(width: int, height: int) -> np.ndarray:
    """Unit directions (height, width, 3) of an equirectangular image's pixel centres in the panorama's frame
    (the inverse of equirectangular_pixels)."""
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float64)
    longitude = (cols + 0.5) / width * 2.0 * math.pi - math.pi
    latitude = math.pi / 2.0 - (rows + 0.5) / height * math.pi
    return np.stack([np.cos(latitude) * np.sin(longitude), -np.sin(latitude), np.cos(latitude) * np.cos(longitude)],
                    axis=-1)


def face_maps(face: str, size: int, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """cv2.remap's maps (float32 columns and rows, size x size) that sample a face out of the panorama."""
    directions = face_rays(size) @ FACES[face].T
    pixels = equirectangular_pixels(directions, width, height)
    return pixels[..., 0].astype(np.float32), pixels[..., 1].astype(np.float32)
