"""COPC 1.0 writing (a LAZ 1.4 file whose chunks are the nodes of an octree, with the hierarchy in an EVLR), with
copclib: we build the octree, copclib compresses each node and writes the hierarchy and the COPC info VLR.
Point format 7: 16-bit RGB, the CRS as WKT, and the view count in user_data as in the LAZ."""

from __future__ import annotations

from pathlib import Path

import copclib
import laspy
import numpy as np
import pyproj

from ..cloud.octree import bounding_cube, build_octree
from ..cloud.points import PointCloud
from ..files import atomic_path

POINT_FORMAT = 7
LAS_SCALE = 0.001
CELLS = 128  # sample grid of a node along each edge: COPC's spacing is the root's cube over this


def write_copc(path: Path, cloud: PointCloud, crs: str | None) -> int:
    """Writes the cloud as COPC and answers the number of octree nodes."""
    offset = np.floor(cloud.xyz.min(axis=0))
    wkt = pyproj.CRS.from_user_input(crs).to_wkt() if crs else ""
    config = copclib.CopcConfigWriter(POINT_FORMAT, copclib.Vector3(LAS_SCALE, LAS_SCALE, LAS_SCALE),
                                      copclib.Vector3(*map(float, offset)), wkt)
    cube = bounding_cube(cloud.xyz)
    info = config.copc_info
    info.center_x, info.center_y, info.center_z = cube.center
    info.halfsize = cube.halfsize
    info.spacing = 2 * cube.halfsize / CELLS
    header = laspy.LasHeader(point_format=POINT_FORMAT, version="1.4")
    header.scales, header.offsets = np.full(3, LAS_SCALE), offset
    nodes = build_octree(cloud.xyz, cube, cells=CELLS)
    with atomic_path(path) as tmp:
        writer = copclib.FileWriter(str(tmp), config)
        try:
            for (depth, x, y, z), members in sorted(nodes.items()):
                records = laspy.ScaleAwarePointRecord.zeros(len(members), header=header)
                xyz = cloud.xyz[members]
                records.x, records.y, records.z = xyz[:, 0], xyz[:, 1], xyz[:, 2]
                rgb16 = cloud.rgb[members].astype(np.uint16) * 257
                records.red, records.green, records.blue = rgb16[:, 0], rgb16[:, 1], rgb16[:, 2]
                records.user_data = cloud.views[members]
                writer.AddNode(copclib.VoxelKey(depth, x, y, z), copclib.VectorChar(records.array.view(np.int8)))
            las_header = writer.copc_config.las_header
            las_header.min = copclib.Vector3(*map(float, cloud.xyz.min(axis=0)))
            las_header.max = copclib.Vector3(*map(float, cloud.xyz.max(axis=0)))
        finally:
            writer.Close()
    return len(nodes)
