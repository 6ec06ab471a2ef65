"""Structure from motion: from the photographs to calibrated, posed cameras and sparse points in the world frame.

Steps: SIFT features at the feature quality's scale (finer for images that show too few); candidate pairs from GPS
neighbours (from image retrieval for images without a position); matching and geometric verification, weak pairs
again with a looser ratio test (sfm/database.py), and the figures of how strongly that ties the photographs
(sfm/ties.py), which name the cause when images cannot be placed; incremental or global mapping with the GPS
positions as priors (in overlapping blocks where one mapping would not fit in memory, sfm/blocks.py); georeferencing
(see sfm/georeference.py): by ground control points when gcp_list.txt is given (unless use-exif), else by the GPS
through a robust similarity and a bundle adjustment with the fixes that agree (the others reported, their
photographs kept), else a levelled local frame.

Writes (see crs_offset.py for the frame): opensfm/reconstruction/ (COLMAP binary model, image names as in images/,
coloured points), opensfm/georef.json, opensfm/sparse.ply, cameras.json, odm_report/shots.geojson and the
"reconstruction" section of odm_report/stats.json.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
import pycolmap

from .. import photometry, quality
from ..errors import InputError
from ..quality import Check
from ..atomic_files import atomic_dir, read_json, write_json
from ..crs_offset import Georef
from ..io.gcp import read_gcp_file
from ..io.images import load_levels
from ..io.ply import write_ply
from ..log import log, log_count
from ..options import Option
from ..photo import Photo, capture_order
from ..sfm.cameras import LENS_CHOICES, CameraKind, camera_kind, lens_coverage, refinement
from ..sfm.database import (PositionPrior, keypoint_counts, match_pairs, open_database, reject_pairs,
                            rematch_weak_pairs, verified_match_counts, verified_pairs)
from ..sfm.export import cameras_json, mean_gsd_cm, shots_geojson, sparse_cloud
from ..sfm.features import QUALITY_SCALES
from ..sfm.alignment import MIN_ALIGNMENT_POINTS, adjust_with_priors
from ..sfm.blocks import map_in_blocks, mapping_memory, plan_blocks
from ..sfm.frame import (WorldFrame, barometric_heights, flight_names, photo_positions, position_priors,
                         world_frame)
from ..sfm.georeference import georeference, gps_residuals
from ..sfm.consistency import GpsVerdict, gps_verdict, horizontal_distances, layout_uncertainty
from ..sfm.rolling import Shot, correct_image, velocities
from ..sfm.focal import FOCAL_CHOICES, geometry_constrains_focal, refine_focal
from ..sfm.groups import elsewhere, image_names, merge
from ..sfm.mapping import SFM_ALGORITHMS, MappingSettings, reconstruct
from ..sfm.pairs import candidate_pairs, contradicting_pairs, uses_retrieval
from ..sfm.pixels import colour_points, extract_all, frame_of, observe_points
from ..sfm.retrieval import retained, signatures
from ..sfm.ties import Ties, footprint_short_sides, measure_ties, neighbour_overlap
from ..split.plan import Submodel

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("feature-quality", "enum", "high",
           "Image scale at which features are found: ultra uses the full resolution, high half of it, medium a "
           "quarter, low an eighth, lowest a sixteenth. Higher finds more and better features but takes longer.",
           "opensfm", choices=tuple(QUALITY_SCALES)),
    Option("min-num-features", "int", 10000,
           "Number of features to find in each image. More can connect images with little overlap or texture; "
           "matching time grows with it.", "opensfm", minimum=100),
    Option("matcher-neighbors", "int", 0,
           "Match each image with this many nearest images by GPS position. 0 chooses automatically (nearest "
           "images plus the triangulation graph of the positions).", "opensfm", minimum=0),
    Option("sfm-algorithm", "enum", "incremental",
           "Structure from motion method: incremental adds the images one at a time (robust); global solves all "
           "camera poses at once (faster on large sets).", "opensfm", choices=SFM_ALGORITHMS),
    Option("use-exif", "bool", False,
           "Georeference with the images' GPS even when a gcp_list.txt is present.", "opensfm"),
    Option("force-gps", "bool", False,
           "Use the images' GPS positions in the reconstruction even when a gcp_list.txt is present (the ground "
           "control points still georeference the model). Useful with high-precision GPS such as RTK; without "
           "control points it changes nothing.", "opensfm"),
    Option("gps-z-offset", "float", 0.0,
           "Metres added to the altitude of every image's GPS position (not to the ground control points), for "
           "example to go from ellipsoidal to orthometric heights.", "opensfm"),
    Option("gps-accuracy", "float", 10.0,
           "Accuracy of the images' GPS positions in metres. When set, it replaces the accuracy the images "
           "declare (for example RTK); smaller values hold the model closer to the GPS positions, which can "
           "counter bowl-shaped deformation over large areas.", "opensfm", minimum=0.001),
    Option("camera-lens", "enum", "auto",
           "Camera projection model. auto uses the projection the images declare, else brown; perspective "
           "and brown are for ordinary lenses, fisheye and fisheye_opencv for fisheye lenses.",
           "opensfm", choices=LENS_CHOICES),
    Option("focal-refinement", "enum", "auto",
           "How bundle adjustment treats the focal length the images state: auto refines it where the views "
           "differ in direction (obliques) or height enough to measure it, and keeps the stated value where a "
           "refined one moves more than 15 % from it; fixed keeps it; free always refines it. A focal length "
           "the images do not state is always refined.", "opensfm", choices=FOCAL_CHOICES),
    Option("rolling-shutter", "bool", False,
           "Correct for a rolling shutter: photographs taken in motion by a camera that reads its sensor row by "
           "row are skewed along the flight. The tie points are moved to where a global shutter would have seen "
           "them (needs capture times) and the model adjusted again.", "opensfm"),
    Option("rolling-shutter-readout", "float", 0.0,
           "The sensor's readout time in milliseconds for rolling-shutter. 0 uses 30 ms, typical of small drone "
           "cameras; measure or look up your camera's for best results.", "opensfm", minimum=0),
    Option("use-fixed-camera-params", "bool", False,
           "Keep the initial camera calibration instead of refining it during bundle adjustment; can help "
           "against bowl-shaped deformation.", "opensfm"),
]
WEIGHT = 4.0

MIN_PAIR_INLIERS = 15  # verified matches for a pair to count as overlapping (COLMAP's default)
# Pairs with fewer verified matches than a pair needs to start a model (COLMAP's init_min_num_inliers) are matched
# again with a looser ratio test (sfm/database.py rematch_weak_pairs).
WEAK_PAIR_INLIERS = 100
DEFAULT_READOUT_MS = 30.0
OBLIQUE_PITCH = 30.0  # degrees from straight down beyond which a photograph counts as oblique
MAPPING_PROGRESS = (0.65, 0.85)  # of the stage's progress: the mapping's share


@dataclass(frozen=True)
class Survey:
    """The photographs and what their metadata says of where they were taken."""
    photos: list[Photo]
    frame: WorldFrame
    positions: np.ndarray  # (n, 3) in the world frame, NaN where a photograph has no position
    priors: dict[str, PositionPrior]
    kinds: list[CameraKind]

    def subset(self, names: set[str]) -> "Survey":
        keep = [i for i, p in enumerate(self.photos) if p.filename in names]
        return Survey([self.photos[i] for i in keep], self.frame, self.positions[keep],
                      {n: p for n, p in self.priors.items() if n in names}, [self.kinds[i] for i in keep])


@dataclass(frozen=True)
class Matching:
    """A scratch matching database of the whole survey, and how to map from it."""
    database: Path
    scratch: Path
    camera_kinds: dict[int, CameraKind]  # COLMAP camera id -> kind
    settings: MappingSettings
    ties: Ties  # how strongly the photographs are tied before mapping


def run(ctx: "StageContext") -> None:
    survey = read_survey(ctx)
    timings: dict[str, float] = {}
    with matched(ctx, survey, timings) as matching:
        model, algorithm, figures = solve(ctx, matching.database, matching.scratch, matching.settings, survey,
                                          timings, matching.ties, mapping_blocks(survey, matching.database))
    ctx.progress(0.92)
    finish(ctx, ctx.project, survey, model, matching.camera_kinds, algorithm, figures, timings)


def read_survey(ctx: "StageContext") -> Survey:
    project, options = ctx.project, ctx.options
    cv2.setNumThreads(options.max_concurrency)
    pycolmap.logging.minloglevel = 2  # the engine logs what matters; COLMAP's own lines would flood the console
    photos = [Photo.from_odm(p) for p in read_json(project.images_json, [])]
    if len(photos) < 2:
        raise InputError("Need at least 2 images: run the dataset stage first")
    frame = world_frame(photos, None if options.use_exif else read_gcp_file(project.gcp_file))
    positions = barometric_heights(photos, photo_positions(photos, frame) + [0.0, 0.0, options.gps_z_offset])
    priors = position_priors(photos, positions, options.gps_accuracy, options.was_given("gps-accuracy"))
    return Survey(photos, frame, positions, priors, [camera_kind(p, options.camera_lens) for p in photos])


@contextlib.contextmanager
def matched(ctx: "StageContext", survey: Survey, timings: dict[str, float]) -> Iterator[Matching]:
    """Features and verified matches of every photograph in a scratch database, removed afterwards."""
    project, options = ctx.project, ctx.options
    threads = options.max_concurrency
    photos, positions = survey.photos, survey.positions
    mapping_priors = survey.priors if survey.frame.source == "gps" else {}  # control points replace the GPS
    if survey.frame.source == "gcp" and options.force_gps and survey.priors:
        log.info("Mapping with the GPS positions as priors beside the ground control points (force-gps)")
        mapping_priors = survey.priors
    project.path("opensfm").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".sfm-", dir=project.path("opensfm")) as scratch:
        database = Path(scratch) / "database.db"
        oblique = np.array([p.pitch is not None and p.pitch > OBLIQUE_PITCH for p in photos])
        retrieval = uses_retrieval(positions[:, :2], options.matcher_neighbors, oblique)
        with timed("features", timings):
            camera_kinds, kept, features = build_database(ctx, database, photos, survey.kinds, mapping_priors,
                                                          retrieval)
        with timed("matching", timings):
            pairs = candidate_pairs(positions[:, :2], capture_order(photos), options.matcher_neighbors,
                                    signatures(kept) if retrieval else None, oblique)
            del kept  # up to 128 kB an image, of no use once paired
            named = [(photos[i].filename, photos[j].filename) for i, j in pairs]
            match_pairs(database, named, Path(scratch) / "pairs.txt", threads, lambda f: ctx.progress(0.3 + 0.25 * f))
            calibrated = {p.filename for p, kind in zip(photos, survey.kinds) if kind.focal_known}
            gained = rematch_weak_pairs(database, [(a, b) for a, b in named if a in calibrated and b in calibrated],
                                        WEAK_PAIR_INLIERS, Path(scratch) / "pairs.txt", threads,
                                        lambda f: ctx.progress(0.55 + 0.1 * f))
            reject_far_pairs(database, photos, positions, oblique)
            ties = measure_ties(features, verified_match_counts(database), len(pairs), MIN_PAIR_INLIERS,
                                neighbour_overlap(positions[:, :2], footprint_short_sides(photos)))
            log.info("Matched %d candidate pairs; %d overlap%s. Ties: %s", len(pairs), ties.overlapping_pairs,
                     f" ({gained} weak pairs strengthened by a looser ratio test)" if gained else "",
                     ties.describe())
            project.update_stats("ties", ties.as_dict())  # there, too, when no model can be made
        settings = MappingSettings(options.sfm_algorithm, threads,
                                   refinement(survey.kinds, options.use_fixed_camera_params,
                                              options.focal_refinement == "free"),
                                   use_position_priors=bool(mapping_priors))
        yield Matching(database, Path(scratch), camera_kinds, settings, ties)


def finish(ctx: "StageContext", project: "Project", survey: Survey, model: pycolmap.Reconstruction,
           camera_kinds: dict[int, CameraKind], algorithm: str, figures: dict[str, Any],
           timings: dict[str, float]) -> None:
    """Colour the points, then write the model, its figures and its quality checks into the project."""
    with timed("colours", timings):
        names, observations, sharp = observe_points(model, ctx.project.images_dir,
                                                    load_levels(ctx.project.radiometry_file),
                                                    ctx.options.max_concurrency)
        cameras = {name: str(model.find_image_with_name(name).camera_id) for name in names}
        corrections = photometry.estimate(observations, names, [cameras[n] for n in names],
                                          {str(i): frame_of(c) for i, c in model.cameras.items()})
        photometry.write(project.photometry_file, corrections)
        colour_points(model, names, observations, sharp, corrections)
    figures["photometry"] = corrections.figures() if corrections is not None else None
    record_model(project, survey, model, camera_kinds, algorithm, figures, timings)


def record_model(project: "Project", survey: Survey, model: pycolmap.Reconstruction,
                 camera_kinds: dict[int, CameraKind], algorithm: str, figures: dict[str, Any],
                 timings: dict[str, float]) -> None:
    figures["timings_s"] = timings
    figures["sfm_algorithm"] = algorithm
    source = figures["georef_source"]
    frame = survey.frame
    georef = Georef(frame.crs, frame.offset, source) if source != "none" else Georef(None, (0.0, 0.0), "none")
    write_outputs(project, model, georef, camera_kinds, survey.photos, figures)
    quality.record(project, model_checks(model, len(survey.photos), figures["weak_ties"]) + figures["gcp_checks"]
                   + figures["gps_checks"])


def model_checks(model: pycolmap.Reconstruction, total: int, weak_ties: str) -> list[Check]:
    """What the sparse model tells of its own trustworthiness (see quality.py); `weak_ties` says how strongly
    matching tied the photographs, and what to try, for when images are left out."""
    registered = [model.image(i) for i in model.reg_image_ids()]
    centres = np.array([image.projection_center() for image in registered])
    points = np.array([point.xyz for point in model.points3D.values()]).reshape(-1, 3)
    checks = [quality.registered_share(len(registered), total, weak_ties),
              quality.points_per_image(model.num_points3D(), len(registered)),
              quality.track_length(model.compute_mean_track_length())]
    if model.cameras:
        checks.append(lens_check(model))
    if len(points):
        nadir = quality.nadir_views(np.array([image.viewing_direction() for image in registered]))
        checks.append(quality.height_range(points, centres, nadir, "sparse model", "sparse"))
    return checks


def lens_check(model: pycolmap.Reconstruction) -> Check:
    """Whether the lens model of the camera that covers least of its frame covers all of it, naming it and its
    parameters."""
    coverage, camera_id = min((lens_coverage(camera), camera_id) for camera_id, camera in model.cameras.items())
    camera = model.cameras[camera_id]
    params = ", ".join(f"{name.strip()} {value:.4g}" for name, value in zip(camera.params_info.split(","),
                                                                          camera.params))
    return quality.lens_frame(coverage, f"camera {camera_id} ({camera.model.name}: {params})")


def mapping_blocks(survey: Survey, database: Path) -> list[Submodel]:
    """The blocks to map a survey in where one mapping of all its images would not fit in memory (sfm/blocks.py),
    judged by the keypoints the matching database holds of each; none where it fits, or where the survey cannot be
    cut by GPS position."""
    names = [p.filename for p in survey.photos]
    blocks = plan_blocks(names, np.nan_to_num(survey.positions[:, :2]), keypoint_counts(database), mapping_memory())
    if blocks and (survey.frame.source != "gps" or not np.isfinite(survey.positions[:, :2]).all()):
        log.warning("%d images are more than one mapping holds within %.1f GB, but only a survey that every image's "
                    "GPS georeferences can be mapped in blocks: mapping them all at once", len(names),
                    mapping_memory() / 1e9)
        return []
    return blocks


def reject_far_pairs(database: Path, photos: list[Photo], positions: np.ndarray, oblique: np.ndarray) -> None:
    """Forget verified pairs that the GPS says cannot overlap (sfm/pairs.py contradicting_pairs)."""
    located = {p.filename: xyz for p, xyz in zip(photos, positions) if np.isfinite(xyz).all()}
    nadir = {p.filename for p, tilted in zip(photos, oblique) if not tilted}
    far = contradicting_pairs(verified_pairs(database, MIN_PAIR_INLIERS), located, nadir,
                              {p.filename: p.footprint_ratio for p in photos})
    if far:
        log.info("Rejected %d matched pairs whose GPS positions lie too far apart for their views to overlap: %s",
                 len(far), ", ".join(f"{a}-{b}" for a, b in far))
        reject_pairs(database, far)


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
                                       share)
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
           blocks: Sequence[Submodel], progress: Callable[[], None], share: Callable[[float], None]
           ) -> tuple[list[pycolmap.Reconstruction], str]:
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


def build_database(ctx: "StageContext", path: Path, photos: list[Photo], kinds: list[CameraKind],
                   priors: dict[str, PositionPrior], retrieval: bool
                   ) -> tuple[dict[int, CameraKind], list[np.ndarray], dict[str, int]]:
    """The matching database with every photograph's features and prior; returns the kind of each camera id,
    when retrieval is wanted the descriptors it needs of each photograph (none otherwise), and the number of
    features of each photograph."""
    distinct = list(dict.fromkeys(kinds))
    log.info("Cameras: %s", "; ".join(f"{k.make} {k.model} {k.width}x{k.height} ({k.projection}, "
                                      f"{k.colmap_model})" for k in distinct))
    options = ctx.options
    with open_database(path, [k.initial_camera() for k in distinct]) as database:
        extracted = extract_all(ctx.project.images_dir, load_levels(ctx.project.radiometry_file), photos,
                                options.feature_quality, options.min_num_features,
                                options.max_concurrency, lambda f: ctx.progress(0.3 * f))
        kept, counts = [], {}
        for i, features in enumerate(extracted):
            database.add(photos[i].filename, distinct.index(kinds[i]), features, priors.get(photos[i].filename))
            counts[photos[i].filename] = len(features)
            if retrieval:
                kept.append(retained(features.descriptors))
        return dict(zip(database.camera_ids, distinct)), kept, counts


@contextlib.contextmanager
def timed(step: str, timings: dict[str, float]) -> Iterator[None]:
    began = time.monotonic()
    yield
    timings[step] = round(timings.get(step, 0.0) + time.monotonic() - began, 2)
    log.info("%s took %.1f s", step.capitalize(), timings[step])


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


def write_outputs(project: "Project", model: pycolmap.Reconstruction, georef: Georef,
                  kinds: dict[int, CameraKind], photos: list[Photo], figures: dict[str, Any]) -> None:
    with atomic_dir(project.path("opensfm", "reconstruction")) as tmp:
        model.write(tmp)
    georef.save(project)
    write_ply(project.path("opensfm", "sparse.ply"), sparse_cloud(model))
    write_json(project.path("cameras.json"), cameras_json(model, kinds))
    shots = project.report_dir / "shots.geojson"
    if georef.georeferenced:
        write_json(shots, shots_geojson(model, georef, kinds, {p.filename: p.utc_time for p in photos}))
    else:
        shots.unlink(missing_ok=True)  # a previous georeferenced run's shots would no longer match
    registered = {model.image(i).name for i in model.reg_image_ids()}
    unregistered = sorted(p.filename for p in photos if p.filename not in registered)
    left_out = {name: figures["left_out"].get(name, "it shares too few matches with the other photographs to "
                                                    "be placed") for name in unregistered}
    for name, reason in left_out.items():
        log.warning("Left out %s: %s", name, reason)
    gsd = mean_gsd_cm(model)
    error = model.compute_mean_reprojection_error()
    project.update_stats("reconstruction", {
        "images_total": len(photos),
        "images_registered": len(registered),
        "images_unregistered": unregistered,
        "images_left_out": left_out,
        "points": model.num_points3D(),
        "observations": model.compute_num_observations(),
        "mean_track_length": model.compute_mean_track_length(),
        "mean_reprojection_error_px": error,
        "gps_residual_m": figures.get("gps_residual_m"),
        "gps_uncertainty": figures.get("gps_uncertainty"),
        "absolute_uncertainty_m": figures.get("absolute_uncertainty_m"),
        "gps_outliers": figures.get("gps_outliers", {}),
        "mappings": figures["mappings"],
        "gcp_residual_m": figures.get("gcp_residual_m"),
        "gsd_cm": gsd,
        "sfm_algorithm": figures["sfm_algorithm"],
        "georef_source": georef.source,
        "crs": georef.crs,
        "cameras": {kind.odm_id: model.cameras[cid].params.tolist() for cid, kind in kinds.items()
                    if cid in model.cameras},
        "timings_s": figures["timings_s"],
        "photometry": figures.get("photometry"),
    })
    log.info("Reconstruction: %d/%d images, %d points, reprojection error %.2f px%s", len(registered),
             len(photos), model.num_points3D(), error,
             f", GSD {gsd:.2f} cm" if gsd and georef.source != "none" else "")
