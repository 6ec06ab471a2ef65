"""Point cloud filtering: outliers, thinning and cropping to the surveyed area.

Reads the dense cloud (or, with fast-orthophoto, the sparse points, opensfm/sparse.ply); writes
odm_filterpoints/point_cloud.ply (world frame) and odm_filterpoints/bounds.geojson (the surveyed area, a Polygon
or MultiPolygon in the output CRS), which the elevation models and the orthophoto are cropped to. The area is
where the cloud covers the ground (cloud/area.py), with its scales taken from the images' ground footprint.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pycolmap

from .. import quality
from ..cloud.area import AreaSettings, SurveyArea, surveyed_area
from ..cloud.boundary import camera_boundary
from ..cloud.filters import median_spacing, statistical_inliers, thin
from ..dense.views import SparseModel, sparse_model
from ..errors import InputError
from ..georef import Georef
from ..io.geojson import read_geometry, write_geometry
from ..io.ply import read_ply, write_ply
from ..log import log
from ..options import Option
from .openmvs import dense_cloud_path, reconstruction_dir

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("pc-filter", "float", 5.0,
           "Remove points whose mean distance to their 16 nearest neighbours is more than this many standard "
           "deviations above the average among the points around them. 0 turns the filter off.",
           "odm_filterpoints", minimum=0),
    Option("pc-sample", "float", 0.0,
           "Thin the point cloud to about one point per N metres (removes duplicates, limits the cloud's "
           "resolution). 0 keeps every point.", "odm_filterpoints", minimum=0),
    Option("auto-boundary", "bool", False,
           "Limit the reconstruction to an area around the camera positions, which removes far-away background "
           "(sky, distant landscape) seen by oblique images.", "odm_filterpoints"),
    Option("auto-boundary-distance", "float", 0.0,
           "Distance in metres between the camera positions and the edge of the automatic boundary. 0 chooses "
           "it from the flight height and the cameras' field of view.", "odm_filterpoints", minimum=0),
    Option("crop", "float", 3.0,
           "Crop the outputs to the surveyed area shrunk by N metres, which removes the unreliable edges. "
           "0 turns cropping off.", "odm_filterpoints", minimum=0),
]
WEIGHT = 0.5

AREA_CELL = 0.5  # m: the finest cell of the occupancy grid the surveyed area is traced on...
AREA_CELL_SPACINGS = 4  # ...and at least this many point spacings (a sparse cloud's cells must hold points)
CLOSING_FOOTPRINT = 0.5  # gaps narrower than this fraction of an image footprint's shorter side, times two,
# belong to the survey: the photographs around them saw them (trees, water, plain roofs failed to match)
MAX_HOLE_FOOTPRINTS = 4  # enclosed holes up to this many image footprints are filled (a pond in a field); a
# larger one may never have been photographed (a survey ringing a lake)


def filtered_cloud_path(project: "Project") -> Path:
    return project.path("odm_filterpoints", "point_cloud.ply")


def bounds_path(project: "Project") -> Path:
    return project.path("odm_filterpoints", "bounds.geojson")


def load_boundary(project: "Project", georef: Georef) -> SurveyArea:
    """The surveyed area in the world frame."""
    return SurveyArea.from_geometry(read_geometry(bounds_path(project)), georef.offset)


def sparse_cloud_path(project: "Project") -> Path:
    return project.path("opensfm", "sparse.ply")


def _auto_boundary_distance(model: SparseModel) -> float:
    """Half the diagonal of an image's ground footprint, averaged over the views: the area the cameras see."""
    ground = float(np.median(model.points[:, 2]))
    radii = [max(v.center[2] - ground, 0.0) * 0.5 * np.hypot(v.camera.width, v.camera.height)
             / v.camera.mean_focal_length() for v in model.views]
    return float(np.mean(radii))


def footprint_sides(model: SparseModel) -> tuple[float, float]:
    """The median ground footprint of an image (longer side, shorter side; m), from its height above the median
    sparse point."""
    ground = float(np.median(model.points[:, 2])) if len(model.points) else 0.0
    sides = [sorted((v.camera.width, v.camera.height), reverse=True) for v in model.views]
    heights = [max(v.center[2] - ground, 0.0) / v.camera.mean_focal_length() for v in model.views]
    long, short = np.median(np.array(sides) * np.array(heights)[:, None], axis=0)
    return float(long), float(short)


def area_settings(xyz: np.ndarray, footprint: tuple[float, float], crop: float) -> AreaSettings:
    """The scales of the surveyed area: its cell from the points' spacing, the gaps it closes and the holes it
    fills from the images' footprint."""
    long, short = footprint
    closing = max(CLOSING_FOOTPRINT * short, 1.0)
    return AreaSettings(cell=max(AREA_CELL, AREA_CELL_SPACINGS * median_spacing(xyz)), closing=closing,
                        max_hole=MAX_HOLE_FOOTPRINTS * long * short, min_part=np.pi * closing**2, crop=crop)


def cloud_heights(z: np.ndarray, model: SparseModel) -> quality.Check:
    """Whether the cloud's heights, which the DSM is made of, are possible for the cameras (quality.py)."""
    nadir = quality.nadir_views(np.array([view.axis for view in model.views]))
    return quality.height_range(z, np.array([view.center[2] for view in model.views]), nadir, "point cloud",
                                "cloud")


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    georef = Georef.load(project)
    cloud = read_ply(sparse_cloud_path(project) if options.fast_orthophoto else dense_cloud_path(project))
    figures: dict = {"source": "sparse" if options.fast_orthophoto else "dense", "input_points": len(cloud)}

    model = sparse_model(pycolmap.Reconstruction(str(reconstruction_dir(project))))
    if options.auto_boundary:
        distance = options.auto_boundary_distance or _auto_boundary_distance(model)
        cameras = camera_boundary(np.array([v.center[:2] for v in model.views]), distance)
        cloud = cloud.subset(cameras.contains(cloud.xyz[:, :2].astype(np.float64)))
        log.info("Auto boundary %.1f m around the cameras keeps %d points", distance, len(cloud))
    if options.pc_filter > 0:
        cloud = cloud.subset(statistical_inliers(cloud.xyz, options.pc_filter, workers=options.max_concurrency))
        figures["after_outlier_filter"] = len(cloud)
    if options.pc_sample > 0:
        cloud = cloud.subset(thin(cloud.xyz, options.pc_sample))
        figures["after_sampling"] = len(cloud)

    if len(cloud) < 3:
        raise InputError("The point cloud is empty or spans no area after filtering")
    settings = area_settings(cloud.xyz, footprint_sides(model), options.crop)
    area = surveyed_area(cloud.xyz[:, :2].astype(np.float64), settings)
    if area is None:
        raise InputError(f"Nothing is left of the surveyed area after cropping {options.crop:g} m off its edges"
                         if options.crop > 0 else "The point cloud spans no area after filtering")
    if options.crop > 0:
        cloud = cloud.subset(area.contains(cloud.xyz[:, :2].astype(np.float64)))

    write_ply(filtered_cloud_path(project), cloud)
    quality.record(project, [cloud_heights(cloud.xyz[:, 2], model)])
    write_geometry(bounds_path(project), area.geometry(georef.offset), georef.crs)
    figures.update({"points": len(cloud), "area_m2": round(area.area, 1), "area_parts": len(area.polygons),
                    "area_cell_m": round(settings.cell, 3), "area_closing_m": round(settings.closing, 2),
                    "density_per_m2": round(len(cloud) / max(area.area, 1e-9), 2)})
    project.update_stats("point_cloud", figures)
    log.info("Filtered point cloud: %d points over %.0f m2 in %d part(s)", len(cloud), area.area,
             len(area.polygons))
