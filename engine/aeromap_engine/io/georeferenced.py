"""The georeferenced point cloud's files under odm_georeferencing/: the cloud moved back into the CRS (offset added)
as LAZ (always), COPC, LAS, CSV and PLY, as the options ask; and coords.txt, ODM's record of the CRS and of the
offset that the textured model's coordinates are relative to."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..atomic_files import atomic_path
from ..cloud.tiled import TiledCloud
from ..crs_offset import Georef
from ..geo import odm_crs_text, parse_crs
from ..log import log
from ..options import Options
from .copc import write_copc
from .ply import ply_writer
from .pointcloud import write_csv, write_las

if TYPE_CHECKING:
    from ..project import Project


def write_coords(path: Path, georef: Georef) -> None:
    """ODM's coords.txt: the CRS on the first line, the offset (easting northing) on the second."""
    with atomic_path(path) as tmp:
        tmp.write_text(f"{odm_crs_text(parse_crs(georef.crs))}\n{georef.offset[0]:.3f} {georef.offset[1]:.3f}\n")


def write_cloud(project: "Project", options: Options, cloud: TiledCloud, georef: Georef,
                progress: Callable[[float], None]) -> None:
    """Every format of the cloud (world frame, tiled) moved into the CRS that the options ask for, and coords.txt,
    each written a tile at a time."""
    for name in ("las", "csv", "copc.laz"):
        project.georeferenced_model(name).unlink(missing_ok=True)  # no stale output from a run with other options
    project.coords_file.unlink(missing_ok=True)
    if georef.crs:
        write_coords(project.coords_file, georef)
    low = cloud.box[0] + [georef.offset[0], georef.offset[1], 0.0] if cloud.box else np.zeros(3)
    write_las(project.georeferenced_model("laz"), cloud.parts(georef.offset), low, georef.crs, compress=True)
    progress(0.4)
    if options.pc_las:
        write_las(project.georeferenced_model("las"), cloud.parts(georef.offset), low, georef.crs, compress=False)
    if options.pc_csv:
        write_csv(project.georeferenced_model("csv"), cloud.parts(georef.offset))
    with tempfile.TemporaryDirectory(prefix="georeferencing.", dir=project.root) as tmp:
        if options.pc_copc and len(cloud):
            nodes = write_copc(project.georeferenced_model("copc.laz"), cloud, georef.offset, georef.crs, Path(tmp))
            log.info("COPC point cloud: %d octree nodes", nodes)
        progress(0.8)
        with ply_writer(project.georeferenced_model("ply"), Path(tmp), np.float64,
                        (f"crs {georef.crs}",) if georef.crs else (), cloud.classified) as append:
            for part in cloud.parts(georef.offset):
                append(part)
    log.info("Georeferenced point cloud: %d points%s", len(cloud), f" in {georef.crs}" if georef.crs else
             " (local frame, no CRS)")
