"""The octree of a point cloud for streaming (COPC, EPT): a cube around the cloud, split in eight at each level;
each node holds an even sample of the points in its cube, about one per cell of a `cells`-wide grid over it, so
that a viewer drawing the nodes down to some depth sees the whole cloud at that density. A node whose cube holds
few enough points takes them all and ends its branch. Pure array maths.

Building it is one sort by Morton code and then a pass over the points per level: sorting at every level (as by
np.unique) made its time grow faster than the cloud."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VoxelKey = tuple[int, int, int, int]  # depth, x, y, z


@dataclass(frozen=True)
class Cube:
    center: tuple[float, float, float]
    halfsize: float

    @property
    def origin(self) -> np.ndarray:
        return np.asarray(self.center) - self.halfsize


def bounding_cube(xyz: np.ndarray) -> Cube:
    """The cube, centred on the cloud's bounding box, that holds every point (with a margin against rounding)."""
    low, high = xyz.min(axis=0), xyz.max(axis=0)
    center = (low + high) / 2
    return Cube((float(center[0]), float(center[1]), float(center[2])), float((high - low).max() / 2 * 1.001 + 1e-3))


def _cells_of(xyz: np.ndarray, cube: Cube, per_side: int) -> np.ndarray:
    """Integer cell coordinates of points on a grid of per_side cells along each edge of the cube."""
    cells = np.floor((xyz - cube.origin) / (2 * cube.halfsize / per_side)).astype(np.int64)
    return np.clip(cells, 0, per_side - 1)


def _spread(v: np.ndarray) -> np.ndarray:
    """The bits of each value (< 2**21) moved to every third position: one axis of a Morton code."""
    v = v.astype(np.uint64) & np.uint64(0x1FFFFF)
    for shift, mask in ((32, 0x1F00000000FFFF), (16, 0x1F0000FF0000FF), (8, 0x100F00F00F00F00F),
                        (4, 0x10C30C30C30C30C3), (2, 0x1249249249249249)):
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


def morton_codes(cells: np.ndarray) -> np.ndarray:
    """Morton (Z-order) codes of integer cell coordinates (n, 3): the code of a cell's parent is its code
    shifted right by three bits, so sorting by code puts every octree node's points in one run."""
    return (_spread(cells[:, 0]) << np.uint64(2)) | (_spread(cells[:, 1]) << np.uint64(1)) | _spread(cells[:, 2])


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of equal values in a sorted array."""
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return starts, np.diff(np.r_[starts, keys.size])


def build_octree(xyz: np.ndarray, cube: Cube, cells: int = 128, max_points: int = 100_000, max_depth: int = 10,
                 seed: int = 0) -> dict[VoxelKey, np.ndarray]:
    """The indices of the points each node holds, every point in exactly one node.

    The points are sorted once by the Morton code of their cell on the finest sample grid (a node's at the
    deepest level, `cells` to its edge): every node, and every sample cell of every level, is then one run of
    that order, so each level costs one pass over the points still unplaced instead of a sort. A sample
    cell's point is drawn at random from its run, so that a node's sample is spread over its cube."""
    levels = max_depth + int(np.log2(cells))
    if 2**levels // 2**max_depth != cells or levels > 21:
        raise ValueError("cells must be a power of two, and max_depth + log2(cells) at most 21")
    codes = morton_codes(_cells_of(xyz, cube, 2**levels))
    left = np.argsort(codes, kind="stable")
    codes = codes[left]
    rng = np.random.default_rng(seed)
    nodes: dict[VoxelKey, np.ndarray] = {}
    for depth in range(max_depth + 1):
        if left.size == 0:
            break
        node_starts, node_sizes = _runs(codes >> np.uint64(3 * (levels - depth)))
        whole = np.repeat(node_sizes <= max_points if depth < max_depth else np.ones(node_sizes.size, bool),
                          node_sizes)
        cell_starts, cell_sizes = _runs(codes >> np.uint64(3 * (levels - depth - int(np.log2(cells)))))
        taken = whole.copy()
        taken[cell_starts + (rng.random(cell_starts.size) * cell_sizes).astype(np.int64)] = True
        node_of = np.repeat(np.arange(node_starts.size), node_sizes)
        chosen = np.flatnonzero(taken)
        groups = node_of[chosen]
        bounds = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        corners = _cells_of(xyz[left[chosen[bounds]]], cube, 2**levels) >> (levels - depth)
        for start, end, (x, y, z) in zip(bounds, np.r_[bounds[1:], chosen.size], corners):
            nodes[(depth, int(x), int(y), int(z))] = left[chosen[start:end]]
        left, codes = left[~taken], codes[~taken]
    return nodes


# --- an octree built column by column, for clouds larger than memory -------------------------------------------
#
# The cube is cut into columns, the nodes at `depth` seen from above: each column is read alone. Its points that
# the levels above `depth` take are picked in the column (one random point per sample cell of each of those
# levels, each level from the points the ones above left), so every upper node that holds any of the column's
# points holds one of them and the tree has no gaps; the rest of the column is built as the subtrees of its
# nodes at `depth`, by build_octree on their cubes. Sample cells wider than a column (levels more than
# log2(cells) above `depth`) get a point from each column they cross: a few more points in the coarsest nodes.


def column_counts(xyz: np.ndarray, cube: Cube, depth: int) -> np.ndarray:
    """Points per column of the cube at `depth` ((2**depth, 2**depth), indexed x then y)."""
    per_side = 2**depth
    cells = _cells_of(xyz, cube, per_side)
    return np.bincount(cells[:, 0] * per_side + cells[:, 1], minlength=per_side**2).reshape(per_side, per_side)


def column_depth(counts: np.ndarray, max_points: int) -> int:
    """The shallowest depth (from 1) at which no column of the cube holds more than `max_points` points, given
    the points per column at the finest depth tried (column_counts); that depth when even those are too full."""
    finest = int(np.log2(len(counts)))
    for depth in range(1, finest):
        block = 2 ** (finest - depth)
        if counts.reshape(2**depth, block, 2**depth, block).sum(axis=(1, 3)).max() <= max_points:
            return depth
    return finest


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, starts, sizes): the indices sorting `keys` and the runs of equal keys in that order."""
    order = np.argsort(keys, kind="stable")
    starts, sizes = _runs(keys[order])
    return order, starts, sizes


def column_picks(xyz: np.ndarray, cube: Cube, depth: int, cells: int, seed: int = 0) -> list[np.ndarray]:
    """The indices of a column's points that the levels above `depth` take: one array per level 0..depth-1."""
    rng = np.random.default_rng(seed)
    left = np.arange(len(xyz))
    picks = []
    for level in range(depth):
        order, starts, sizes = _groups(morton_codes(_cells_of(xyz[left], cube, 2**level * cells)))
        chosen = left[order[starts + (rng.random(len(sizes)) * sizes).astype(np.int64)]]
        picks.append(chosen)
        keep = np.ones(len(xyz), dtype=bool)
        keep[chosen] = False
        left = left[keep[left]]
    return picks


def level_nodes(xyz: np.ndarray, cube: Cube, level: int) -> dict[VoxelKey, np.ndarray]:
    """Points that one level takes, grouped by their node at that level."""
    cells = _cells_of(xyz, cube, 2**level)
    order, starts, sizes = _groups(morton_codes(cells))
    return {(level, *map(int, cells[order[start]])): order[start:start + size]
            for start, size in zip(starts, sizes)}


def subtree_nodes(xyz: np.ndarray, cube: Cube, depth: int, cells: int, max_points: int,
                  max_depth: int) -> dict[VoxelKey, np.ndarray]:
    """The nodes from `depth` down of points that lie in one column (the levels above having taken theirs):
    build_octree on the cube of each of the column's nodes at `depth`, keys given in the whole tree."""
    side = 2 * cube.halfsize / 2**depth
    nodes: dict[VoxelKey, np.ndarray] = {}
    for (_, x, y, z), members in level_nodes(xyz, cube, depth).items():
        center = cube.origin + side * (np.array([x, y, z]) + 0.5)
        sub = Cube((float(center[0]), float(center[1]), float(center[2])), side / 2)
        for (d, i, j, k), inside in build_octree(xyz[members], sub, cells, max_points, max_depth - depth).items():
            nodes[(depth + d, x * 2**d + i, y * 2**d + j, z * 2**d + k)] = members[inside]
    return nodes
