"""Georeferenced point cloud: the filtered cloud moved back into the CRS (offset added) and written as LAZ
(always), COPC (pc-copc, on by default: the same points in an octree, for viewers that stream them), LAS (pc-las),
CSV (pc-csv) and PLY under odm_georeferencing/; and coords.txt, ODM's record of the CRS and of the offset that
the textured model's coordinates are relative to."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..cloud.tiled import TiledCloud
from ..files import atomic_path
from ..geo import odm_crs_text, parse_crs
from ..georef import Georef
from ..io.copc import write_copc
from ..io.ply import ply_writer
from ..io.pointcloud import write_csv, write_las
from ..log import log
from ..options import Option
from .odm_filterpoints import filtered_cloud_path

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("pc-las", "bool", False, "Also write the georeferenced point cloud in LAS format.", "odm_georeferencing"),
    Option("pc-csv", "bool", False, "Also write the georeferenced point cloud in CSV format (X,Y,Z,Red,Green,Blue).",
           "odm_georeferencing"),
    Option("pc-copc", "bool", True, "Also write the georeferenced point cloud as Cloud Optimized Point Cloud (COPC), "
           "which web viewers and desktop tools stream.", "odm_georeferencing"),
]
WEIGHT = 0.2


def model_path(project: "Project", extension: str) -> Path:
    return project.path("odm_georeferencing", f"odm_georeferenced_model.{extension}")


def coords_path(project: "Project") -> Path:
    return project.path("odm_georeferencing", "coords.txt")


def write_coords(path: Path, georef: Georef) -> None:
    """ODM's coords.txt: the CRS on the first line, the offset (easting northing) on the second."""
    with atomic_path(path) as tmp:
        tmp.write_text(f"{odm_crs_text(parse_crs(georef.crs))}\n{georef.offset[0]:.3f} {georef.offset[1]:.3f}\n")


def run(ctx: "StageContext") -> None:
    write_cloud(ctx, TiledCloud.open(filtered_cloud_path(ctx.project)), Georef.load(ctx.project))


def write_cloud(ctx: "StageContext", cloud: TiledCloud, georef: Georef) -> None:
    """Every format of the cloud (world frame, tiled) moved into the CRS that the options ask for, and coords.txt,
    each written a tile at a time."""
    project, options = ctx.project, ctx.options
    for name in ("las", "csv", "copc.laz"):
        model_path(project, name).unlink(missing_ok=True)  # no stale output from a run with other options
    coords_path(project).unlink(missing_ok=True)
    if georef.crs:
        write_coords(coords_path(project), georef)
    low = cloud.box[0] + [georef.offset[0], georef.offset[1], 0.0] if cloud.box else np.zeros(3)
    write_las(model_path(project, "laz"), cloud.parts(georef.offset), low, georef.crs, compress=True)
    ctx.progress(0.4)
    if options.pc_las:
        write_las(model_path(project, "las"), cloud.parts(georef.offset), low, georef.crs, compress=False)
    if options.pc_csv:
        write_csv(model_path(project, "csv"), cloud.parts(georef.offset))
    with tempfile.TemporaryDirectory(prefix="georeferencing.", dir=project.root) as tmp:
        if options.pc_copc and len(cloud):
            nodes = write_copc(model_path(project, "copc.laz"), cloud, georef.offset, georef.crs, Path(tmp))
            log.info("COPC point cloud: %d octree nodes", nodes)
        ctx.progress(0.8)
        with ply_writer(model_path(project, "ply"), Path(tmp), np.float64,
                        (f"crs {georef.crs}",) if georef.crs else ()) as append:
            for part in cloud.parts(georef.offset):
                append(part)
    log.info("Georeferenced point cloud: %d points%s", len(cloud), f" in {georef.crs}" if georef.crs else
             " (local frame, no CRS)")
