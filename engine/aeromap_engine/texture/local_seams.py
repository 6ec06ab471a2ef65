"""Local seam levelling (Waechter et al. 2014, section 5.2, texrecon's local seam leveling): global levelling
gives one offset per texture point, so between two vertices a seam still shows what differs along it (a
shadow's edge seen a moment apart, vignetting, a slope lit differently from two sides). Along every seam edge,
at each texel, the two sides' colours (after the global offsets) are compared; each side takes half of the
difference at the seam, faded to nothing over a strip of STRIP texels into its patch. texrecon solves a Poisson
problem in that strip; a linear fade of the difference, smoothed along the seam, is what that solution is where
the difference varies slowly along the seam compared with the strip's width, and costs a blur per patch.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from .patches import Charts
from .seams import rounded_median

STRIP = 20  # texels into each patch over which a seam's correction fades (texrecon's)
SMOOTHING = 2.5  # texels: the blur along the seam (and across the strip's nearest-seam-texel borders)
SAMPLE_SPACING = 1.0  # texels between the samples along a seam edge
# A difference larger than this (grey levels, mean of the channels) is no exposure difference: the two views see
# different things there (a moving car, a tree whose top the mesh misses), and blending would smear it.
OUTLIER_LEVELS = 40.0


def seam_edges(charts: Charts) -> np.ndarray:
    """(E, 2, 2) texture points of the edges where two patches meet: [side][end], the ends the same two
    vertices in the same order on both sides."""
    corner_pairs = np.array([[0, 1], [1, 2], [2, 0]])
    vertices = charts.faces[:, corner_pairs]  # (F, 3, 2)
    points = charts.face_points[:, corner_pairs]
    flip = vertices[:, :, 0] > vertices[:, :, 1]
    vertices = np.where(flip[..., None], vertices[..., ::-1], vertices).reshape(-1, 2).astype(np.int64)
    points = np.where(flip[..., None], points[..., ::-1], points).reshape(-1, 2)
    patch = np.repeat(charts.face_patch, 3)
    key = vertices[:, 0] * (int(vertices.max(initial=0)) + 1) + vertices[:, 1]
    order = np.argsort(key, kind="stable")
    shared = key[order[1:]] == key[order[:-1]]
    first, second = order[:-1][shared], order[1:][shared]
    seam = patch[first] != patch[second]
    return np.stack([points[first[seam]], points[second[seam]]], axis=1)


@dataclass
class SeamPoints:
    """Points along the seam edges, SAMPLE_SPACING texels apart on the side where the edge is longer: their edge
    (S,), how far along it (S,) from its first end, their patches (S, 2) and pixel positions in each side's view
    (S, 2, 2)."""

    edge: np.ndarray
    along: np.ndarray
    patch: np.ndarray
    pixel: np.ndarray

    def on_edges(self, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """Per-texture-point `values` (C, A) interpolated to the points, each side's (S, 2, A)."""
        t = self.along[:, None, None]
        ends = edges[self.edge]
        return values[ends[:, :, 0]] * (1 - t) + values[ends[:, :, 1]] * t


def seam_points(charts: Charts, edges: np.ndarray, texels_per_pixel: np.ndarray) -> SeamPoints:
    """The points along `edges` (seam_edges); `texels_per_pixel` (P, 2) per patch and axis."""
    ends = charts.point_pixel[edges]  # (E, side, end, 2)
    scale = texels_per_pixel[charts.point_patch[edges[:, :, 0]]]  # (E, side, 2)
    length = np.linalg.norm((ends[:, :, 1] - ends[:, :, 0]) * scale, axis=2).max(axis=1)
    count = np.maximum(2, np.ceil(length / SAMPLE_SPACING).astype(np.int64) + 1)
    edge = np.repeat(np.arange(len(edges)), count)
    along = (np.arange(len(edge)) - (np.cumsum(count) - count)[edge]) / (count[edge] - 1)
    points = SeamPoints(edge, along, charts.point_patch[edges[edge, :, 0]], np.zeros((len(edge), 2, 2)))
    points.pixel = points.on_edges(charts.point_pixel, edges)
    return points


def corrections(colours: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each side's share (S, 2, 3) of the difference between the sides' colours (S, 2, 3) plus their global
    offsets at the samples (S, 2, 3): half each, towards the other; none where the difference is an outlier."""
    levelled = colours + offsets
    half = (levelled[:, 1] - levelled[:, 0]) / 2
    half[np.abs(half).mean(axis=1) * 2 > OUTLIER_LEVELS] = 0
    return np.stack([half, -half], axis=1).astype(np.float32)


@dataclass
class LocalSeams:
    """The seam points of local levelling and each side's correction (S, 2, 3); `applied` (S, 2, 3) is filled in
    with what the atlases got there."""

    points: SeamPoints
    correction: np.ndarray
    applied: np.ndarray

    def figures(self) -> dict:
        before = self.correction[:, 0] * 2  # side 1's levelled colour minus side 0's
        after = before + self.applied[:, 1] - self.applied[:, 0]
        kept = np.abs(before).mean(axis=1) > 0  # outliers are left as they are
        return {"seam_texels": int(kept.sum()),
                "seam_step_local_before": rounded_median(np.abs(before[kept]).mean(axis=1)),
                "seam_step_local_after": rounded_median(np.abs(after[kept]).mean(axis=1))}


def local_field(points: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The correction over a patch's region (h, w, 3) from its seam samples at texel positions `points` (n, 2)
    with `values` (n, 3): their mean near each seam texel, smoothed along the seam, faded linearly to zero STRIP
    texels away from it; and the correction at each sample's texel (n, 3)."""
    height, width = shape
    field = np.zeros((height, width, 3), np.float32)
    if not len(points):
        return field, np.zeros((0, 3), np.float32)
    column, row = np.clip(np.rint(points).astype(np.int64), 0, [width - 1, height - 1]).T
    # Only the box the strip can reach is worked on.
    left, top = max(0, column.min() - STRIP), max(0, row.min() - STRIP)
    right, bottom = min(width, column.max() + STRIP + 1), min(height, row.max() + STRIP + 1)
    box = (bottom - top, right - left)
    cell = (row - top) * box[1] + (column - left)
    count = np.bincount(cell, minlength=box[0] * box[1]).astype(np.float32)
    total = np.stack([np.bincount(cell, values[:, c], box[0] * box[1]) for c in range(3)], axis=-1)
    # Smoothed along the seam by a blur a few texels wide, divided by the blurred count: a weighted mean. Each
    # texel of the strip takes the nearest seam texel's, blurred as much again across the nearest ones' borders.
    total = cv2.GaussianBlur(total.reshape(*box, 3).astype(np.float32), (0, 0), SMOOTHING)
    count = cv2.GaussianBlur(count.reshape(box), (0, 0), SMOOTHING)
    away = np.ones(box[0] * box[1], np.uint8)
    away[cell] = 0
    distance, nearest = cv2.distanceTransformWithLabels(away.reshape(box), cv2.DIST_L2, cv2.DIST_MASK_5,
                                                        labelType=cv2.DIST_LABEL_PIXEL)
    seam = np.flatnonzero(away == 0)  # in the order the labels count them, from 1
    at_seam = total.reshape(-1, 3)[seam] / count.reshape(-1)[seam, None]
    value = cv2.GaussianBlur(at_seam[nearest - 1], (0, 0), SMOOTHING)
    field[top:bottom, left:right] = value * np.clip(1 - distance / STRIP, 0, 1)[..., None]
    return field, field[row, column]
