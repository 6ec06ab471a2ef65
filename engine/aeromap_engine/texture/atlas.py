"""Texture atlases: each patch's region of its photograph (its bounding box at the texture's scale, with a
gutter of GUTTER texels of the photograph around it) packed onto shelves in atlases of at most `limit` texels a
side. The gutter holds the photograph's own pixels, so bilinear filtering and the first mip levels read true
colours at a patch's edge rather than its neighbour's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GUTTER = 4


@dataclass
class Regions:
    """Per patch, the region of its view's scaled image that the atlas holds: top-left texel (P, 2) x, y and
    size (P, 2) width, height."""

    origin: np.ndarray
    size: np.ndarray


@dataclass
class Layout:
    atlas: np.ndarray  # (P,) int32: the atlas of each patch
    position: np.ndarray  # (P, 2) int32: the top-left texel of its region there, x, y
    sizes: list[tuple[int, int]]  # per atlas, width and height


def texel_position(pixel: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Full-resolution pixel positions (n, 2) in the scaled image (scale (n, 2) per axis); both in OpenCV's
    convention, where a pixel's centre has integer coordinates."""
    return (pixel + 0.5) * scale - 0.5


def regions(low: np.ndarray, high: np.ndarray) -> Regions:
    """The regions holding texel positions from `low` to `high` (P, 2) each, with their gutters."""
    origin = np.floor(low).astype(np.int64) - GUTTER
    end = np.floor(high).astype(np.int64) + 2 + GUTTER  # bilinear reads reach the next texel
    return Regions(origin, end - origin)


def pack(size: np.ndarray, width: int, height: int) -> Layout:
    """Shelf packing, tallest regions first: each goes on the first shelf of the current atlas with room left,
    else on a new shelf, else into a new atlas. Atlases are at most `width` x `height`, and so must be every
    region."""
    atlas = np.zeros(len(size), np.int32)
    position = np.zeros((len(size), 2), np.int32)
    sizes: list[tuple[int, int]] = []
    shelves: list[list[int]] = []  # y, height, used width of the current atlas's shelves
    used_width = used_height = 0
    for patch in np.lexsort((-size[:, 0], -size[:, 1])):
        w, h = int(size[patch, 0]), int(size[patch, 1])
        shelf = next((s for s in shelves if s[2] + w <= width), None)
        if shelf is None:
            if used_height + h > height or not sizes:
                if sizes:
                    sizes[-1] = (used_width, used_height)
                sizes.append((0, 0))
                shelves, used_width, used_height = [], 0, 0
            shelf = [used_height, h, 0]
            shelves.append(shelf)
            used_height += h
        atlas[patch], position[patch] = len(sizes) - 1, (shelf[2], shelf[0])
        shelf[2] += w
        used_width = max(used_width, shelf[2])
    if sizes:
        sizes[-1] = (used_width, used_height)
    return Layout(atlas, position, sizes)
