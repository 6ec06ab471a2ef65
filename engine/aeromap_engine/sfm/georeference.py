"""Tying a reconstruction to the Earth by what the world frame (frame.py) holds: the ground control points
(control_fit.py), else the photographs' GPS (a robust fit, then an adjustment with the agreeing fixes as priors),
and failing both a local frame levelled by the cameras' viewing directions (levelling.py); the log says which.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pycolmap

from ..log import log
from ..photo import Photo
from .alignment import SimilarityFit, adjust_with_priors, registered, views_vertical
from .cameras import Refinement
from .consistency import horizontal_distances, settling_runs
from .database import PositionPrior
from .frame import PRECISE_HEIGHT_STDDEV, WorldFrame, flight_names
from .levelling import fit_and_apply, level_local_frame
from .control_fit import align_to_control_points

MIN_GPS_STDDEV = 0.05  # m; no GPS is trusted beyond this
MAX_SETTLING_ROUNDS = 5  # each may leave out the next fix of a settling receiver


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
        fit, settling = align_without_settling(model, priors, pitch_by_name, flight_names(photos))
        if fit is None:
            source = "none"
        else:
            adjust_to_gps(model, priors, fit, refine, threads, accuracy_given)
            if fit.mode != "full":
                # The adjustment opens with a full similarity fit of its own, which lets a line roll and follows
                # doubtful heights: align again the way that was chosen.
                fit = align_to_gps(model, priors, pitch_by_name, settling) or fit
            outliers = [n for n, agrees in zip(_located(model, priors), fit.inliers) if not agrees]
            if fit.mode == "level":  # the views, not the heights, set the tilt: theirs is its uncertainty
                figures["views_tilt_deg"] = views_vertical(model, pitch_by_name).uncertainty_deg
    if source == "none":
        level_local_frame(model, photos, pitch_by_name)
    elif priors:
        figures["gps_residual_m"] = gps_residuals(model, priors, outliers)
    figures["georef_source"] = source
    return figures


def align_to_gps(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], pitch_by_name: dict[str, float],
                 left_out: set[str] = frozenset()) -> SimilarityFit | None:
    """Fit the model to the GPS positions of its registered images but those `left_out`, or None; the fit's
    inliers are in the order of _located, the left out among them as disagreeing. Heights all stated better
    than PRECISE_HEIGHT_STDDEV (RTK fixes, or the user's gps-accuracy) level the model: over a survey's width,
    centimetres of height hold its tilt to hundredths of a degree, where the gimbal angles hold it to a degree and
    a weak model's views may lean several."""
    located = _located(model, priors)
    names = [n for n in located if n not in left_out]
    if len(names) < 3:
        log.warning("Only %d registered images have a GPS position (3 needed): the model stays in a local frame",
                    len(names))
        return None
    source = np.array([model.find_image_with_name(n).projection_center() for n in names])
    target = np.array([priors[n].position for n in names])
    max_error = 3.0 * max(max(priors[n].horizontal_stddev, priors[n].vertical_stddev) for n in names)
    precise = all(priors[n].vertical_stddev < PRECISE_HEIGHT_STDDEV for n in names)
    fit = fit_and_apply(model, source, target, max_error, pitch_by_name, trust_heights=precise)
    if fit is None:
        log.warning("The GPS positions do not fit the model: it stays in a local frame")
        return None
    agrees = dict(zip(names, fit.inliers))
    return replace(fit, inliers=np.array([agrees.get(n, False) for n in located]))


def align_without_settling(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior],
                           pitch_by_name: dict[str, float], flights: list[list[str]]
                           ) -> tuple[SimilarityFit | None, set[str]]:
    """align_to_gps, then again without a settling receiver's fixes (consistency.settling_runs) until no more
    of them show: the fit's tolerance lets it turn towards the drift that follows the fixes it left out. Returns
    the fit and the fixes left out."""
    left_out: set[str] = set()
    fit = align_to_gps(model, priors, pitch_by_name)
    for _ in range(MAX_SETTLING_ROUNDS):
        if fit is None:
            break
        located = _located(model, priors)
        wild = {n for n, agrees in zip(located, fit.inliers) if not agrees}
        runs = settling_runs(flights, horizontal_distances(model, priors, located), wild)
        if runs <= left_out:
            break
        left_out |= runs
        fit = align_to_gps(model, priors, pitch_by_name, left_out)
    return fit, left_out


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
    them, they make the adjustment wander and take many times as long."""
    position = np.array([*prior.position[:2], model.find_image_with_name(name).projection_center()[2]])
    return replace(prior, position=position)


def _located(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior]) -> list[str]:
    """The registered images that have a GPS position."""
    return [n for n in priors if registered(model, n)]


def gps_residuals(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], outliers: list[str]
                  ) -> dict[str, Any]:
    """Distances between the solved camera centres and their GPS positions (fixes judged wrong apart)."""
    deltas = np.array([model.find_image_with_name(n).projection_center() - prior.position
                       for n, prior in priors.items() if n not in outliers and registered(model, n)])
    distances = np.linalg.norm(deltas, axis=1)
    return {"mean": float(distances.mean()), "max": float(distances.max()),
            "rmse_horizontal": float(np.sqrt(np.mean(np.sum(deltas[:, :2] ** 2, axis=1)))),
            "rmse_vertical": float(np.sqrt(np.mean(deltas[:, 2] ** 2))), "outliers": outliers}
