"""The point cloud as 3D Tiles: one pnts tile per node of the cloud's streaming octree (the COPC's nodes), in the
east-north-up frame at the octree cube's centre, so that a viewer draws the coarse nodes from afar and adds the
finer ones as it comes closer."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic_files import write_json
from ..cloud.octree import Cube, VoxelKey
from ..cloud.points import PointCloud
from ..cloud.tiled_octree import CELLS
from .frame import frame_at
from .pnts import encode_pnts
from .tileset import Content, octree_tiles, tileset

TILESET = "tileset.json"


@dataclass(frozen=True)
class CloudTiles:
    tiles: int
    points: int
    depth: int


def write_cloud_tiles(folder: Path, nodes: Iterable[tuple[VoxelKey, PointCloud]], cube: Cube, crs: str,
                      offset: tuple[float, float]) -> CloudTiles:
    """Fill `folder` (made by the caller) with the tileset of an octree's nodes, given in the world frame (`offset`
    moves them into `crs`) in the cube the octree was built in."""
    shift = np.array([offset[0], offset[1], 0.0])
    frame = frame_at(crs, np.asarray(cube.center) + shift)
    contents: dict[VoxelKey, Content] = {}
    points = 0
    for key, node in nodes:
        local = frame.from_crs(node.xyz.astype(np.float64) + shift)
        center = (local.min(axis=0) + local.max(axis=0)) / 2
        offsets = (local - center).astype(np.float32)
        uri = "{}-{}-{}-{}.pnts".format(*key)
        (folder / uri).write_bytes(encode_pnts(offsets, node.rgb, center))
        # The box of the points as stored (float32 offsets), which a viewer draws.
        contents[key] = Content(uri, offsets.min(axis=0) + center, offsets.max(axis=0) + center)
        points += len(node)
    root_spacing = 2 * cube.halfsize / CELLS
    write_json(folder / TILESET, tileset(octree_tiles(contents, root_spacing), 2 * cube.halfsize, frame.transform))
    return CloudTiles(len(contents), points, max(key[0] for key in contents))
