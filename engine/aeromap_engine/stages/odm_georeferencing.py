"""Georeferenced point cloud: the filtered cloud moved back into the CRS (offset added) and written as LAZ
(always), COPC (pc-copc, on by default: the same points in an octree, for viewers that stream them), LAS (pc-las),
CSV (pc-csv) and PLY under odm_georeferencing/; and coords.txt, ODM's record of the CRS and of the offset that
the textured model's coordinates are relative to; when ground control points georeferenced the model,
odm_georeferencing/ground_control_points.geojson (where the model puts each, and its error)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..atomic_files import write_json
from ..cloud.tiled import TiledCloud
from ..crs_offset import Georef
from ..io.georeferenced import write_cloud
from ..options import Option
from ..sfm.export import control_points_geojson

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = [
    Option("pc-las", "bool", False, "Also write the georeferenced point cloud in LAS format.", "odm_georeferencing"),
    Option("pc-csv", "bool", False, "Also write the georeferenced point cloud in CSV format (X,Y,Z,Red,Green,Blue).",
           "odm_georeferencing"),
    Option("pc-copc", "bool", True, "Also write the georeferenced point cloud as Cloud Optimized Point Cloud (COPC), "
           "which web viewers and desktop tools stream.", "odm_georeferencing"),
]
WEIGHT = 0.2


def run(ctx: "StageContext") -> None:
    project = ctx.project
    georef = Georef.load(project)
    write_cloud(project, ctx.options, TiledCloud.open(project.filtered_cloud), georef, ctx.progress)
    reconstruction = project.read_stats().get("reconstruction", {})
    residuals, checks = reconstruction.get("gcp_residual_m"), reconstruction.get("checkpoint_residual_m")
    if (residuals or checks) and georef.georeferenced:
        write_json(project.control_points_geojson, control_points_geojson(residuals or {}, georef, checks or {}))
    else:
        project.control_points_geojson.unlink(missing_ok=True)  # none of an earlier run with control points
