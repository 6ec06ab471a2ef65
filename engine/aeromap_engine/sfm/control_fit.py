"""Ground control points against a model: the reading of their marks, the fit, and the judgement of their
residuals against what the model supports, with the cause named when they cannot be used."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pycolmap

from .. import quality
from ..io.gcp import ControlPoint
from ..log import log
from ..photo import Photo
from ..quality import Check
from . import control
from .alignment import MIN_ALIGNMENT_POINTS
from .export import mean_gsd_cm
from .frame import WorldFrame
from .levelling import fit_and_apply

GCP_MAX_ERROR = 2.0  # m; a control point further than this from the model is taken as mis-marked
# A control point's residual may reach this many ground sample distances: marks within a few pixels, and the
# bending of a model that the control points place but do not adjust.
GCP_TOLERANCE_GSD = 20.0
MIN_GCP_TOLERANCE = 0.05  # m; survey-grade points are no better than this
# Residuals up to this share of the points' extent can be the points' own inaccuracy (coordinates read off a map
# or imagery): doubtful, not wrong. Beyond it a point, or a reading of the marks, is wrong: upright marks read in
# the stored layout leave residuals far beyond it.
GROSS_SHARE = 0.1


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
    targets = np.array([surveyed[p.name] for p in located])
    fit = fit_and_apply(model, _modelled(model, located), targets, GCP_MAX_ERROR, pitch_by_name, trust_heights=True)
    if fit is None:
        return problem.unusable("the ground control points do not fit the model", gps_fallback)
    rows = {p.name: control.residual(model, p, surveyed[p.name]) for p in located}
    tolerance = _control_tolerance(model)
    if any(not agrees and _judged(rows[p.name], frame.heights_surveyed) <= tolerance
           for p, agrees in zip(located, fit.inliers)):
        # The threshold that few residuals give can be tighter than the model supports (its tolerance, known
        # only now that it is in the world's scale): no point within it is left out as disagreeing.
        fit = fit_and_apply(model, _modelled(model, located), targets, GCP_MAX_ERROR, pitch_by_name,
                            trust_heights=True, min_error=tolerance) or fit
        rows = {p.name: control.residual(model, p, surveyed[p.name]) for p in located}
    gross = max(tolerance, GROSS_SHARE * _extent([surveyed[p.name] for p in located]))
    marks = {p.name: p for p in located}
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
                    "delta_m": list(r.delta), "reprojection_px": r.reprojection_px, "used": r.name in used,
                    "surveyed_m": [float(v) for v in surveyed[r.name]],
                    "marked_in": [o.image for o in marks[r.name].observations]}
                   for r in rows.values()],
    }
    return ControlOutcome(figures, problem.checks(used, rejected))


def checkpoint_residuals(model: pycolmap.Reconstruction, frame: WorldFrame, photos: list[Photo]
                         ) -> dict[str, Any] | None:
    """The checkpoints against the georeferenced model (they took no part in placing it): each one's error
    (modelled minus surveyed) and the root mean square errors along each axis; those that cannot be located are
    named with why. None when the frame holds no checkpoints."""
    if not frame.checkpoints:
        return None
    surveyed = {point.name: xyz for point, xyz in frame.checkpoints}
    points, _ = _read_marks(model, [point for point, _ in frame.checkpoints], photos)
    rows: dict[str, control.ControlResidual] = {}
    missed: list[str] = []
    for point in points:
        fit = control.mark_fit(model, point)
        row = control.residual(model, point, surveyed[point.name]) if fit is not None and fit.meets else None
        if control.placed_marks(model, point) < 2:
            missed.append(f"{point.name} is marked in fewer than 2 placed photographs")
        elif row is None:
            missed.append(_astray_text(model, point, fit))
        else:
            rows[point.name] = row
    for text in missed:
        log.warning("Checkpoint not measured: %s", text)
    figures: dict[str, Any] = {"points": [
        {"name": r.name, "images": r.images, "delta_m": list(r.delta), "horizontal_m": r.horizontal_m,
         "vertical_m": r.vertical_m, "reprojection_px": r.reprojection_px,
         "surveyed_m": [float(v) for v in surveyed[r.name]],
         "marked_in": [o.image for o in next(p for p in points if p.name == r.name).observations]}
        for r in rows.values()], "not_measured": missed}
    if rows:
        rmse = np.sqrt(np.mean(np.array([r.delta for r in rows.values()]) ** 2, axis=0))
        figures.update({"rmse_x": float(rmse[0]), "rmse_y": float(rmse[1]), "rmse_z": float(rmse[2]),
                        "rmse_horizontal": float(np.hypot(rmse[0], rmse[1])), "rmse_vertical": float(rmse[2])})
        log.info("Checkpoints: root mean square error %.3f m horizontal, %.3f m vertical, over %d of %d",
                 figures["rmse_horizontal"], figures["rmse_vertical"], len(rows), len(points))
    return figures


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
        return (f"the marks of {point.name} do not meet: the mark on {stray} lies off the point the others show "
                f"(marked on the wrong photograph or pixel)")
    if fit is None:
        return (f"the marks of {point.name} do not meet in front of the cameras: marked at the wrong pixels or on "
                f"the wrong photographs")
    worst = max(fit.misfits, key=fit.misfits.get)
    image = model.find_image_with_name(worst)
    pixels = fit.misfits[worst] * max(image.camera.width, image.camera.height)
    return (f"the marks of {point.name} do not meet ({pixels:.0f} px apart on {worst}): marked at the wrong pixel "
            f"or on the wrong photograph")


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


def _modelled(model: pycolmap.Reconstruction, points: list[ControlPoint]) -> np.ndarray:
    """Where the model puts the points: their marks' rays triangulated."""
    return np.array([control.triangulate(model, point) for point in points])


def _residual_list(residuals: dict[str, float], names: list[str]) -> str:
    return ", ".join(f"{name} {residuals[name]:.2f} m" for name in names)
