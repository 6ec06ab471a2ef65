"""Making a model's Z point up: a robust similarity to world positions, levelled by the cameras' viewing
directions where the positions' heights cannot be trusted to, and levelling a model that nothing places."""

from __future__ import annotations


import numpy as np
import pycolmap

from ..log import log
from ..photo import Photo
from .alignment import (MIN_INLIER_ERROR, AlignmentMode, SimilarityFit, apply, gravity_direction, is_collinear,
                        levelling_transform, registered, robust_similarity, views_vertical)
from .consistency import layout_uncertainty

# Gimbal-stabilised views average to within a degree of vertical; a model that GPS heights
# tilt further than this from them is tilted by the heights.
MAX_TILT_DEG = 3.0


def fit_and_apply(model: pycolmap.Reconstruction, source: np.ndarray, target: np.ndarray, max_error: float,
                  pitch_by_name: dict[str, float], trust_heights: bool, min_error: float = MIN_INLIER_ERROR
                  ) -> SimilarityFit | None:
    """Robust similarity from model points to world points (robust_similarity), applied to the model.

    Points along one line leave the roll about that line free: the model is then levelled first and keeps that
    roll. Otherwise, unless the heights are to be trusted, the model is levelled by its cameras' viewing
    directions and fitted to the horizontal positions only (levelled_by_views says when)."""
    mode: AlignmentMode = "line" if is_collinear(source) else "full"  # the model's points: wild fixes
    if mode == "line":                                                # cannot fake a second dimension
        source = _level(model, source, pitch_by_name)
    fit = robust_similarity(source, target, max_error, mode, min_error)
    if fit is None:
        return None
    model.transform(fit.transform)
    if mode == "line" or trust_heights or not levelled_by_views(model, fit, source, target, pitch_by_name):
        return fit
    levelled = robust_similarity(_level(model, apply(fit.transform, source), pitch_by_name), target, max_error,
                                 "level", min_error)
    if levelled is not None:
        model.transform(levelled.transform)
    return levelled


def levelled_by_views(model: pycolmap.Reconstruction, fit: SimilarityFit, source: np.ndarray, target: np.ndarray,
                      pitch_by_name: dict[str, float]) -> bool:
    """Whether the cameras' viewing directions level the model (fitted to the positions by `fit`) better than
    the heights of the positions do.

    Heights that tilt the model more than MAX_TILT_DEG from what the gimbal angles say (a drifting barometer, a
    GPS that loses its vertical fix) are not trusted. Nor are heights whose noise over the positions' layout
    leaves the tilt less certain than the views do (a GPS's metres of vertical noise over a small survey): a
    gimbal-stabilised block's views average to vertical, those that state no pitch as well when they look
    straight down (views_vertical), provided the heights do not plainly contradict that."""
    vertical = views_vertical(model, pitch_by_name)
    registered = model.num_reg_images()
    if 2 * vertical.views < registered:  # mostly obliques that state no pitch: their average is no vertical
        return False
    tilt = float(np.degrees(np.arccos(np.clip(-vertical.down[2], -1.0, 1.0))))
    gimbal = _gimbal_known(model, pitch_by_name)
    if gimbal and tilt > MAX_TILT_DEG:
        log.warning("The GPS heights tilt the model %.1f degrees away from the gimbal angles: levelling by the "
                    "gimbal angles and fitting the horizontal positions only", tilt)
        return True
    residuals = apply(fit.transform, source[fit.inliers]) - target[fit.inliers]
    heights = layout_uncertainty(target[fit.inliers, :2], float(np.sqrt(np.mean(residuals[:, :2] ** 2) * 2)),
                                 float(np.sqrt(np.mean(residuals[:, 2] ** 2)))).tilt_deg
    if heights <= vertical.uncertainty_deg:
        return False
    if not gimbal and tilt > max(MAX_TILT_DEG, 3.0 * np.hypot(heights, vertical.uncertainty_deg)):
        return False  # a camera fixed at a pitch it does not state, flown one way: the views are not nadir
    log.info("The GPS heights leave the model's tilt uncertain by %.2f degrees, the %s by %.2f: levelling by "
             "them (%.2f degrees from the heights' tilt) and fitting the horizontal positions only", heights,
             "gimbal angles" if gimbal else "viewing directions of the nadir photographs",
             vertical.uncertainty_deg, tilt)
    return True


def _level(model: pycolmap.Reconstruction, points: np.ndarray, pitch_by_name: dict[str, float]) -> np.ndarray:
    """Level the model by its cameras' viewing directions; returns `points` moved with it."""
    level = levelling_transform(gravity_direction(model, pitch_by_name))
    model.transform(level)
    return apply(level, points)


def _gimbal_known(model: pycolmap.Reconstruction, pitch_by_name: dict[str, float]) -> bool:
    registered = [model.image(i).name for i in model.reg_image_ids()]
    return 2 * sum(name in pitch_by_name for name in registered) >= len(registered)


def level_local_frame(model: pycolmap.Reconstruction, photos: list[Photo], pitch_by_name: dict[str, float]
                      ) -> None:
    """No position ties the model to the Earth: make Z point up (from the cameras' viewing directions) and, when
    the photographs give their height above the take-off point, scale the model to it."""
    model.transform(levelling_transform(gravity_direction(model, pitch_by_name)))
    heights = [p.relative_altitude for p in photos if p.relative_altitude and registered(model, p.filename)]
    ground = np.median([p.xyz[2] for p in model.points3D.values()]) if model.num_points3D() else None
    centres = np.array([model.image(i).projection_center() for i in model.reg_image_ids()])
    if heights and ground is not None and np.median(centres[:, 2]) > ground:
        scale = float(np.median(heights) / (np.median(centres[:, 2]) - ground))
        model.transform(pycolmap.Sim3d(scale, pycolmap.Rotation3d(), np.zeros(3)))
        log.info("Not georeferenced: the model is in a local frame, scaled by the drone's height above its "
                 "take-off point")
    else:
        log.info("Not georeferenced: the model is in a local frame of arbitrary scale")
