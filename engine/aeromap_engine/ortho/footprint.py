"""Which stretch of ground each photograph shows, so that a tile of the orthophoto only asks the views that can
colour it.

The frame itself is cast onto the ground, not the box of the tie points a view observes: a photograph that is
mostly water (or any surface without texture) has its tie points in one corner, and a box around them misses the
rest of the frame, so the views that see a water tile best were never asked and the tile had holes.

A lens model fitted on few tie points may have no inverse at the frame's edge (a strong tangential term folds
the edge back inward): the distortion-free ray stands in there, since a frame cast on the ground with no figure
at all (NaN) would reach no tile, and the orthophoto would be empty.
"""

from __future__ import annotations

import numpy as np

from ..dense.views import SparseModel, View
from ..log import log
from ..quality import NADIR_COS
from ..sfm.cameras import frame_border

FRAME_SAMPLES = 9  # points along each side of the frame cast onto the ground (distortion bends the sides)
GROUND_PERCENTILE = 5  # the plane the frame is cast on: this percentile of the heights of the view's tie points
# (low ground makes a footprint larger: the box errs on the side of asking a view too many)
PAD = 0.1  # the box grows by this fraction of its size (relief below the plane)
REACH_HEIGHTS = 10.0  # rays that meet the plane farther than this many heights above it (near the horizon),
# or never, are cut there


def frame_rays(view: View) -> np.ndarray:
    """Unit rays (N, 3), world frame, through points along the border of the view's frame, in order around it."""
    border = frame_border(view.camera.width, view.camera.height, FRAME_SAMPLES)
    normalised = np.asarray(view.camera.cam_from_img(border), dtype=np.float64)
    lost = ~np.isfinite(normalised).all(axis=1)
    if lost.any():  # pixels the lens model maps nothing to
        K = view.camera.calibration_matrix()
        normalised[lost] = (border[lost] - K[:2, 2]) / np.diag(K)[:2]
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


def padded_box(xy: np.ndarray) -> tuple[float, float, float, float]:
    """The box (xmin, ymin, xmax, ymax) of a ring of ground, padded."""
    low, high = xy.min(axis=0), xy.max(axis=0)
    pad = PAD * (high - low)
    return (*(low - pad), *(high + pad))


def ground_heights(model: SparseModel) -> list[float]:
    """Per view, the plane its frame is cast on: its own low tie points (all tie points' when it has none)."""
    overall = float(np.percentile(model.points[:, 2], GROUND_PERCENTILE)) if len(model.points) else 0.0
    return [float(np.percentile(model.xyz(view.point_ids)[:, 2], GROUND_PERCENTILE)) if len(view.point_ids)
            else overall for view in model.views]


def cast_frames(model: SparseModel) -> list[np.ndarray | None]:
    """Per view, the ring of ground its frame covers; None, with a warning naming the photograph, where the ring
    has no finite figure (a pose or a ground height that is not a number)."""
    rings: list[np.ndarray | None] = []
    for view, ground in zip(model.views, ground_heights(model)):
        ring = frame_outline(view, ground)
        if not np.isfinite(ring).all():
            log.warning("%s: its frame cast on the ground (at %.2f m) has no finite outline; it is left out of the "
                        "ground the photographs show", view.name, ground)
            ring = None
        rings.append(ring)
    return rings


def footprints(rings: list[np.ndarray | None]) -> list[tuple[float, float, float, float]]:
    """Per view, the box of ground its frame (of cast_frames) covers; everywhere for a view without one: asking
    it costs time, leaving it out would lose what it alone shows."""
    return [padded_box(ring) if ring is not None else (-np.inf, -np.inf, np.inf, np.inf) for ring in rings]


def ground_outlines(model: SparseModel, rings: list[np.ndarray | None] | None = None) -> list[np.ndarray]:
    """The rings of ground the frames (cast_frames', cast here when not given) of the views that look down
    within 30 degrees of the vertical cover: together, the ground the placed photographs show (an oblique frame
    reaches towards the horizon, over ground no orthophoto is made of)."""
    cast = cast_frames(model) if rings is None else rings
    return [ring for view, ring in zip(model.views, cast) if ring is not None and -view.axis[2] >= NADIR_COS]
