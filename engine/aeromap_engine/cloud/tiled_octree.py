"""The streaming octree (cloud/octree.py) of a tiled cloud, node by node: the shared source of every product that
streams the cloud (COPC, 3D Tiles). A cloud of up to PART_POINTS is built in memory; a larger one column by column,
the columns sorted out on disk, so that memory does not grow with the cloud."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .octree import (Cube, VoxelKey, build_octree, column_counts, column_depth, column_picks, level_nodes,
                     subtree_nodes)
from .points import PointCloud
from .tiled import TiledCloud, Tiling, tile_sorted

CELLS = 128  # sample grid of a node along each edge: a node's point spacing is its cube's edge over this
MAX_POINTS = 100_000  # a node whose cube holds no more than this takes them all and ends its branch
MAX_DEPTH = 10
PART_POINTS = 4_000_000  # clouds larger than this are built column by column, each column at most this large
FINEST_COLUMNS = 8  # the narrowest columns tried: the cube cut 2**8 times along x and y


def octree_nodes(cloud: TiledCloud, cube: Cube, scratch: Path) -> Iterator[tuple[VoxelKey, PointCloud]]:
    """Every node of the cloud's octree in `cube` (world frame) with its points, in no particular order; every
    point in exactly one node, and every node's parent among the nodes. `scratch` holds the sorted columns."""
    if len(cloud) <= PART_POINTS:
        whole = PointCloud.concatenate(list(cloud.parts()))
        for key, members in build_octree(whole.xyz, cube, CELLS, MAX_POINTS, MAX_DEPTH).items():
            yield key, whole.subset(members)
    else:
        yield from _by_columns(cloud, cube, scratch)


def _by_columns(cloud: TiledCloud, cube: Cube, scratch: Path) -> Iterator[tuple[VoxelKey, PointCloud]]:
    counts = sum(column_counts(xyz, cube, FINEST_COLUMNS) for xyz in cloud.xyz_by_tile())
    depth = column_depth(counts, PART_POINTS)
    tiling = Tiling(float(cube.origin[0]), float(cube.origin[1]), 2 * cube.halfsize / 2**depth)
    columns = tile_sorted(cloud.parts(), tiling, scratch / "columns.ply", scratch)
    upper: list[list[PointCloud]] = [[] for _ in range(depth)]
    for tile in columns.tiles:
        points = columns.read(tile)
        xyz = points.xyz.astype(np.float64)
        picks = column_picks(xyz, cube, depth, CELLS)
        for level, chosen in enumerate(picks):
            upper[level].append(points.subset(chosen))
        rest = np.ones(len(points), dtype=bool)
        rest[np.concatenate(picks)] = False
        below = points.subset(rest)
        for key, members in subtree_nodes(xyz[rest], cube, depth, CELLS, MAX_POINTS, MAX_DEPTH).items():
            yield key, below.subset(members)
    for level, parts in enumerate(upper):
        taken = PointCloud.concatenate(parts)
        for key, members in level_nodes(taken.xyz.astype(np.float64), cube, level).items():
            yield key, taken.subset(members)
