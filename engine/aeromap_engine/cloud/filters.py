"""Point cloud filters: statistical outlier removal and thinning to a minimum spacing."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from scipy.spatial import cKDTree

# Outlier statistics are computed tile by tile (each with a margin so border points see their real neighbours),
# so the search tree never holds more than about this many points.
TILE_POINTS = 4_000_000


def _tiles(xy: np.ndarray, margin: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(indices of a tile's points, indices of the points within `margin` of it) over a square tiling."""
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    count = max(1, math.ceil(len(xy) / TILE_POINTS))
    side = max(float(np.sqrt(np.prod(np.maximum(hi - lo, 1e-6)) / count)), 1e-3)
    key = np.floor((xy - lo) / side).astype(np.int64)
    cols = int(key[:, 0].max()) + 1
    flat = key[:, 1] * cols + key[:, 0]
    order = np.argsort(flat, kind="stable")
    starts = np.searchsorted(flat[order], np.unique(flat))
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(order)
        core = order[start:end]
        t_lo, t_hi = xy[core].min(axis=0) - margin, xy[core].max(axis=0) + margin
        near = np.flatnonzero(np.all((xy >= t_lo) & (xy <= t_hi), axis=1)) if len(starts) > 1 else core
        yield core, near


def mean_neighbour_distance(xyz: np.ndarray, neighbours: int, margin: float, workers: int = 1) -> np.ndarray:
    """Mean distance from each point to its `neighbours` nearest others."""
    result = np.empty(len(xyz), dtype=np.float32)
    for core, near in _tiles(xyz[:, :2], margin):
        tree = cKDTree(xyz[near])
        distances, _ = tree.query(xyz[core], k=min(neighbours + 1, len(near)), workers=workers)
        result[core] = distances[:, 1:].mean(axis=1) if distances.ndim == 2 else 0.0
    return result


def statistical_inliers(xyz: np.ndarray, sigma: float, neighbours: int = 16, workers: int = 1) -> np.ndarray:
    """Points whose mean distance to their neighbours is within `sigma` standard deviations of the mean of all
    points (isolated points have far neighbours)."""
    if len(xyz) <= neighbours:
        return np.ones(len(xyz), dtype=bool)
    margin = 10 * _typical_spacing(xyz)
    distances = mean_neighbour_distance(xyz, neighbours, margin, workers)
    return distances <= distances.mean() + sigma * distances.std()


def _typical_spacing(xyz: np.ndarray) -> float:
    """Rough point spacing on the ground (m) from the points' footprint area."""
    extent = np.ptp(xyz[:, :2], axis=0)
    return float(np.sqrt(max(extent[0] * extent[1], 1e-6) / len(xyz)))


def thin(xyz: np.ndarray, radius: float) -> np.ndarray:
    """Sorted indices of points kept so that no two lie closer than `radius` and every dropped point has a kept
    one within it (Poisson-disk sampling, as ODM's pc-sample)."""
    kept = np.zeros(0, dtype=np.int64)
    remaining = np.arange(len(xyz))
    while len(remaining):
        chosen = remaining[_independent(xyz[remaining], radius)]
        if len(kept):  # a point may not come closer than the radius to those kept in earlier rounds
            chosen = chosen[cKDTree(xyz[kept]).query(xyz[chosen], distance_upper_bound=radius)[0] >= radius]
        if not len(chosen):
            break
        kept = np.concatenate([kept, chosen])
        # Points farther than the radius from every kept point would leave holes: they take part again.
        remaining = remaining[cKDTree(xyz[kept]).query(xyz[remaining], distance_upper_bound=radius)[0] >= radius]
    return np.sort(kept)


def _independent(xyz: np.ndarray, radius: float) -> np.ndarray:
    """Indices of points no two of which lie closer than `radius`."""
    # Cells with a diagonal of `radius` hold at most one of them: take the first of each, then settle the
    # conflicts left between neighbouring cells.
    keys = np.floor((xyz - xyz.min(axis=0)) / (radius / np.sqrt(3))).astype(np.int64)
    dims = keys.max(axis=0) + 1
    _, first = np.unique(keys[:, 0] + dims[0] * (keys[:, 1] + dims[1] * keys[:, 2]), return_index=True)
    candidates = np.sort(first)
    pairs = cKDTree(xyz[candidates]).query_pairs(radius, output_type="ndarray")
    # Random priorities settle conflicts in a few rounds (Luby's independent set): an undecided point that
    # outranks all its undecided neighbours is kept, and those neighbours are dropped.
    rank = np.random.default_rng(0).permutation(len(candidates))
    loser = np.where(rank[pairs[:, 0]] < rank[pairs[:, 1]], pairs[:, 1], pairs[:, 0])
    winner = pairs[:, 0] + pairs[:, 1] - loser
    state = np.zeros(len(candidates), dtype=np.int8)  # 0 undecided, 1 kept, -1 dropped
    while True:
        open_pair = (state[winner] == 0) & (state[loser] == 0)
        if not open_pair.any():
            break
        outranked = np.zeros(len(candidates), dtype=bool)
        outranked[loser[open_pair]] = True
        state[(state == 0) & ~outranked] = 1
        for a, b in ((winner, loser), (loser, winner)):
            beaten = b[(state[a] == 1) & (state[b] == 0)]
            state[beaten] = -1
    return candidates[state >= 0]
