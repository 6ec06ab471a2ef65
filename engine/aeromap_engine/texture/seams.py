"""Global seam levelling (Waechter et al. 2014, section 5): photographs differ in exposure and white balance, so
two patches from different views meet at a visible step. Each texture point (a vertex within one patch) gets a
colour offset: the offsets make the two sides of every seam agree, vary smoothly within a patch and stay small,
in the least-squares sense (one sparse linear system, solved directly: its LU fits in memory for the meshes the
vertex budget allows). The offsets are then spread over each patch's texels, linearly across each face.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix, identity
from scipy.sparse.linalg import factorized

from ..ortho.visibility import triangle_samples
from .patches import Charts

SMOOTHNESS = 1.0  # weight of equal offsets along an edge inside a patch, against 1 for agreement across a seam
# Pull of each offset towards 0. It fixes the overall level, which seams and smoothness leave free, and makes an
# offset fade over some sqrt(SMOOTHNESS / ANCHOR) = 30 edges from its seam, so that far from seams a patch keeps
# its photograph's colours (a gradient over metres does not show; a step at a seam does).
ANCHOR = 1e-3
# Seam points whose two sides differ by more than this many grey levels (beyond what exposure explains: the views
# see different things there, such as a moving car or a tree whose top the mesh misses) weigh less.
OUTLIER_LEVELS = 40.0
FIELD_CELL = 4  # texels per cell of the grid on which the offsets are interpolated before being spread smoothly


@dataclass(frozen=True)
class SeamFigures:
    """Median colour step across the seams (grey levels, mean of the channels) before and after levelling."""

    seam_points: int
    step_before: float
    step_after: float


def seam_pairs(charts: Charts) -> np.ndarray:
    """Pairs (S, 2) of texture points of one vertex in different patches (a vertex in n patches gives n - 1)."""
    order = np.argsort(charts.point_vertex, kind="stable")
    same = charts.point_vertex[order[1:]] == charts.point_vertex[order[:-1]]
    return np.c_[order[:-1][same], order[1:][same]]


def patch_edges(charts: Charts) -> np.ndarray:
    """Pairs (E, 2) of texture points joined by a face's edge (both in the face's patch), each once."""
    ends = np.sort(charts.face_points[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1).astype(np.int64)
    size = len(charts.point_vertex)
    key = np.unique(ends[:, 0] * size + ends[:, 1])
    return np.c_[key // size, key % size]


def _laplacian(pairs: np.ndarray, weights: np.ndarray, size: int) -> coo_matrix:
    """sum w (x_a - x_b)^2 as a quadratic form."""
    rows = np.r_[pairs[:, 0], pairs[:, 1], pairs[:, 0], pairs[:, 1]]
    cols = np.r_[pairs[:, 1], pairs[:, 0], pairs[:, 0], pairs[:, 1]]
    values = np.r_[-weights, -weights, weights, weights]
    return coo_matrix((values, (rows, cols)), shape=(size, size))


def level_offsets(charts: Charts, colours: np.ndarray) -> tuple[np.ndarray, SeamFigures]:
    """Offsets (C, 3) to add to the texture points' colours (C, 3) (each sampled around the point in its own
    patch's view), minimising sum over seams w (c_a + g_a - c_b - g_b)^2 + SMOOTHNESS sum over patch edges
    (g_i - g_j)^2 + ANCHOR sum g^2, with w lowered for seams whose colours differ wildly."""
    size = len(colours)
    seams = seam_pairs(charts)
    step = colours[seams[:, 1]] - colours[seams[:, 0]]  # what g_a - g_b should be
    magnitude = np.abs(step).mean(axis=1)
    weight = 1 / (1 + (magnitude / OUTLIER_LEVELS) ** 2)
    edges = patch_edges(charts)
    system = (_laplacian(seams, weight, size) + _laplacian(edges, np.full(len(edges), SMOOTHNESS), size)
              + ANCHOR * identity(size)).tocsc()
    target = np.zeros((size, 3))
    np.add.at(target, seams[:, 0], weight[:, None] * step)
    np.add.at(target, seams[:, 1], -weight[:, None] * step)
    solve = factorized(system)
    offsets = np.column_stack([solve(target[:, channel]) for channel in range(3)]).astype(np.float32)
    after = step - (offsets[seams[:, 0]] - offsets[seams[:, 1]])
    figures = SeamFigures(len(seams), rounded_median(magnitude), rounded_median(np.abs(after).mean(axis=1)))
    return offsets, figures


def rounded_median(values: np.ndarray) -> float:
    return round(float(np.median(values)), 2) if len(values) else 0.0


def offset_field(points: np.ndarray, triangles: np.ndarray, offsets: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The offsets (n, 3) of a patch's texture points at `points` (n, 2) (texel x, y in its region) spread over
    the region (h, w, 3): interpolated across the triangles (m, 3) on a grid of FIELD_CELL texels, continued
    outside them by the nearest value, then smoothly enlarged to texels."""
    height, width = shape
    rows, cols = -(-height // FIELD_CELL), -(-width // FIELD_CELL)
    corners = ((points + 0.5) / FIELD_CELL - 0.5)[triangles].astype(np.float32)
    samples = triangle_samples(corners, np.concatenate([corners, offsets[triangles]], axis=2), 0.7)[1]
    col = np.clip(np.rint(samples[:, 0]), 0, cols - 1).astype(np.int64)
    row = np.clip(np.rint(samples[:, 1]), 0, rows - 1).astype(np.int64)
    cell = row * cols + col
    count = np.bincount(cell, minlength=rows * cols)
    grid = np.stack([np.bincount(cell, samples[:, 2 + c], rows * cols) for c in range(3)], axis=-1)
    grid = (grid / np.maximum(count, 1)[:, None]).reshape(rows, cols, 3).astype(np.float32)
    empty = (count == 0).reshape(rows, cols)
    if empty.any():
        nearest = ndimage.distance_transform_edt(empty, return_distances=False, return_indices=True)
        grid = grid[nearest[0], nearest[1]]
    field = cv2.resize(grid, (cols * FIELD_CELL, rows * FIELD_CELL), interpolation=cv2.INTER_LINEAR)
    return field[:height, :width]
