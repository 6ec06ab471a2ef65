"""Tying a reconstruction to the Earth: the choice of world frame, then the alignment that its source allows.

Ground control points decide the frame when given (unless use-exif), then the photographs' GPS; without either,
the model is levelled in a local frame. When control points cannot be used (fewer than three located in the
model), GPS takes over, and failing that the local frame; the log says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pycolmap

from ..geo import WGS84, crs_name, is_metric_projected, transform, utm_crs
from ..io.gcp import ControlPoint, GcpFile
from ..log import log
from ..photo import Photo, gps_centre
from . import control
from .alignment import (AlignmentMode, SimilarityFit, adjust_with_priors, apply, gravity_direction,
                        is_collinear, levelling_transform, robust_similarity, views_vertical)
from .cameras import Refinement
from .consistency import layout_uncertainty
from .database import PositionPrior

GCP_MAX_ERROR = 2.0  # m; a control point further than this from the model is taken as mis-marked
# Gimbal-stabilised views average to within a degree of vertical (0.6 on Brighton Beach); a model that GPS heights
# tilt further than this from them is tilted by the heights.
MAX_TILT_DEG = 3.0
MIN_GPS_STDDEV = 0.05  # m; no GPS is trusted beyond this
FLIGHT_GAP_S = 120.0  # a pause this long between photographs is a landing
PRECISE_HEIGHT_STDDEV = 0.5  # m; a GPS height stated this accurate (RTK) beats the barometer (barometric_heights)


@dataclass(frozen=True)
class WorldFrame:
    """The projected CRS and offset of the world frame, and what is meant to tie the model to it."""

    crs: str | None
    offset: tuple[float, float]
    source: str  # "gcp", "gps" or "none"
    control_points: list[tuple[ControlPoint, np.ndarray]]  # with their surveyed positions in the world frame


def world_frame(photos: list[Photo], gcps: GcpFile | None) -> WorldFrame:
    """The frame of the control points when given, else of the photographs' GPS, else a local one."""
    if gcps is not None and gcps.points:
        crs = gcps.crs if is_metric_projected(gcps.crs) else utm_crs(*_lonlat_centre(gcps))
        surveyed = transform(gcps.crs, crs, np.array([p.xyz for p in gcps.points]))
        offset = _offset(surveyed)
        log.info("Georeferencing with %d ground control points in %s", len(gcps.points), crs_name(crs))
        points = [(p, xyz - [offset[0], offset[1], 0.0]) for p, xyz in zip(gcps.points, surveyed)]
        return WorldFrame(crs_name(crs), offset, "gcp", points)
    centre = gps_centre(photos)
    if centre is None:
        return WorldFrame(None, (0.0, 0.0), "none", [])
    crs = crs_name(utm_crs(*centre))
    located = np.array([[p.longitude, p.latitude, p.altitude] for p in photos if p.has_gps])
    return WorldFrame(crs, _offset(transform(WGS84, crs, located)), "gps", [])


def _lonlat_centre(gcps: GcpFile) -> tuple[float, float]:
    lonlat = transform(gcps.crs, WGS84, np.array([p.xyz for p in gcps.points]))
    return float(np.median(lonlat[:, 0])), float(np.median(lonlat[:, 1]))


def _offset(projected: np.ndarray) -> tuple[float, float]:
    """Whole metres near the middle of the data, as ODM chooses its offset; the median, so that a few
    photographs of another place cannot put it between the two (where single-precision coordinates of either
    would lose their centimetres)."""
    return float(math.floor(np.median(projected[:, 0]))), float(math.floor(np.median(projected[:, 1])))


def photo_positions(photos: list[Photo], frame: WorldFrame) -> np.ndarray:
    """(N, 3) camera positions in the world frame from the GPS; NaN where a photograph has none."""
    positions = np.full((len(photos), 3), np.nan)
    if frame.crs is None:
        return positions
    located = [i for i, p in enumerate(photos) if p.has_gps]
    if located:
        lla = np.array([[photos[i].longitude, photos[i].latitude, photos[i].altitude] for i in located])
        positions[located] = transform(WGS84, frame.crs, lla) - [frame.offset[0], frame.offset[1], 0.0]
    unprojectable = [photos[i].filename for i in located if not np.isfinite(positions[i]).all()]
    if unprojectable:  # half a world away from the survey's UTM zone
        log.warning("GPS positions too far from the survey to project, not used: %s", ", ".join(unprojectable))
        positions[~np.isfinite(positions).all(axis=1)] = np.nan
    return positions


def barometric_heights(photos: list[Photo], positions: np.ndarray) -> np.ndarray:
    """The positions with their heights from the barometer where every located photograph gives its height
    above the take-off point: a barometer holds relative heights to decimetres where a GPS errs by metres, and
    relative heights are what levels a model (3 m of GPS noise tilts 40 photographs over 150 m by most of a
    degree). Each flight (photographs less than FLIGHT_GAP_S apart) is put at the median of its GPS altitudes,
    since every take-off has its own zero. A height whose stated accuracy is better than PRECISE_HEIGHT_STDDEV
    (an RTK fix) is kept, and levels its flight: the barometer drifts by decimetres to a metre over a flight,
    and RTK surveys are flown to do without control points."""
    located = [i for i, p in enumerate(photos) if np.isfinite(positions[i]).all()]
    if not located or any(photos[i].relative_altitude is None for i in located):
        return positions
    coarse = {i for i in located if not precise_height(photos[i])}
    if not coarse:
        log.info("Camera heights from the GPS: their stated vertical accuracy (RTK) beats the barometer's")
        return positions
    out = positions.copy()
    for flight in _flights([photos[i] for i in located], located):
        levelling = [i for i in flight if i not in coarse] or flight
        zero = np.median([positions[i][2] - photos[i].relative_altitude for i in levelling])
        for i in coarse.intersection(flight):
            out[i][2] = zero + photos[i].relative_altitude
    spread = float(np.sqrt(np.mean((out[located, 2] - positions[located, 2]) ** 2)))
    log.info("Camera heights of %d of %d photographs from the barometer (relative altitude), levelled on the GPS "
             "altitudes of each flight; the GPS heights differ from them by %.2f m RMS", len(coarse), len(located),
             spread)
    return out


def precise_height(photo: Photo) -> bool:
    """Whether the photograph states a GPS height better than a barometer holds over a flight."""
    return photo.gps_z_stddev is not None and photo.gps_z_stddev < PRECISE_HEIGHT_STDDEV


def flight_names(photos: list[Photo]) -> list[list[str]]:
    """The photographs' names by flight, each flight in capture order."""
    return [[photos[i].filename for i in flight] for flight in _flights(photos, list(range(len(photos))))]


def _flights(photos: list[Photo], indices: list[int]) -> list[list[int]]:
    """Indices grouped by flight: a pause of FLIGHT_GAP_S between capture times starts a new one (a battery
    change, a new take-off). Without capture times all are one flight."""
    timed = sorted((p.utc_time or 0.0, i) for p, i in zip(photos, indices))
    flights: list[list[int]] = [[]]
    for (time, index), previous in zip(timed, [None] + timed[:-1]):
        if previous is not None and time - previous[0] > FLIGHT_GAP_S * 1000.0:
            flights.append([])
        flights[-1].append(index)
    return flights


def position_priors(photos: list[Photo], positions: np.ndarray, gps_accuracy: float,
                    accuracy_given: bool) -> dict[str, PositionPrior]:
    """GPS positions with their accuracy: gps-accuracy when the user sets it, else the metadata's, else the
    option's default (as ODM does)."""
    priors = {}
    for photo, position in zip(photos, positions):
        if not np.isfinite(position).all():
            continue
        horizontal = gps_accuracy if accuracy_given else (photo.gps_xy_stddev or gps_accuracy)
        vertical = gps_accuracy if accuracy_given else (photo.gps_z_stddev or horizontal)
        priors[photo.filename] = PositionPrior(position, horizontal, vertical)
    return priors


def georeference(model: pycolmap.Reconstruction, frame: WorldFrame, priors: dict[str, PositionPrior],
                 photos: list[Photo], pitch_by_name: dict[str, float], refine: Refinement, threads: int,
                 accuracy_given: bool) -> dict[str, Any]:
    """Move the model into the world frame by the frame's source, falling back to GPS and then to a local
    frame when control points cannot be used; returns the georeferencing figures for the report."""
    figures: dict[str, Any] = {}
    source = frame.source
    if source == "gcp":
        figures["gcp_residual_m"] = align_to_control_points(model, frame, pitch_by_name)
        if figures["gcp_residual_m"] is None:
            source = "gps" if priors else "none"
    outliers: list[str] = []
    if source == "gps":
        fit = align_to_gps(model, priors, pitch_by_name)
        if fit is None:
            source = "none"
        else:
            adjust_to_gps(model, priors, fit, refine, threads, accuracy_given)
            if fit.mode != "full":
                # The adjustment opens with a full similarity fit of its own, which lets a line roll and follows
                # doubtful heights: align again the way that was chosen.
                fit = align_to_gps(model, priors, pitch_by_name) or fit
            outliers = [n for n, agrees in zip(_located(model, priors), fit.inliers) if not agrees]
    if source == "none":
        level_local_frame(model, photos, pitch_by_name)
    elif priors:
        figures["gps_residual_m"] = gps_residuals(model, priors, outliers)
    figures["georef_source"] = source
    return figures


def align_to_control_points(model: pycolmap.Reconstruction, frame: WorldFrame, pitch_by_name: dict[str, float]
                            ) -> dict[str, Any] | None:
    """Fit the model to the control points; their residuals for the report, or None when they cannot be used."""
    located = []
    for point, surveyed in frame.control_points:
        xyz = control.triangulate(model, point)
        if xyz is None:
            log.warning("Ground control point %s is marked in fewer than 2 reconstructed images; not used",
                        point.name)
        else:
            located.append((point, surveyed, xyz))
    if len(located) < 3:
        log.warning("Only %d ground control points can be located in the model (3 needed): georeferencing "
                    "with GPS instead", len(located))
        return None
    fit = fit_and_apply(model, np.array([xyz for *_, xyz in located]),
                        np.array([surveyed for _, surveyed, _ in located]), GCP_MAX_ERROR, pitch_by_name,
                        trust_heights=True)
    if fit is None:
        log.warning("The ground control points do not fit the model: georeferencing with GPS instead")
        return None
    rejected = [point.name for (point, *_), agrees in zip(located, fit.inliers) if not agrees]
    for name in rejected:
        log.warning("Ground control point %s disagrees with the others; not used, check its marks", name)
    rows = [r for r in (control.residual(model, p, s) for p, s, _ in located) if r is not None]
    used = [r for r in rows if r.name not in rejected]
    distances = np.array([r.distance_m for r in used])
    log.info("Ground control points: mean residual %.3f m, max %.3f m", distances.mean(), distances.max())
    return {
        "mean": float(distances.mean()), "max": float(distances.max()),
        "rmse_horizontal": float(np.sqrt(np.mean([r.horizontal_m ** 2 for r in used]))),
        "rmse_vertical": float(np.sqrt(np.mean([r.vertical_m ** 2 for r in used]))),
        "rejected": rejected,
        "points": [{"name": r.name, "images": r.images, "horizontal_m": r.horizontal_m,
                    "vertical_m": r.vertical_m, "reprojection_px": r.reprojection_px,
                    "used": r.name not in rejected} for r in rows],
    }


def align_to_gps(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], pitch_by_name: dict[str, float]
                 ) -> SimilarityFit | None:
    """Fit the model to the GPS positions of its registered images (in the order of _located), or None."""
    names = _located(model, priors)
    if len(names) < 3:
        log.warning("Only %d registered images have a GPS position (3 needed): the model stays in a local frame",
                    len(names))
        return None
    source = np.array([model.find_image_with_name(n).projection_center() for n in names])
    target = np.array([priors[n].position for n in names])
    max_error = 3.0 * max(max(priors[n].horizontal_stddev, priors[n].vertical_stddev) for n in names)
    fit = fit_and_apply(model, source, target, max_error, pitch_by_name, trust_heights=False)
    if fit is None:
        log.warning("The GPS positions do not fit the model: it stays in a local frame")
    return fit


def adjust_to_gps(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], fit: SimilarityFit,
                  refine: Refinement, threads: int, accuracy_given: bool) -> None:
    """Bundle adjustment with the GPS positions that agree with the model (heights too, unless the fit found
    them doubtful). It straightens what the images alone leave bent (the bowl of a flat survey, the banana of a
    single line), which they do only if weighted by their real noise: unless the user gave the accuracy, the
    declared one (10 m by default, for the absolute error that the alignment absorbs anyway) is tightened to
    the spread the GPS shows around the model, never below MIN_GPS_STDDEV."""
    names = [n for n, agrees in zip(_located(model, priors), fit.inliers) if agrees]
    deltas = np.array([model.find_image_with_name(n).projection_center() - priors[n].position for n in names])
    horizontal_spread = max(MIN_GPS_STDDEV, float(np.sqrt(np.mean(deltas[:, :2] ** 2))))  # per axis
    vertical_spread = max(MIN_GPS_STDDEV, float(np.sqrt(np.mean(deltas[:, 2] ** 2))))
    used = {}
    for name in names:
        prior = priors[name]
        if not accuracy_given:
            prior = replace(prior, horizontal_stddev=min(prior.horizontal_stddev, horizontal_spread),
                            vertical_stddev=min(prior.vertical_stddev, vertical_spread))
        used[name] = prior if fit.mode != "level" else _held_height(model, name, prior)
    adjust_with_priors(model, used, refine, threads)


def _held_height(model: pycolmap.Reconstruction, name: str, prior: PositionPrior) -> PositionPrior:
    """A prior whose doubtful height is replaced by the camera's height in the levelled model: it pulls the
    model nowhere, yet holds its tilt and height where levelling put them: left free, with nothing else to hold
    them, they took the adjustment of 18 photographs six times as long (13.9 s against 2.2 s)."""
    position = np.array([*prior.position[:2], model.find_image_with_name(name).projection_center()[2]])
    return replace(prior, position=position)


def _located(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior]) -> list[str]:
    """The registered images that have a GPS position."""
    return [n for n in priors if _registered(model, n)]


def fit_and_apply(model: pycolmap.Reconstruction, source: np.ndarray, target: np.ndarray, max_error: float,
                  pitch_by_name: dict[str, float], trust_heights: bool) -> SimilarityFit | None:
    """Robust similarity from model points to world points, applied to the model.

    Points along one line leave the roll about that line free: the model is then levelled first and keeps that
    roll. Otherwise, unless the heights are to be trusted, the model is levelled by its cameras' viewing
    directions and fitted to the horizontal positions only (levelled_by_views says when)."""
    mode: AlignmentMode = "line" if is_collinear(source) else "full"  # the model's points: wild fixes
    if mode == "line":                                                # cannot fake a second dimension
        source = _level(model, source, pitch_by_name)
    fit = robust_similarity(source, target, max_error, mode)
    if fit is None:
        return None
    model.transform(fit.transform)
    if mode == "line" or trust_heights or not levelled_by_views(model, fit, source, target, pitch_by_name):
        return fit
    levelled = robust_similarity(_level(model, apply(fit.transform, source), pitch_by_name), target, max_error,
                                 "level")
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
    heights = [p.relative_altitude for p in photos if p.relative_altitude and _registered(model, p.filename)]
    ground = np.median([p.xyz[2] for p in model.points3D.values()]) if model.num_points3D() else None
    centres = np.array([model.image(i).projection_center() for i in model.reg_image_ids()])
    if heights and ground is not None and np.median(centres[:, 2]) > ground:
        scale = float(np.median(heights) / (np.median(centres[:, 2]) - ground))
        model.transform(pycolmap.Sim3d(scale, pycolmap.Rotation3d(), np.zeros(3)))
        log.info("Not georeferenced: the model is in a local frame, scaled by the drone's height above its "
                 "take-off point")
    else:
        log.info("Not georeferenced: the model is in a local frame of arbitrary scale")


def gps_residuals(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], outliers: list[str]
                  ) -> dict[str, Any]:
    """Distances between the solved camera centres and their GPS positions (fixes judged wrong apart)."""
    deltas = np.array([model.find_image_with_name(n).projection_center() - prior.position
                       for n, prior in priors.items() if n not in outliers and _registered(model, n)])
    distances = np.linalg.norm(deltas, axis=1)
    return {"mean": float(distances.mean()), "max": float(distances.max()),
            "rmse_horizontal": float(np.sqrt(np.mean(np.sum(deltas[:, :2] ** 2, axis=1)))),
            "rmse_vertical": float(np.sqrt(np.mean(deltas[:, 2] ** 2))), "outliers": outliers}


def _registered(model: pycolmap.Reconstruction, name: str) -> bool:
    image = model.find_image_with_name(name)
    return image is not None and image.has_pose
