"""COPC 1.0 writing (a LAZ 1.4 file whose chunks are the nodes of an octree, with the hierarchy in an EVLR), with
copclib: we build the octree, copclib compresses each node and writes the hierarchy and the COPC info VLR.
Point format 7: 16-bit RGB, the CRS as WKT, and the view count in user_data as in the LAZ."""

from __future__ import annotations

from pathlib import Path

import copclib
import laspy
import numpy as np
import pyproj

from ..atomic_files import atomic_path
from ..cloud.octree import Cube, VoxelKey, bounding_cube
from ..cloud.points import PointCloud
from ..cloud.tiled import TiledCloud
from ..cloud.tiled_octree import CELLS, octree_nodes

POINT_FORMAT = 7
LAS_SCALE = 0.001


def write_copc(path: Path, cloud: TiledCloud, offset: tuple[float, float], crs: str | None,
               scratch: Path) -> int:
    """Writes a tiled cloud (world frame; `offset` moves it into the CRS) as COPC and answers the number of
    octree nodes (cloud/tiled_octree.py: in memory, or column by column for a large cloud)."""
    low, high = cloud.box
    shift = np.array([offset[0], offset[1], 0.0])
    cube = bounding_cube(np.array([low, high], dtype=np.float64))
    with atomic_path(path) as tmp, _Writer(tmp, cube, low + shift, high + shift, shift, crs) as writer:
        for key, points in octree_nodes(cloud, cube, scratch):
            writer.add(key, points)
        return writer.nodes


class _Writer:
    """copclib's file writer with the cloud's header: nodes are added in any order, each a PointCloud in the
    world frame, moved by `shift` into the CRS."""

    def __init__(self, path: Path, cube: Cube, low: np.ndarray, high: np.ndarray, shift: np.ndarray,
                 crs: str | None) -> None:
        self.shift, self.nodes = shift, 0
        offset = np.floor(low)
        wkt = pyproj.CRS.from_user_input(crs).to_wkt() if crs else ""
        config = copclib.CopcConfigWriter(POINT_FORMAT, copclib.Vector3(LAS_SCALE, LAS_SCALE, LAS_SCALE),
                                          copclib.Vector3(*map(float, offset)), wkt)
        info = config.copc_info
        info.center_x, info.center_y, info.center_z = (float(c) for c in np.asarray(cube.center) + shift)
        info.halfsize = cube.halfsize
        info.spacing = 2 * cube.halfsize / CELLS
        self.header = laspy.LasHeader(point_format=POINT_FORMAT, version="1.4")
        self.header.scales, self.header.offsets = np.full(3, LAS_SCALE), offset
        self.writer = copclib.FileWriter(str(path), config)
        self.low, self.high = low, high

    def __enter__(self) -> "_Writer":
        return self

    def add(self, key: VoxelKey, points: PointCloud) -> None:
        records = laspy.ScaleAwarePointRecord.zeros(len(points), header=self.header)
        xyz = points.xyz.astype(np.float64) + self.shift
        records.x, records.y, records.z = xyz[:, 0], xyz[:, 1], xyz[:, 2]
        rgb16 = points.rgb.astype(np.uint16) * 257
        records.red, records.green, records.blue = rgb16[:, 0], rgb16[:, 1], rgb16[:, 2]
        records.user_data = points.views
        if points.classes is not None:
            records.classification = points.classes
        if points.intensity is not None:
            records.intensity = points.intensity
        self.writer.AddNode(copclib.VoxelKey(*key), copclib.VectorChar(records.array.view(np.int8)))
        self.nodes += 1

    def __exit__(self, *failure: object) -> None:
        try:
            if failure[0] is None:
                las_header = self.writer.copc_config.las_header
                las_header.min = copclib.Vector3(*map(float, self.low))
                las_header.max = copclib.Vector3(*map(float, self.high))
        finally:
            self.writer.Close()
