"""Solving a matched survey (matching.py): mapping, in blocks where one mapping would not fit in memory
(blocks.py); georeferencing (georeference.py); the groups that share no view with the main model placed by their
own GPS; the rolling shutter corrected and the focal length refined where asked; and the GPS fixes judged against
the final model (consistency.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pycolmap

from .. import quality
from ..errors import InputError
from ..log import log, log_count, timed
from ..photo import Photo
from ..quality import Check
from ..split.plan import Submodel
from .alignment import MIN_ALIGNMENT_POINTS, adjust_with_priors
from .blocks import map_in_blocks
from .consistency import GpsVerdict, gps_verdict, horizontal_distances, layout_uncertainty
from .control_fit import checkpoint_residuals
from .database import PositionPrior
from .focal import geometry_constrains_focal, refine_focal
from .frame import WorldFrame, flight_names
from .georeference import georeference, gps_residuals
from .groups import elsewhere, image_names, merge
from .mapping import MappingSettings, reconstruct
from .posed import POSED_ALGORITHMS, map_posed
from .rolling import Shot, correct_image, velocities
from .survey import Survey
from .ties import Ties

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

DEFAULT_READOUT_MS = 30.0
MAPPING_PROGRESS = (0.65, 0.85)  # of the stage's progress: the mapping's share


def solve(ctx: "StageContext", database: Path, work_dir: Path, settings: MappingSettings, survey: Survey,
          timings: dict[str, float], ties: Ties, blocks: Sequence[Submodel] = ()
          ) -> tuple[pycolmap.Reconstruction, str, dict[str, Any]]:
    """Map (in `blocks` where given), georeference, then place the groups that share no view with the main model
    by their own GPS.

    The photographs decide the model's shape; the GPS places and scales it, the fixes that disagree left out of
    the georeferencing (sfm/consistency.py) and reported, every image kept. Only when the fixes do not describe
    the photographs' layout is the model mapped again from the photographs alone, since priors that wrong may
    have bent it; the quality checks then refuse the placement if the fixes still do not fit. Where images cannot
    be placed, `ties` (how strongly matching tied the photographs) names the cause."""
    frame, priors, photos = survey.frame, survey.priors, survey.photos
    weak_ties = f"{ties.describe()}; {ties.advice(ctx.options.feature_quality, ctx.options.min_num_features)}"
    flights = flight_names(photos)
    pitch_by_name = {p.filename: p.pitch for p in photos if p.pitch is not None}
    progress = registration_progress(ctx, len(photos))  # one count over both passes: it never goes back
    share = mapped_share(ctx)  # the same for blocks
    for attempt in (1, 2):
        with timed("mapping", timings):
            models, algorithm = mapped(ctx, database, work_dir / f"models{attempt}", settings, blocks, progress,
                                       share, survey)
        if not models or models[0].num_reg_images() < 2:
            raise InputError("The images are too weakly tied to reconstruct anything: no pair of images could be "
                             f"matched and triangulated ({weak_ties})")
        # The main model is the largest that its GPS can place, so that a group without GPS cannot take the
        # place of one with it.
        models.sort(key=lambda m: gps_verdict(m, priors, []).located < MIN_ALIGNMENT_POINTS)
        model = models[0]
        log.info("Registered %d of %d images, %d points%s", model.num_reg_images(), len(photos),
                 model.num_points3D(), f"; separate groups: {len(models) - 1}" if len(models) > 1 else "")
        with timed("georeferencing", timings):
            figures = georeference(model, frame, priors, photos, pitch_by_name, settings.refine,
                                   settings.threads, ctx.options.was_given("gps-accuracy"))
        refuse_unusable_control(ctx.project, figures["gcp_checks"])
        verdict = gps_verdict(model, priors, outliers(figures), flights)
        if attempt == 2 or not settings.use_position_priors or verdict.layout_matches:
            break
        log.info("%d of %d GPS positions disagree with the layout of the photographs: mapping again from the "
                 "photographs alone", verdict.located - verdict.agreeing, verdict.located)
        settings = replace(settings, use_position_priors=False)
    figures["mappings"] = attempt
    left_out: dict[str, str] = {}
    wild = list(verdict.wild)
    placed_by_gps = []  # the size of each group placed by its GPS alone
    for group in models[1:]:
        with timed("placing groups", timings):
            reasons, group_wild = place_group(model, group, figures["georef_source"], frame, priors, photos,
                                              pitch_by_name, settings, ctx.options.was_given("gps-accuracy"))
        left_out.update(reasons)
        wild += group_wild
        if not reasons:
            placed_by_gps.append(group.num_reg_images())
    if ctx.options.rolling_shutter:
        with timed("rolling shutter", timings):
            correct_rolling_shutter(model, photos, {n: p for n, p in priors.items() if n not in wild},
                                    ctx.options.rolling_shutter_readout or DEFAULT_READOUT_MS, settings)
    if (ctx.options.focal_refinement == "auto" and settings.refine.distortion and not settings.refine.focal
            and figures["georef_source"] == "gps" and geometry_constrains_focal(model)):
        with timed("focal refinement", timings):
            model = refine_focal(model, {n: p for n, p in priors.items() if n not in wild}, settings.refine,
                                 settings.threads)
    if figures["georef_source"] != "none":  # on the model as it is finally placed and refined
        figures["checkpoint_residual_m"] = checkpoint_residuals(model, frame, photos)
    final = gps_verdict(model, priors, wild, flights)
    if figures.get("gps_residual_m") is not None:
        figures["gps_residual_m"] = gps_residuals(model, priors, wild)
        figures["gps_outliers"] = disagreeing_fixes(model, priors, final)
        if figures["georef_source"] == "gps":
            figures["gps_uncertainty"], figures["absolute_uncertainty_m"] = \
                gps_uncertainty(model, priors, figures["gps_residual_m"], figures.get("views_tilt_deg"))
    figures["left_out"] = left_out
    figures["gps_checks"] = gps_checks(final) + [
        quality.groups_placed_by_gps(sum(placed_by_gps), len(placed_by_gps), final.accuracy_m)]
    figures["weak_ties"] = weak_ties
    return model, algorithm, figures


def mapped(ctx: "StageContext", database: Path, work_dir: Path, settings: MappingSettings,
           blocks: Sequence[Submodel], progress: Callable[[], None], share: Callable[[float], None], survey: Survey
           ) -> tuple[list[pycolmap.Reconstruction], str]:
    """The models mapped by settings.algorithm, and the algorithm that made them: the incremental mapper's where
    known poses (planar, triangulation) did not give a model worth keeping (posed.py warns why)."""
    if settings.algorithm in POSED_ALGORITHMS:
        model = map_posed(database, work_dir, settings, survey.photos,
                          survey.priors if settings.use_position_priors else {})
        if model is not None:
            return [model], settings.algorithm
        settings = replace(settings, algorithm="incremental")
    if blocks:
        joined = map_in_blocks(database, ctx.project.images_dir, work_dir, settings, list(blocks), share)
        if joined is not None:
            return joined
        log.warning("Mapping all images at once instead, whatever memory that takes")
    return reconstruct(database, ctx.project.images_dir, work_dir, settings, progress)


def gps_uncertainty(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], residuals: dict[str, Any],
                    views_tilt_deg: float | None) -> tuple[dict[str, float], dict[str, float]]:
    """How far the GPS alone may have tilted and scaled the model (1 sigma), from the fixes' layout and the
    spread of their residuals, and how far it may have misplaced it: the agreeing fixes' RMS distance from their
    cameras, not that over the square root of their number, since a receiver's errors are correlated over a
    flight (a drift that a settling receiver leaves within the noise moves the whole model). Where the viewing
    directions levelled the model instead of the heights, theirs is the tilt's uncertainty. Logged, since a
    tilt of a tenth of a degree is already a GSD at the edges."""
    xy = np.array([prior.position[:2] for name, prior in priors.items()
                   if name not in residuals["outliers"] and (image := model.find_image_with_name(name)) is not None
                   and image.has_pose])
    expected = layout_uncertainty(xy, residuals["rmse_horizontal"], residuals["rmse_vertical"])
    tilt_deg = expected.tilt_deg if views_tilt_deg is None else views_tilt_deg
    placement = {"horizontal": residuals["rmse_horizontal"], "vertical": residuals["rmse_vertical"]}
    log.info("The model's tilt is uncertain by %.2f degrees (%s), its scale by %.2f %% and its absolute position "
             "by %.1f m horizontally and %.1f m vertically (the GPS fixes' spread)", tilt_deg,
             "levelled by the viewing directions" if views_tilt_deg is not None else "levelled by the GPS heights",
             100 * expected.scale, placement["horizontal"], placement["vertical"])
    return {"tilt_deg": tilt_deg, "scale": expected.scale}, placement


def disagreeing_fixes(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], verdict: GpsVerdict
                      ) -> dict[str, float]:
    """The horizontal distance of each fix the georeferencing left out from its camera, logged: the model keeps
    those photographs where the others put them."""
    distances = horizontal_distances(model, priors, verdict.wild)
    if distances:
        settling = f"; {', '.join(verdict.settling)} open a flight, nearer photograph by photograph: a GPS " \
                   f"receiver settling" if verdict.settling else ""
        log.warning("%d GPS positions disagree with where the photographs place their cameras and were not used to "
                    "place the model: %s%s", len(distances),
                    ", ".join(f"{name} {distance:.0f} m off" for name, distance in distances.items()), settling)
    return distances


def correct_rolling_shutter(model: pycolmap.Reconstruction, photos: list[Photo], priors: dict[str, PositionPrior],
                            readout_ms: float, settings: MappingSettings) -> None:
    """Correct the tie points for the shutter's readout (sfm/rolling.py), then adjust the model on them."""
    times = {p.filename: p.utc_time / 1000.0 for p in photos if p.utc_time}
    images = [model.image(i) for i in model.reg_image_ids()]
    moving = velocities([Shot(im.name, times[im.name], im.projection_center()) for im in images if im.name in times])
    if not moving:
        log.warning("Rolling shutter: no capture times to tell how the cameras moved; not corrected")
        return
    moves = [correct_image(model, im, moving[im.name], readout_ms / 1000.0) for im in images if im.name in moving]
    adjust_with_priors(model, priors, settings.refine, settings.threads)
    log.info("Rolling shutter (%.0f ms readout): tie points of %d images moved by up to %.1f px", readout_ms,
             len(moves), max(moves))


def gps_checks(final: GpsVerdict) -> list[Check]:
    """The quality checks of the GPS against the final model: whether the fixes describe the photographs' layout,
    and how far from their cameras those that do lie."""
    if final.located < MIN_ALIGNMENT_POINTS:
        return []
    return [quality.gps_agreement(final.agreeing, final.located, final.accuracy_m),
            quality.gps_residual(final.median_residual_m, final.residual_bound_m, final.spacing_m)]


def refuse_unusable_control(project: "Project", checks: list[Check]) -> None:
    """End the run when the control points cannot georeference the model and nothing else can: the cause is
    theirs, not that of whatever the unplaced model would fail next."""
    if any(check.fatal and not check.passed for check in checks):
        quality.record(project, checks)


def outliers(figures: dict[str, Any]) -> list[str]:
    """The images whose GPS fix georeferencing found wild."""
    return list((figures.get("gps_residual_m") or {}).get("outliers", []))


def place_group(model: pycolmap.Reconstruction, group: pycolmap.Reconstruction, source: str, frame: WorldFrame,
                priors: dict[str, PositionPrior], photos: list[Photo], pitch_by_name: dict[str, float],
                settings: MappingSettings, accuracy_given: bool) -> tuple[dict[str, str], list[str]]:
    """Georeference a group that shares no view with the main model by its own GPS and merge it in. Returns
    the reason for each of its images when it cannot be placed, and its images whose GPS fixes are wild."""
    names = image_names(group)
    apart = f"in a group of {len(names)} images that shares no view with the main model"
    if source == "none":  # the main model itself is in a local frame
        return dict.fromkeys(names, f"{apart}, and without GPS nothing places it"), []
    if sum(name in priors for name in names) < MIN_ALIGNMENT_POINTS:
        return dict.fromkeys(names, f"{apart}, and whose GPS positions are too few to place it "
                                    f"({MIN_ALIGNMENT_POINTS} needed)"), []
    figures = georeference(group, replace(frame, source="gps"), priors, photos, pitch_by_name, settings.refine,
                           settings.threads, accuracy_given)
    verdict = gps_verdict(group, priors, outliers(figures))
    if figures["georef_source"] != "gps" or not verdict.layout_matches:
        why = "contradict it" if figures["georef_source"] == "gps" else "do not fit it"
        return dict.fromkeys(names, f"{apart}, and whose GPS positions {why}"), []
    if (gap := elsewhere(model, group)) is not None:
        return dict.fromkeys(names, f"{apart}, {gap / 1000:.1f} km away by its GPS: photographs of another "
                                    f"place"), []
    merge(model, group)
    log.info("Placed a separate group of %d images by its GPS and merged it into the model: %s", len(names),
             ", ".join(names))
    return {}, verdict.wild


def registration_progress(ctx: "StageContext", total: int) -> Callable[[], None]:
    registered = 0

    def on_registered() -> None:
        nonlocal registered
        registered += 1
        begin, end = MAPPING_PROGRESS
        ctx.progress(begin + (end - begin) * min(1.0, registered / total))
        if registered <= total:  # a second pass counts on from the first, past the total
            log_count("Images registered", registered, total)

    return on_registered


def mapped_share(ctx: "StageContext") -> Callable[[float], None]:
    """Reports the share of the images mapped in blocks; a second pass, which starts again from none, never moves
    the progress back."""
    reached = 0.0

    def report(fraction: float) -> None:
        nonlocal reached
        reached = max(reached, fraction)
        begin, end = MAPPING_PROGRESS
        ctx.progress(begin + (end - begin) * reached)

    return report
