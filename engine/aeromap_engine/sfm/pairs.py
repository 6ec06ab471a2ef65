"""Which image pairs to match. Matching costs about the same for every pair, overlapping or not, so on a survey
only pairs that can overlap are tried: the nearest cameras by GPS, the triangulation graph of the camera positions
(it links neighbouring flight lines even where the lines are far apart) and the previous and next photographs
in capture order (they overlap even when positions are poor).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.spatial import Delaunay, QhullError, cKDTree

AUTO_NEIGHBORS = 8  # nearest cameras matched per image when matcher-neighbors is 0 (auto)
SEQUENCE_NEIGHBORS = 2  # photographs before and after in capture order
# Without positions every pair is tried up to this many images; beyond, a window in capture order.
EXHAUSTIVE_WITHOUT_GPS = 60
SEQUENCE_WINDOW_WITHOUT_GPS = 20

Pair = tuple[int, int]


def candidate_pairs(positions: np.ndarray, capture_order: list[int], neighbors: int) -> list[Pair]:
    """Sorted pairs (i < j) of image indices.

    positions: (N, 2) horizontal camera positions in metres, NaN where unknown.
    capture_order: image indices sorted by capture time.
    neighbors: nearest cameras per image; 0 lets the engine choose (and adds the triangulation graph).
    """
    n = len(positions)
    k = neighbors or AUTO_NEIGHBORS
    located = np.flatnonzero(np.isfinite(positions).all(axis=1))
    if n <= k + 1:
        return all_pairs(n)
    if len(located) < 3:
        if n <= EXHAUSTIVE_WITHOUT_GPS:
            return all_pairs(n)
        return sorted(sequence_pairs(capture_order, SEQUENCE_WINDOW_WITHOUT_GPS))
    pairs = nearest_pairs(positions[located], k, located) | sequence_pairs(capture_order, SEQUENCE_NEIGHBORS)
    if neighbors == 0:
        pairs |= triangulation_pairs(positions[located], located)
    return sorted(pairs)


def all_pairs(n: int) -> list[Pair]:
    return list(itertools.combinations(range(n), 2))


def nearest_pairs(xy: np.ndarray, k: int, ids: np.ndarray) -> set[Pair]:
    count = min(k + 1, len(xy))
    _, nearest = cKDTree(xy).query(xy, count)
    return {_ordered(ids[i], ids[j]) for i, row in enumerate(nearest) for j in row if j != i}


def triangulation_pairs(xy: np.ndarray, ids: np.ndarray) -> set[Pair]:
    try:
        triangles = Delaunay(xy).simplices
    except QhullError:  # all cameras on one line (a corridor): the nearest neighbours cover it
        return set()
    return {_ordered(ids[a], ids[b]) for t in triangles for a, b in ((t[0], t[1]), (t[1], t[2]), (t[0], t[2]))}


def sequence_pairs(order: list[int], window: int) -> set[Pair]:
    return {_ordered(order[i], order[j]) for i in range(len(order))
            for j in range(i + 1, min(i + 1 + window, len(order)))}


def _ordered(a: int, b: int) -> Pair:
    a, b = int(a), int(b)
    return (a, b) if a < b else (b, a)
