"""Georeferenced point cloud outputs: LAS/LAZ (with the CRS as a WKT VLR), PLY and CSV, in CRS coordinates."""

from __future__ import annotations

from pathlib import Path

import laspy
import numpy as np
import pyproj

from ..cloud.points import PointCloud
from ..files import atomic_path

LAS_SCALE = 0.001  # 1 mm: finer than any photogrammetric point's precision


def write_las(path: Path, cloud: PointCloud, crs: str | None, compress: bool) -> None:
    """LAS 1.4, point format 7 (RGB), so the CRS is stored as WKT; colours scaled to 16 bits as the format
    defines; the number of views that agree on each point goes into user_data, as ODM does."""
    header = laspy.LasHeader(point_format=7, version="1.4")
    header.scales = np.full(3, LAS_SCALE)
    header.offsets = np.floor(cloud.xyz.min(axis=0)) if len(cloud) else np.zeros(3)
    if crs is not None:
        header.add_crs(pyproj.CRS.from_user_input(crs))
    las = laspy.LasData(header)
    las.x, las.y, las.z = cloud.xyz[:, 0], cloud.xyz[:, 1], cloud.xyz[:, 2]
    rgb16 = cloud.rgb.astype(np.uint16) * 257
    las.red, las.green, las.blue = rgb16[:, 0], rgb16[:, 1], rgb16[:, 2]
    las.user_data = cloud.views
    with atomic_path(path) as tmp:
        las.write(str(tmp), do_compress=compress)


def write_csv(path: Path, cloud: PointCloud) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            f.write("X,Y,Z,Red,Green,Blue\n")
            np.savetxt(f, np.c_[cloud.xyz, cloud.rgb], fmt=["%.3f", "%.3f", "%.3f", "%d", "%d", "%d"], delimiter=",")
