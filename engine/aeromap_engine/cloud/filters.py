"""Point cloud filters: statistical outlier removal and thinning to a minimum spacing.

The outlier statistic is local: a point's mean distance to its neighbours is compared with the mean and spread of
that distance among the points around it, not over the whole cloud. Density falls naturally with distance from
the cameras (high GSD, far edges, obliques), and a global statistic would cut those regions away whole; an
isolated point still stands out against the points around it wherever it is."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

QUERY_POINTS = 250_000  # points whose neighbours are asked for at once


def mean_neighbour_distance(xyz: np.ndarray, neighbours: int, workers: int = 1) -> np.ndarray:
    """Mean distance from each point to its `neighbours` nearest others (a tile of the cloud with its margin:
    odm_filterpoints works tile by tile)."""
    result = np.empty(len(xyz), dtype=np.float32)
    tree = cKDTree(xyz)
    k = min(neighbours + 1, len(xyz))
    # The query answers k distances and indices of 8 bytes each per point: asked for a large cloud at once, they
    # would take more memory than the tree and the cloud together.
    for start in range(0, len(xyz), QUERY_POINTS):
        distances, _ = tree.query(xyz[start:start + QUERY_POINTS], k=k, workers=workers)
        result[start:start + QUERY_POINTS] = distances[:, 1:].mean(axis=1) if distances.ndim == 2 else 0.0
    return result


def statistical_inliers(xyz: np.ndarray, sigma: float, neighbours: int = 16, workers: int = 1) -> np.ndarray:
    """Points whose mean distance to their neighbours is within `sigma` standard deviations of the mean among the
    points around them (isolated points have far neighbours; a sparse region's points all have)."""
    if len(xyz) <= neighbours:
        return np.ones(len(xyz), dtype=bool)
    distances = mean_neighbour_distance(xyz, neighbours, workers).astype(np.float64)
    regions = Regions(xyz[:, :2].astype(np.float64), REGION_SPACINGS * median_spacing(xyz),
                      REGION_POINTS * neighbours)
    # The outliers' own distances would widen the spread of the region they are in and shelter each other:
    # the statistic is taken again without the points it clearly rejects (sigma clipping).
    weight = np.ones(len(xyz))
    for _ in range(CLIP_ROUNDS):
        weight = (distances <= regions.limit(distances, weight, CLIP_SIGMA)).astype(np.float64)
    return distances <= regions.limit(distances, weight, sigma)


# The finest regions are squares of this many point spacings (about a thousand points where the cloud is dense);
# a region needs this many times the neighbours (of the points kept by clipping) to give a statistic, else the
# next coarser level is used.
REGION_SPACINGS = 32
REGION_POINTS = 2
# A region of very regularly spaced points has almost no spread; its edges (half a neighbourhood missing) would
# stand out. The spread taken is at least this fraction of the mean.
MIN_RELATIVE_STD = 0.15
CLIP_SIGMA = 3.0
CLIP_ROUNDS = 2
MAX_LEVELS = 24


def median_spacing(xyz: np.ndarray, sample: int = 20_000, total: int | None = None) -> float:
    """The median distance between neighbouring points, from a random sample (scaled to the whole cloud's
    density); `total` is the size of the cloud when xyz is already a uniform sample of it."""
    if len(xyz) < 2:
        return 1.0
    picked = xyz[np.random.default_rng(0).choice(len(xyz), min(len(xyz), sample), replace=False)]
    distances, _ = cKDTree(picked).query(picked, k=2)
    return max(float(np.median(distances[:, 1])) * math.sqrt(len(picked) / (total or len(xyz))), 1e-6)


class Regions:
    """The regions around points: the 3 x 3 square cells of `size` metres around each point, or of twice that
    size where those hold fewer than `min_points` (weighted) points, and so on (an isolated point's region grows
    until it takes in the surface around it). Cells are hashed, so far-apart parts cost nothing between them."""

    def __init__(self, xy: np.ndarray, size: float, min_points: float) -> None:
        self.xy, self.size, self.min_points = xy, size, min_points
        self._origin = xy.min(axis=0)
        self._levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _level(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """(sorted cell keys, each point's index into them) at a level, computed once."""
        if level not in self._levels:
            key = np.floor((self.xy - self._origin) / (self.size * 2**level)).astype(np.int64)
            self._levels[level] = np.unique((key[:, 0] << 32) | key[:, 1], return_inverse=True)
        return self._levels[level]

    def statistics(self, values: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per point, the weighted mean and standard deviation of `values` over its region."""
        mean, std = np.zeros(len(values)), np.zeros(len(values))
        todo = np.arange(len(values))
        for level in range(MAX_LEVELS):
            cells, inverse = self._level(level)
            sums = np.stack([np.bincount(inverse, weights=w, minlength=len(cells))
                             for w in (weight, weight * values, weight * values**2)])
            wanted = np.unique(inverse[todo])  # the cells of the points still without a statistic
            totals = np.zeros((3, len(wanted)))
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    neighbour = cells[wanted] + (dx << 32) + dy
                    at = np.minimum(np.searchsorted(cells, neighbour), len(cells) - 1)
                    found = cells[at] == neighbour
                    totals[:, found] += sums[:, at[found]]
            enough = (totals[0] >= self.min_points) | (level == MAX_LEVELS - 1) | (len(cells) == 1)
            slot = np.searchsorted(wanted, inverse[todo])
            done = enough[slot]
            count, first, second = totals[:, slot[done]]
            count = np.maximum(count, 1e-12)
            mean[todo[done]] = first / count
            std[todo[done]] = np.sqrt(np.maximum(second / count - (first / count) ** 2, 0.0))
            todo = todo[~done]
            if not len(todo):
                break
        return mean, std

    def limit(self, values: np.ndarray, weight: np.ndarray, sigma: float) -> np.ndarray:
        """Per point, its region's mean plus `sigma` standard deviations (at least MIN_RELATIVE_STD of the mean)."""
        mean, std = self.statistics(values, weight)
        return mean + sigma * np.maximum(std, MIN_RELATIVE_STD * mean)


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
