"""Tying a reconstruction to the Earth: the choice of world frame, then the alignment that its source allows.

Ground control points decide the frame when given (unless use-exif), then the photographs' GPS; without either,
the model is levelled in a local frame. Control points are judged against what the model supports (their marks'
rays meeting, their residuals against the ground sample distance); when they cannot be used, GPS takes over with
a warning and a doubtful verdict, and without GPS the run is refused naming the points and the likely cause.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pycolmap

from .. import quality
from ..geo import WGS84, crs_name, is_metric_projected, transform, utm_crs
from ..io.gcp import ControlPoint, GcpFile
from ..log import log
from ..photo import Photo, gps_centre
from ..quality import Check
from . import control
from .alignment import (MIN_ALIGNMENT_POINTS, AlignmentMode, SimilarityFit, adjust_with_priors, apply,
                        gravity_direction, is_collinear, levelling_transform, robust_similarity, views_vertical)
from .cameras import Refinement
from .consistency import layout_uncertainty
from .database import PositionPrior
from .export import mean_gsd_cm

GCP_MAX_ERROR = 2.0  # m; a control point further than this from the model is taken as mis-marked
# A control point's residual may reach this many ground sample distances: marks within a few pixels, and the
# bending of a model that the control points place but do not adjust.
GCP_TOLERANCE_GSD = 20.0
MIN_GCP_TOLERANCE = 0.05  # m; survey-grade points are no better than this
# Residuals up to this share of the points' extent can be the points' own inaccuracy (coordinates read off a map
# or imagery: copr's fit to 1 to 2 m over 35 to 50 m): doubtful, not wrong. Beyond it a point, or a reading of
# the marks, is wrong: a kite survey's upright marks read in the stored layout left 60 to 71 m.
GROSS_SHARE = 0.1
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
    heights_surveyed: bool = True  # False when every control point has the same height: no vertical datum


def world_frame(photos: list[Photo], gcps: GcpFile | None) -> WorldFrame:
    """The frame of the control points when given, else of the photographs' GPS, else a local one."""
    if gcps is not None and gcps.points:
        crs = gcps.crs if is_metric_projected(gcps.crs) else utm_crs(*_lonlat_centre(gcps))
        surveyed = transform(gcps.crs, crs, np.array([p.xyz for p in gcps.points]))
        offset = _offset(surveyed)
        log.info("Georeferencing with %d ground control points in %s", len(gcps.points), crs_name(crs))
        points = [(p, xyz - [offset[0], offset[1], 0.0]) for p, xyz in zip(gcps.points, surveyed)]
        return WorldFrame(crs_name(crs), offset, "gcp", points, heights_surveyed(gcps))
    centre = gps_centre(photos)
    if centre is None:
        return WorldFrame(None, (0.0, 0.0), "none", [])
    crs = crs_name(utm_crs(*centre))
    located = np.array([[p.longitude, p.latitude, p.altitude] for p in photos if p.has_gps])
    return WorldFrame(crs, _offset(transform(WGS84, crs, located)), "gps", [])


def heights_surveyed(gcps: GcpFile) -> bool:
    """Whether the control points' heights can be surveyed ones: heights all the same (all 0.0 where a file
    gives none) say nothing of the vertical datum, so the model is levelled by them but its heights are
    relative to their plane and their vertical residuals are the ground's relief, not an error."""
    heights = [point.xyz[2] for point in gcps.points]
    if len(heights) < 2 or np.ptp(heights) > 0:
        return True
    log.warning("All %d ground control points have the height %g m: not surveyed heights, so the vertical datum is "
                "unknown; the model is levelled on the points' plane and its heights are relative to it",
                len(heights), heights[0])
    return False


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
    figures: dict[str, Any] = {"gcp_checks": []}
    source = frame.source
    if source == "gcp":
        outcome = align_to_control_points(model, frame, photos, pitch_by_name, gps_fallback=bool(priors))
        figures["gcp_residual_m"], figures["gcp_checks"] = outcome.figures, outcome.checks
        if outcome.figures is None:
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
            if fit.mode == "level":  # the views, not the heights, set the tilt: theirs is its uncertainty
                figures["views_tilt_deg"] = views_vertical(model, pitch_by_name).uncertainty_deg
    if source == "none":
        level_local_frame(model, photos, pitch_by_name)
    elif priors:
        figures["gps_residual_m"] = gps_residuals(model, priors, outliers)
    figures["georef_source"] = source
    return figures


def align_to_control_points(model: pycolmap.Reconstruction, frame: WorldFrame, photos: list[Photo],
                            pitch_by_name: dict[str, float], gps_fallback: bool) -> ControlOutcome:
    """Fit the model to the control points and judge them against what the model supports: their residuals
    for the report and the quality checks, figures None when they cannot be used (the checks say why, fatal
    when no GPS can take over)."""
    given = [point for point, _ in frame.control_points]
    surveyed = {point.name: xyz for point, xyz in frame.control_points}
    points, upright = _read_marks(model, given, photos)
    located, astray = [], []
    for point in points:
        fit = control.mark_fit(model, point)
        if control.placed_marks(model, point) < 2:
            astray.append(f"{point.name} is marked in fewer than 2 placed photographs")
            log.warning("Ground control point %s not used: %s", point.name, astray[-1])
        elif fit is None or not fit.meets:
            astray.append(_astray_text(model, point, fit))
            log.warning("Ground control point %s not used: %s", point.name, astray[-1])
        else:
            located.append(point)
    problem = ControlProblem(len(given), len(control.turned_images(given, _orientations(photos))), upright, astray,
                             frame.heights_surveyed)
    if len(located) < MIN_ALIGNMENT_POINTS:
        return problem.unusable(f"only {len(located)} of {len(given)} ground control points can be located in "
                                f"the model ({MIN_ALIGNMENT_POINTS} needed)", gps_fallback)
    modelled = np.array([control.triangulate(model, point) for point in located])
    fit = fit_and_apply(model, modelled, np.array([surveyed[p.name] for p in located]), GCP_MAX_ERROR,
                        pitch_by_name, trust_heights=True)
    if fit is None:
        return problem.unusable("the ground control points do not fit the model", gps_fallback)
    rows = {p.name: control.residual(model, p, surveyed[p.name]) for p in located}
    tolerance = _control_tolerance(model)
    gross = max(tolerance, GROSS_SHARE * _extent([surveyed[p.name] for p in located]))
    judged = {name: _judged(row, frame.heights_surveyed) for name, row in rows.items()}
    used = [p.name for p, agrees in zip(located, fit.inliers) if agrees]
    rejected = [p.name for p, agrees in zip(located, fit.inliers) if not agrees]
    beyond = [name for name in used if judged[name] > gross]
    problem = replace(problem, line=fit.mode == "line", residuals=judged, tolerance_m=tolerance, gross_m=gross)
    if beyond:
        return problem.unusable(f"the ground control points do not fit the model: "
                                f"{_residual_list(judged, used)} off", gps_fallback)
    for name in rejected:
        log.warning("Ground control point %s disagrees with the others by %.2f m; not used, check its marks and "
                    "coordinates", name, judged[name])
    distances = np.array([rows[name].distance_m for name in used])
    log.info("Ground control points: mean residual %.3f m, max %.3f m (%s; at most %.2f m expected)",
             distances.mean(), distances.max(), "horizontal" if not frame.heights_surveyed else "3D",
             tolerance)
    figures = {
        "mean": float(distances.mean()), "max": float(distances.max()),
        "rmse_horizontal": float(np.sqrt(np.mean([rows[n].horizontal_m ** 2 for n in used]))),
        "rmse_vertical": float(np.sqrt(np.mean([rows[n].vertical_m ** 2 for n in used]))),
        "tolerance_m": tolerance, "gross_m": gross, "heights_surveyed": frame.heights_surveyed,
        "upright_images": sorted(upright), "rejected": rejected,
        "points": [{"name": r.name, "images": r.images, "horizontal_m": r.horizontal_m, "vertical_m": r.vertical_m,
                    "delta_m": list(r.delta), "reprojection_px": r.reprojection_px, "used": r.name in used}
                   for r in rows.values()],
    }
    return ControlOutcome(figures, problem.checks(used, rejected))


@dataclass(frozen=True)
class ControlOutcome:
    figures: dict[str, Any] | None  # the residual figures when the control points georeference the model
    checks: list[Check]


@dataclass(frozen=True)
class ControlProblem:
    """What the control points showed of themselves, for the checks and, when they cannot be used, the cause."""
    given: int
    turned: int  # marked photographs that their EXIF orientation turns
    upright: set[str]  # the photographs whose marks were read upright (EXIF orientation applied)
    astray: list[str]  # the points that cannot be located, each named with why
    heights_surveyed: bool
    line: bool = False
    residuals: dict[str, float] = field(default_factory=dict)  # judged residual of each located point, metres
    tolerance_m: float = GCP_MAX_ERROR  # the residual the model supports
    gross_m: float = GCP_MAX_ERROR  # beyond it a residual is a wrong point or reading, not an inaccurate one

    def unusable(self, found: str, gps_fallback: bool) -> ControlOutcome:
        fallback = "georeferencing with GPS instead" if gps_fallback else "nothing else can georeference the model"
        message = f"{found}: {self.likely_cause()}"
        log.warning("The ground control points cannot be used (%s): %s", fallback, message)
        check = quality.control_points(0, self.given, not gps_fallback,
                                       f"the ground control points were not used: {message}")
        return ControlOutcome(None, [check, *self._heights_check()])

    def likely_cause(self) -> str:
        """The causes the measurements point to, the most telling first."""
        causes = list(self.astray)
        if self.line:
            causes.append("the points lie along a line, which leaves the roll about it free")
        located = len(self.residuals) or self.given - len(self.astray)
        if located <= MIN_ALIGNMENT_POINTS:
            causes.append(f"{located} located points are too few to tell a wrong one ({MIN_ALIGNMENT_POINTS + 1} "
                          f"or more needed)")
        if self.residuals:
            causes.append(f"the surveyed coordinates do not match where the photographs put the points (more than "
                          f"{self.gross_m:.2f} m apart): a point's coordinates mistyped or swapped with "
                          f"another's, or in another coordinate system than the file's first line names")
        if self.turned:
            causes.append(f"pixel coordinates in another orientation than either reading tried: {self.turned} marked "
                          f"photographs are turned by their EXIF orientation, {len(self.upright)} of them read "
                          f"upright, as displayed, the others in their stored layout (whichever made the marks "
                          f"meet)")
        return "; ".join(causes)

    def checks(self, used: list[str], rejected: list[str]) -> list[Check]:
        residuals = _residual_list(self.residuals, used)
        if rejected or self.astray:
            left_out = [f"{name} ({self.residuals[name]:.2f} m off)" for name in rejected] + \
                [f"{text}" for text in self.astray]
            found = f"{len(used)} of {self.given} ground control points georeference the model ({residuals}); " \
                    f"left out: {'; '.join(left_out)}"
        else:
            found = f"{len(used)} of {self.given} ground control points georeference the model ({residuals}, at " \
                    f"most {self.tolerance_m:.2f} m expected)"
        checks = [quality.control_points(len(used), self.given, False, found), *self._heights_check()]
        worst = max((self.residuals[name] for name in used), default=0.0)
        if worst > self.tolerance_m:
            checks.append(quality.control_accuracy(worst, self.tolerance_m))
        if self.line:
            checks.append(quality.control_layout())
        return checks

    def _heights_check(self) -> list[Check]:
        return [] if self.heights_surveyed else [quality.control_heights()]


def _read_marks(model: pycolmap.Reconstruction, points: list[ControlPoint], photos: list[Photo]
                ) -> tuple[list[ControlPoint], set[str]]:
    """The points with their marks in the stored pixel layout, each turned photograph read the way its marks
    meet the others' (sfm/control.py); the reading found is logged."""
    orientations = _orientations(photos)
    upright = control.choose_reading(model, points, orientations)
    turned = control.turned_images(points, orientations)
    sizes = {p.filename: (p.width, p.height) for p in photos}
    if turned:
        log.info("Ground control point pixels: %d of %d turned photographs (EXIF orientation) marked upright, as "
                 "displayed%s; the others in their stored layout", len(upright), len(turned),
                 f" ({', '.join(sorted(upright))})" if upright else "")
    return control.read_marks(points, upright, orientations, sizes), upright


def _orientations(photos: list[Photo]) -> dict[str, int]:
    return {p.filename: p.orientation for p in photos}


def _astray_text(model: pycolmap.Reconstruction, point: ControlPoint, fit: control.MarkFit | None) -> str:
    """How the marks of a point fail to meet, naming the photograph to blame when one is."""
    stray = control.stray_mark(model, point)
    if stray is not None:
        return f"the marks of {point.name} do not meet: the mark on {stray} lies off the point the others show (marked on the " \
               f"wrong photograph or pixel)"
    if fit is None:
        return f"the marks of {point.name} do not meet in front of the cameras: marked at the wrong pixels or on the wrong " \
               f"photographs"
    worst = max(fit.misfits, key=fit.misfits.get)
    image = model.find_image_with_name(worst)
    pixels = fit.misfits[worst] * max(image.camera.width, image.camera.height)
    return f"the marks of {point.name} do not meet ({pixels:.0f} px apart on {worst}): marked at the wrong pixel or on the " \
           f"wrong photograph"


def _control_tolerance(model: pycolmap.Reconstruction) -> float:
    """The residual a control point may show in a model fitted to it: GCP_TOLERANCE_GSD ground sample
    distances (marks within a few pixels, a model that control points do not adjust bent by a few more),
    never less than MIN_GCP_TOLERANCE nor more than GCP_MAX_ERROR."""
    gsd_cm = mean_gsd_cm(model)
    if gsd_cm is None:
        return GCP_MAX_ERROR
    return float(np.clip(GCP_TOLERANCE_GSD * gsd_cm / 100.0, MIN_GCP_TOLERANCE, GCP_MAX_ERROR))


def _extent(points: list[np.ndarray]) -> float:
    """The largest horizontal distance between two of the points."""
    xy = np.array(points)[:, :2]
    return float(np.max(np.linalg.norm(xy[:, None] - xy[None], axis=2))) if len(xy) else 0.0


def _judged(row: control.ControlResidual | None, heights_surveyed: bool) -> float:
    """The residual held against the tolerance: horizontal only when the heights were not surveyed (their
    residuals are the ground's relief, not an error)."""
    if row is None:
        return float("nan")
    return row.distance_m if heights_surveyed else row.horizontal_m


def _residual_list(residuals: dict[str, float], names: list[str]) -> str:
    return ", ".join(f"{name} {residuals[name]:.2f} m" for name in names)


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
