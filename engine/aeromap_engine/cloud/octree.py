"""The octree of a point cloud for streaming (COPC, EPT): a cube around the cloud, split in eight at each level;
each node holds an even sample of the points in its cube, about one per cell of a `cells`-wide grid over it, so
that a viewer drawing the nodes down to some depth sees the whole cloud at that density. A node whose cube holds
few enough points takes them all and ends its branch. Pure array maths."""

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


def _flat(cells: np.ndarray, per_side: int) -> np.ndarray:
    return (cells[:, 0] * per_side + cells[:, 1]) * per_side + cells[:, 2]


def build_octree(xyz: np.ndarray, cube: Cube, cells: int = 128, max_points: int = 100_000, max_depth: int = 10,
                 seed: int = 0) -> dict[VoxelKey, np.ndarray]:
    """The indices of the points each node holds, every point in exactly one node. Points are taken in a random
    order, so that a node's sample is spread over its cube rather than following the order of the file."""
    remaining = np.random.default_rng(seed).permutation(len(xyz))
    nodes: dict[VoxelKey, np.ndarray] = {}
    for depth in range(max_depth + 1):
        if remaining.size == 0:
            break
        per_side = 2**depth
        node_cells = _cells_of(xyz[remaining], cube, per_side)
        node_ids = _flat(node_cells, per_side)
        _, node_of, counts = np.unique(node_ids, return_inverse=True, return_counts=True)
        whole = counts[node_of] <= max_points if depth < max_depth else np.ones(remaining.size, bool)
        # In the other nodes, the first point (in the random order) of each cell of the node's grid.
        sample_ids = _flat(_cells_of(xyz[remaining], cube, per_side * cells), per_side * cells)
        _, first = np.unique(sample_ids, return_index=True)
        taken = whole.copy()
        taken[first] = True
        chosen = np.flatnonzero(taken)
        chosen = chosen[np.argsort(node_of[chosen], kind="stable")]
        groups = node_of[chosen]
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        for start, end in zip(starts, np.r_[starts[1:], chosen.size]):
            members = chosen[start:end]
            x, y, z = node_cells[members[0]]
            nodes[(depth, int(x), int(y), int(z))] = remaining[members]
        remaining = remaining[~taken]
    return nodes
