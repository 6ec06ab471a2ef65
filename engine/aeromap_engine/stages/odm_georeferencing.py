"""Georeferenced point cloud: the filtered cloud moved back into the CRS (offset added) and written as LAZ
(always), COPC (pc-copc, on by default: the same points in an octree, for viewers that stream them), LAS (pc-las),
CSV (pc-csv) and PLY under odm_georeferencing/; and coords.txt, ODM's record of the CRS and of the offset that
the textured model's coordinates are relative to; when ground control points georeferenced the model,
odm_georeferencing/ground_control_points.geojson (where the model puts each, and its error). With pc-classify the
points carry their classes (ground, vegetation by height, buildings: cloud/classes.py) in every format that holds
them, found tile by tile with a margin of the neighbouring tiles' points."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic_files import write_json
from ..cloud.classes import ClassSettings, class_counts, classify
from ..cloud.points import PointCloud
from ..cloud.tiled import Tile, TiledCloud, tiled_writer
from ..crs_offset import Georef
from ..dem.smrf import TILE_WORKING_BYTES, SmrfSettings, terrain_margin
from ..io.georeferenced import write_cloud
from ..log import log
from ..options import Option
from ..parallel import forked_map
from ..resources import workers_within_memory
from ..sfm.export import control_points_geojson

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = [
    Option("pc-las", "bool", False, "Also write the georeferenced point cloud in LAS format.", "odm_georeferencing"),
    Option("pc-csv", "bool", False, "Also write the georeferenced point cloud in CSV format (X,Y,Z,Red,Green,Blue).",
           "odm_georeferencing"),
    Option("pc-copc", "bool", True, "Also write the georeferenced point cloud as Cloud Optimized Point Cloud (COPC), "
           "which web viewers and desktop tools stream.", "odm_georeferencing"),
    Option("pc-classify", "bool", False, "Classify the point cloud's points: ground (by the smrf-* settings), low, "
           "medium and high vegetation, and buildings, as LAS classes.", "odm_georeferencing"),
]
WEIGHT = 0.2


@dataclass(frozen=True)
class ClassifiedTile:
    """The classes of one tile's points, found with a margin of its neighbours' points (SMRF's context);
    inherited by forked workers."""

    cloud: TiledCloud
    smrf: SmrfSettings

    def __call__(self, tile: Tile) -> PointCloud:
        points, own = self.cloud.with_margin(tile, terrain_margin(self.smrf) * self.smrf.cell)
        xy = points.xyz[:, :2]
        classes = classify(points.xyz, points.rgb, (*xy.min(axis=0), *xy.max(axis=0)), self.smrf, ClassSettings())
        return PointCloud(points.xyz, points.rgb, points.views, classes).subset(own)


def classified(cloud: TiledCloud, smrf: SmrfSettings, path: Path, scratch: Path, workers: int) -> TiledCloud:
    with tiled_writer(path, cloud.tiling, scratch, classified=True) as write:
        for tile, points in zip(cloud.tiles, forked_map(ClassifiedTile(cloud, smrf), cloud.tiles, workers)):
            write(tile.col, tile.row, points)
    return TiledCloud.open(path)


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    georef = Georef.load(project)
    cloud = TiledCloud.open(project.filtered_cloud)
    counts: dict[str, int] = {}  # none: the points are not classified
    with tempfile.TemporaryDirectory(prefix="classes.", dir=project.root) as tmp:
        if options.pc_classify and len(cloud):
            workers = workers_within_memory(options.max_concurrency, TILE_WORKING_BYTES)
            cloud = classified(cloud, SmrfSettings.of(options), Path(tmp) / "classified.ply", Path(tmp), workers)
            counts = class_counts(cloud.parts())
            log.info("Point classes: %s", ", ".join(f"{name} {count}" for name, count in counts.items()))
        project.update_stats("classification", counts)
        write_cloud(project, options, cloud, georef, ctx.progress)
    reconstruction = project.read_stats().get("reconstruction", {})
    residuals, checks = reconstruction.get("gcp_residual_m"), reconstruction.get("checkpoint_residual_m")
    if (residuals or checks) and georef.georeferenced:
        write_json(project.control_points_geojson, control_points_geojson(residuals or {}, georef, checks or {}))
    else:
        project.control_points_geojson.unlink(missing_ok=True)  # none of an earlier run with control points
