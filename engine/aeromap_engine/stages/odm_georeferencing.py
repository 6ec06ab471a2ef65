"""Georeferenced point cloud: the filtered cloud moved back into the CRS (offset added) and written as LAZ
(always), COPC (pc-copc, on by default: the same points in an octree, for viewers that stream them), LAS (pc-las),
CSV (pc-csv) and PLY under odm_georeferencing/; and coords.txt, ODM's record of the CRS and of the offset that
the textured model's coordinates are relative to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cloud.tiled import TiledCloud
from ..crs_offset import Georef
from ..io.georeferenced import write_cloud
from ..options import Option

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
    write_cloud(ctx.project, ctx.options, TiledCloud.open(ctx.project.filtered_cloud), Georef.load(ctx.project),
                ctx.progress)
