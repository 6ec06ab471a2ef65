"""Which stretch of ground each photograph shows, so that a tile of the orthophoto only asks the views that can
colour it.

The frame itself is cast onto the ground, not the box of the tie points a view observes: a photograph that is
mostly water (or any surface without texture) has its tie points in one corner, and a box around them misses the
rest of the frame, so the views that see a water tile best were never asked and the tile had holes.
"""

from __future__ import annotations

import numpy as np

from ..dense.views import SparseModel, View
from ..quality import NADIR_COS

FRAME_SAMPLES = 9  # points along each side of the frame cast onto the ground (distortion bends the sides)
GROUND_PERCENTILE = 5  # the plane the frame is cast on: this percentile of the heights of the view's tie points
# (low ground makes a footprint larger: the box errs on the side of asking a view too many)
PAD = 0.1  # the box grows by this fraction of its size (relief below the plane)
REACH_HEIGHTS = 10.0  # rays that meet the plane farther than this many heights above it (near the horizon),
# or never, are cut there


def frame_rays(view: View) -> np.ndarray:
    """Unit rays (N, 3), world frame, through points along the border of the view's frame, in order around it."""
    width, height = view.camera.width, view.camera.height
    t = np.linspace(0.0, 1.0, FRAME_SAMPLES)[:-1]
    border = np.concatenate([np.c_[t * width, np.zeros_like(t)], np.c_[np.full_like(t, width), t * height],
                             np.c_[(1 - t) * width, np.full_like(t, height)], np.c_[np.zeros_like(t), (1 - t) * height]])
    normalised = np.asarray(view.camera.cam_from_img(border), dtype=np.float64)
    rays = np.c_[normalised, np.ones(len(normalised))] @ view.rotation  # rotation.T @ ray, for each ray
    return rays / np.linalg.norm(rays, axis=1, keepdims=True)


def frame_outline(view: View, ground: float) -> np.ndarray:
    """The ring (N, 2) of ground the view's frame covers on the plane z = ground."""
    rays = frame_rays(view)
    centre = view.center
    above = max(centre[2] - ground, 1e-3)
    reach = REACH_HEIGHTS * above
    with np.errstate(divide="ignore", invalid="ignore"):
        distance = (ground - centre[2]) / rays[:, 2]
    distance = np.where((distance > 0) & np.isfinite(distance), np.minimum(distance, reach), reach)
    return centre[:2] + rays[:, :2] * distance[:, None]


def frame_footprint(view: View, ground: float) -> tuple[float, float, float, float]:
    """The box (xmin, ymin, xmax, ymax) of the ground the view's frame covers on the plane z = ground, padded."""
    xy = frame_outline(view, ground)
    low, high = xy.min(axis=0), xy.max(axis=0)
    pad = PAD * (high - low)
    return (*(low - pad), *(high + pad))


def ground_heights(model: SparseModel) -> list[float]:
    """Per view, the plane its frame is cast on: its own low tie points (all tie points' when it has none)."""
    overall = float(np.percentile(model.points[:, 2], GROUND_PERCENTILE)) if len(model.points) else 0.0
    return [float(np.percentile(model.xyz(view.point_ids)[:, 2], GROUND_PERCENTILE)) if len(view.point_ids)
            else overall for view in model.views]


def footprints(model: SparseModel) -> list[tuple[float, float, float, float]]:
    """Per view, the box of ground its frame covers."""
    return [frame_footprint(view, ground) for view, ground in zip(model.views, ground_heights(model))]


def ground_outlines(model: SparseModel) -> list[np.ndarray]:
    """The rings of ground the frames of the views that look down within 30 degrees of the vertical cover:
    together, the ground the placed photographs show (an oblique frame reaches towards the horizon, over ground
    no orthophoto is made of)."""
    return [frame_outline(view, ground) for view, ground in zip(model.views, ground_heights(model))
            if -view.axis[2] >= NADIR_COS]
