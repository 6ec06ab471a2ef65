"""Quality report: odm_report/report.pdf, and the statistics in ODM's section names that WebODM and the service
read from odm_report/stats.json (see report/statistics.py): WebODM takes a task's point count from
point_cloud_statistics (reconstruction_statistics without a dense cloud), its GSD from odm_processing_statistics,
its area and capture dates from processing_statistics.

Reads the reconstruction, images.json, cameras.json, the georeferenced cloud, the surveyed area, the orthophoto
and elevation models at preview scale, and the stage markers (time and peak memory of each stage run before this
one); the report package computes and draws. With skip-report, stats.json is written but not the PDF (as in
ODM).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pycolmap
import rasterio

from .. import __version__
from ..atomic_files import atomic_path, read_json, write_json
from ..cloud.boundary import Boundary
from ..crs_offset import Georef
from ..dense.views import View
from ..io.geojson import read_survey_area
from ..io.pointcloud import open_las
from ..log import log
from ..options import Option
from ..photo import Photo, capture_order
from ..project import STAGE_NAMES
from ..report import statistics
from ..report.figures import RasterPreview
from ..report.overlap import OverlapMap, overlap_map
from ..report.sections import CameraLayout, FeatureCounts, ReportContent, build_report
from ..report.statistics import EMPTY_CLOUD, CloudMoments, ErrorStats
from ..sfm.frame import WorldFrame, photo_positions
from ..tiles.render import preview_rgb

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("skip-report", "bool", False, "Do not write the PDF quality report (odm_report/report.pdf); the "
           "statistics in odm_report/stats.json are still written.", "odm_report"),
]
WEIGHT = 0.2

PREVIEW_SIDE = 1000  # px along the longer side of the previews
SAMPLE_POINTS = 500_000  # of the cloud, for the overlap map's cell heights (160 cells across)
CHUNK_POINTS = 1_000_000
# Sections this stage writes only when their product exists: a re-run without it must not keep the old ones.
OPTIONAL_SECTIONS = ("point_cloud_statistics", "dsm_statistics", "dtm_statistics")


@dataclass(frozen=True)
class Tracks:
    """What the report shows of the model's tie points."""

    features: FeatureCounts
    track_lengths: np.ndarray
    residuals_px: np.ndarray  # per observation
    sparse_xyz: np.ndarray
    sparse_rgb: np.ndarray


def run(ctx: "StageContext") -> None:
    project = ctx.project
    content = prepare(project, ctx.progress)
    if ctx.options.skip_report:
        project.report_file.unlink(missing_ok=True)  # no report of an earlier run stands in for this one's
        log.info("skip-report: no quality report")
        return
    ctx.progress(0.6)
    built = build_report(content)
    with atomic_path(project.report_file) as tmp:
        tmp.write_bytes(built.pdf)
    log.info("Quality report: %d pages, %s", built.pages, project.report_file.relative_to(project.root))


def prepare(project: "Project", progress: Callable[[float], None] = lambda fraction: None) -> ReportContent:
    """Read what the report shows, write this stage's sections of stats.json, and return the report's
    content."""
    made_at = datetime.now(timezone.utc)
    georef = Georef.load(project)
    model = pycolmap.Reconstruction(str(project.reconstruction_dir))
    photos = [Photo.from_odm(p) for p in read_json(project.images_json, [])]
    stats = project.read_stats()
    engine = stats["reconstruction"]
    tracks = read_tracks(model)
    cameras = camera_layout(model, photos, georef)
    progress(0.2)
    cloud = read_cloud(project.georeferenced_model("laz"))
    surface = cloud.sample - [georef.offset[0], georef.offset[1], 0.0] if cloud is not None else tracks.sparse_xyz
    overlap = read_overlap(project, georef, model, surface)
    orthophoto = read_preview(project.orthophoto(), georef, elevation=False)
    elevations, extremes = read_elevations(project, georef)
    progress(0.5)

    records = project.stage_records(STAGE_NAMES[:STAGE_NAMES.index("odm_report")])  # the stages run before this one
    registered = set(cameras.names)
    area = stats.get("point_cloud", {}).get("area_m2") or camera_area(cameras.centres)
    sections: dict[str, Any] = {
        "processing_statistics": statistics.processing_statistics(
            made_at, [p.utc_time for p in photos if p.filename in registered], area,
            {stage: record["seconds"] for stage, record in records.items()}),
        "odm_processing_statistics": statistics.odm_processing_statistics(
            sum(record["seconds"] for record in records.values()),
            engine.get("gsd_cm") if georef.georeferenced else None),
        "reconstruction_statistics": statistics.reconstruction_statistics(engine, tracks.track_lengths,
                                                                          tracks.residuals_px),
        "features_statistics": statistics.features_statistics(tracks.features.detected.tolist(),
                                                              tracks.features.reconstructed.tolist()),
        "gps_errors": _odm_errors(ErrorStats.of(gps_deltas(cameras, engine.get("gps_residual_m")))),
        "gcp_errors": _odm_errors(ErrorStats.of(gcp_deltas(engine.get("gcp_residual_m")))),
    }
    if cloud is not None:
        sections["point_cloud_statistics"] = statistics.point_cloud_statistics(
            cloud.moments, stats.get("point_cloud", {}).get("source", "dense") == "dense")
    sections.update({f"{kind}_statistics": values for kind, values in extremes.items()})
    return ReportContent(
        version=__version__, dataset=project.root.name, stats=write_sections(project, sections),
        stage_records=records, cameras=cameras, features=tracks.features, track_lengths=tracks.track_lengths,
        residuals_px=tracks.residuals_px, sparse_xyz=tracks.sparse_xyz, sparse_rgb=tracks.sparse_rgb,
        camera_models=read_json(project.path("cameras.json"), {}) or {}, orthophoto=orthophoto,
        elevations=elevations, overlap=overlap)


def _odm_errors(errors: ErrorStats | None) -> dict[str, Any]:
    """OpenSfM writes an empty section when there is nothing to compare with, and WebODM looks inside it."""
    return errors.to_odm() if errors is not None else {}


def write_sections(project: "Project", sections: dict[str, Any]) -> dict[str, Any]:
    """Merge this stage's sections into stats.json (dropping optional ones a product no longer backs); returns
    the whole file's content."""
    stats = project.read_stats()
    for key in OPTIONAL_SECTIONS:
        stats.pop(key, None)
    stats.update(sections)
    write_json(project.stats_file, stats)
    return stats


def read_tracks(model: pycolmap.Reconstruction) -> Tracks:
    """Per registered image (by name): features, reconstructed features, where those lie and how far their
    points project from them; the track length of every point; the sparse points."""
    point_ids = np.array(sorted(model.point3D_ids()), dtype=np.int64)
    points = [model.points3D[i] for i in point_ids]
    xyz = np.array([p.xyz for p in points], dtype=np.float64).reshape(-1, 3)
    rgb = np.array([p.color for p in points], dtype=np.uint8).reshape(-1, 3)
    lengths = np.array([p.track.length() for p in points], dtype=np.int64)
    names, detected, reconstructed, positions, residuals = [], [], [], [], []
    aspect = 1.0
    for image in sorted((model.image(i) for i in model.reg_image_ids()), key=lambda im: im.name):
        observed = image.get_observation_points2D()
        xy = np.array([p.xy for p in observed], dtype=np.float64).reshape(-1, 2)
        ids = np.array([p.point3D_id for p in observed], dtype=np.int64)
        camera = image.camera
        pose = image.cam_from_world()
        world = xyz[np.searchsorted(point_ids, ids)]
        in_camera = world @ np.asarray(pose.rotation.matrix()).T + np.asarray(pose.translation)
        projected = camera.img_from_cam(in_camera, check_cheirality=False).reshape(-1, 2)
        names.append(image.name)
        detected.append(image.num_points2D())
        reconstructed.append(len(observed))
        positions.append(xy / [camera.width, camera.height])
        residuals.append(np.linalg.norm(projected - xy, axis=1))
        aspect = camera.height / camera.width
    features = FeatureCounts(names, np.array(detected), np.array(reconstructed),
                             np.concatenate(positions) if positions else np.zeros((0, 2)), aspect)
    return Tracks(features, lengths, np.concatenate(residuals) if residuals else np.zeros(0), xyz, rgb)


def camera_layout(model: pycolmap.Reconstruction, photos: list[Photo], georef: Georef) -> CameraLayout:
    """The registered cameras in capture order, their centres and their GPS positions in the world frame."""
    gps = photo_positions(photos, WorldFrame(georef.crs, georef.offset, georef.source, []))
    names, centres, fixes = [], [], []
    for index in capture_order(photos):
        image = model.find_image_with_name(photos[index].filename)
        if image is None or not image.has_pose:
            continue
        names.append(image.name)
        centres.append(image.projection_center())
        fixes.append(gps[index])
    return CameraLayout(names, np.array(centres).reshape(-1, 3), np.array(fixes).reshape(-1, 3))


def gps_deltas(cameras: CameraLayout, residuals: dict[str, Any] | None) -> np.ndarray:
    """Computed camera centres minus GPS positions, for the fixes georeferencing used (as its residuals)."""
    if residuals is None:
        return np.zeros((0, 3))
    used = np.isfinite(cameras.gps).all(axis=1) & ~np.isin(cameras.names, residuals.get("outliers", []))
    return cameras.centres[used] - cameras.gps[used]


def gcp_deltas(residuals: dict[str, Any] | None) -> np.ndarray:
    """Modelled minus surveyed positions of the control points that georeferenced the model, as the
    georeferencing measured them (with the marks read the way it found them)."""
    points = (residuals or {}).get("points", [])
    return np.array([p["delta_m"] for p in points if p["used"] and "delta_m" in p], dtype=np.float64).reshape(-1, 3)


@dataclass(frozen=True)
class CloudSummary:
    moments: CloudMoments  # CRS coordinates
    sample: np.ndarray  # (N, 3) at most about SAMPLE_POINTS evenly drawn points in the CRS, for the overlap map


def read_cloud(path: Path) -> CloudSummary | None:
    """The georeferenced point cloud's statistics and an even sample of its points, read a chunk at a time so
    that memory does not grow with the cloud; None without one."""
    if not path.exists():
        return None
    moments, samples = EMPTY_CLOUD, []
    with open_las(path) as reader:
        step = max(1, -(-reader.header.point_count // SAMPLE_POINTS))
        for chunk in reader.chunk_iterator(CHUNK_POINTS):
            xyz = np.column_stack([chunk.x, chunk.y, chunk.z])
            moments = moments.merge(CloudMoments.of(xyz))
            samples.append(xyz[::step])
    return CloudSummary(moments, np.concatenate(samples) if samples else np.zeros((0, 3)))


def read_overlap(project: "Project", georef: Georef, model: pycolmap.Reconstruction,
                 surface: np.ndarray) -> OverlapMap | None:
    """Images per ground cell over the surveyed area, None without an area or a surface."""
    if not project.bounds_file.exists() or not len(surface):
        return None
    views = []
    for image_id in model.reg_image_ids():
        image = model.image(image_id)
        pose = image.cam_from_world()
        views.append(View(image.name, image.camera, np.asarray(pose.rotation.matrix()),
                          np.asarray(pose.translation), np.zeros(0, dtype=np.int64)))
    return overlap_map(views, read_survey_area(project.bounds_file, georef.offset), surface)


def read_preview(path: Path, georef: Georef, elevation: bool) -> RasterPreview | None:
    """A raster at preview scale (its overviews do the work): elevation as float32 with NaN where there is no
    value, else RGBA; None when the raster does not exist."""
    if not path.exists():
        return None
    with rasterio.open(path) as dataset:
        scale = max(1.0, max(dataset.width, dataset.height) / PREVIEW_SIDE)
        shape = (max(1, round(dataset.height / scale)), max(1, round(dataset.width / scale)))
        if elevation:
            pixels = dataset.read(1, out_shape=shape, masked=True).astype(np.float32).filled(np.nan)
        else:
            alpha = dataset.dataset_mask(out_shape=shape)
            pixels = np.dstack([preview_rgb(dataset, shape), alpha]).astype(np.uint8)
        bounds = dataset.bounds
    x0, y0 = georef.offset
    return RasterPreview(pixels, (bounds.left - x0, bounds.right - x0, bounds.bottom - y0, bounds.top - y0),
                         (bounds.right - bounds.left) / shape[1])


def read_elevations(project: "Project", georef: Georef
                    ) -> tuple[dict[str, RasterPreview], dict[str, dict[str, float]]]:
    """Previews of the elevation models that exist and hold heights, and their statistics (ODM's
    dsm_statistics and dtm_statistics, taken at preview scale as ODM does)."""
    previews, extremes = {}, {}
    for kind in ("dsm", "dtm"):
        preview = read_preview(project.dem(kind), georef, elevation=True)
        values = statistics.raster_statistics(preview.pixels) if preview is not None else None
        if values is not None:
            previews[kind], extremes[kind] = preview, values
    return previews, extremes


def camera_area(centres: np.ndarray) -> float:
    """The area of the camera positions' convex hull: the surveyed area when no point cloud gives it."""
    hull = Boundary.around(centres[:, :2]) if len(centres) >= 3 else None
    return hull.area if hull is not None else 0.0
