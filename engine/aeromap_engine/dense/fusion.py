"""Fusion of depth maps into one point cloud, keeping only what several views agree on.

Two levels: the depth maps of one reference image with each of its partners merge into one (per pixel, the depth
most pairs agree on); then every reference depth is checked against its overlapping views' depth maps, and kept
when at least three views agree (two at the edges of the survey, where only two see the surface). Each surface
point is kept once, by the view that sees it closest to its image centre (sharpest, least distorted), at the
depth averaged over the views that agree; so overlapping images do not stack copies of the same surface.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..cloud.points import PointCloud
from .camera import Pinhole
from .views import View, transform_points


@dataclass(frozen=True)
class FusionSettings:
    tolerance_px: float = 1.0  # depth agreement, in px of disparity of the pairs that measured it
    min_views: int = 3  # views whose depth maps must agree on a point (reference included), where as many see it
    min_region: float = 2e-4  # islands of confirmed depths smaller than this fraction of the image are dropped


@dataclass
class DepthMap:
    """A reference view's fused depth (NaN where unknown) and the focal length x baseline (px m) of its weakest
    pair, which scales its depth uncertainty: sigma_z = sigma_d z^2 / (f B)."""

    depth: np.ndarray
    focal_baseline: float

    def tolerance(self, z: np.ndarray, settings: FusionSettings) -> np.ndarray:
        return settings.tolerance_px * z * z / self.focal_baseline


def fuse_pairs(depths: list[np.ndarray], focal_baselines: list[float], settings: FusionSettings) -> DepthMap:
    """One depth map from the pair depth maps of a reference image: per pixel, the depth most pairs agree on."""
    stack = np.stack(depths)  # (k, H, W)
    fb = np.asarray(focal_baselines, dtype=np.float32)[:, None, None]
    with np.errstate(invalid="ignore"):
        tol = settings.tolerance_px * stack * stack / fb
        agree = np.abs(stack[:, None] - stack[None, :]) <= np.maximum(tol[:, None], tol[None, :])  # (k, k, H, W)
    support = agree.sum(axis=1)  # per candidate depth
    best = np.argmax(support, axis=0)
    chosen = np.take_along_axis(agree, best[None, None], axis=0)[0]  # (k, H, W): pairs agreeing with the best
    count = chosen.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        fused = np.where(chosen, stack, 0.0).sum(axis=0) / count  # NaN where no pair measured a depth
    return DepthMap(fused.astype(np.float32), float(fb.min()))


def _in_large_regions(mask: np.ndarray, min_pixels: float) -> np.ndarray:
    """Pixels of the mask in 8-connected regions of at least `min_pixels`: confirmed depths scattered in small
    islands (among leaves, on water) are mostly chance agreements."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return (stats[labels, cv2.CC_STAT_AREA] >= min_pixels) & (mask > 0)


def _centre_distance(uv: np.ndarray, pinhole: Pinhole) -> np.ndarray:
    """Distance from the principal point, as a fraction of the half diagonal (0 centre, 1 corner)."""
    half_diagonal = 0.5 * np.hypot(pinhole.width, pinhole.height)
    return (np.hypot(uv[:, 0] - pinhole.K[0, 2], uv[:, 1] - pinhole.K[1, 2]) / half_diagonal).astype(np.float32)


def fuse_views(view: View, pinhole: Pinhole, depth: DepthMap, colors: np.ndarray,
               neighbours: list[tuple[View, Pinhole, DepthMap]], settings: FusionSettings) -> PointCloud:
    """The points of one reference depth map that enough overlapping views confirm and that this view owns."""
    rows, cols = np.nonzero(np.isfinite(depth.depth))
    z = depth.depth[rows, cols]
    rays = np.c_[(cols - pinhole.K[0, 2]) / pinhole.K[0, 0], (rows - pinhole.K[1, 2]) / pinhole.K[1, 1],
                 np.ones(len(z))].astype(np.float32)
    center = view.center
    world = view.to_world(rays * z[:, None])
    count = np.ones(len(z), dtype=np.int32)  # views that agree
    seen = np.ones(len(z), dtype=np.int32)  # views whose frame holds the point
    scale_sum = np.ones(len(z), dtype=np.float32)
    owner = np.ones(len(z), dtype=bool)
    my_score = _centre_distance(np.c_[cols, rows], pinhole)
    for other, other_pinhole, other_depth in neighbours:
        uvw = transform_points(other_pinhole.K @ np.c_[other.rotation, other.translation], world)
        with np.errstate(divide="ignore", invalid="ignore"):
            u, v = np.rint(uvw[:, 0] / uvw[:, 2]), np.rint(uvw[:, 1] / uvw[:, 2])
        inside = np.flatnonzero((uvw[:, 2] > 0) & (u >= 0) & (v >= 0) & (u < other_pinhole.width)
                                & (v < other_pinhole.height))
        seen[inside] += 1
        z_other = uvw[inside, 2]
        measured = other_depth.depth[v[inside].astype(np.int64), u[inside].astype(np.int64)]
        with np.errstate(invalid="ignore"):
            agree_sub = np.abs(measured - z_other) <= other_depth.tolerance(z_other, settings)
        agree = inside[agree_sub]
        # Move the point along the reference ray until its depth in the other view is the measured one.
        base = other.to_camera(center[None])[0, 2]
        scale_sum[agree] += (measured[agree_sub] - base) / (z_other[agree_sub] - base)
        count[agree] += 1
        closer = _centre_distance(np.c_[u[agree], v[agree]], other_pinhole) < my_score[agree]
        owner[agree[closer]] = False
    # Where fewer views can see the surface (edges of the survey), fewer confirmations are asked for.
    needed = np.maximum(2, np.minimum(settings.min_views, seen))
    confirmed = np.zeros(depth.depth.shape, np.uint8)
    confirmed[rows, cols] = count >= needed
    keep = owner & _in_large_regions(confirmed, settings.min_region * confirmed.size)[rows, cols]
    scale = scale_sum[keep] / count[keep]
    fused = center + (world[keep] - center) * scale[:, None]
    return PointCloud(fused.astype(np.float32), colors[rows[keep], cols[keep]],
                      np.minimum(count[keep], 255).astype(np.uint8))
