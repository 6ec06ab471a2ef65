"""A solved model written into the project: its points coloured, with the photometric corrections estimated
from them (photometry/); the COLMAP model, georef.json, the sparse cloud, cameras.json and shots.geojson
(export.py); the "reconstruction" section of stats.json; and the quality checks of the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pycolmap

from .. import photometry, quality
from ..atomic_files import atomic_dir, write_json
from ..crs_offset import Georef
from ..io.images import load_levels
from ..io.ply import write_ply
from ..log import log, timed
from ..photo import Photo
from ..quality import Check
from .cameras import CameraKind, lens_coverage
from .export import cameras_json, mean_gsd_cm, shots_geojson, sparse_cloud
from .pixels import colour_points, frame_of, observe_points, rotations_of
from .survey import Survey

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project


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
                                          {str(i): frame_of(c) for i, c in model.cameras.items()},
                                          rotations_of(model))
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
        "checkpoint_residual_m": figures.get("checkpoint_residual_m"),
        "alignment": figures.get("alignment"),
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
