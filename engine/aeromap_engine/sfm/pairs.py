"""Which image pairs to match. Matching costs about the same for every pair, overlapping or not, so on a survey
only pairs that can overlap are tried: the nearest cameras by GPS, the triangulation graph of the camera positions
(it links neighbouring flight lines even where the lines are far apart) and the previous and next photographs
in capture order (they overlap even when positions are poor). Images without a position are paired instead with the
images that look most like them (see retrieval.py): capture order alone misses the neighbouring flight lines.
Oblique photographs are paired both ways: they see the same façade from far apart, where positions alone would
never pair them. Photographs taken from one spot (the views of a 360° panorama, the cameras of a multi-camera
rig) are one station: neighbours are found among stations, and every view of a station is paired with every
view of its neighbours, which the nearest cameras alone would fill with the station's own views. Such a view
meets every view of each neighbouring station, so stations of several views take half as many neighbours: the
pairs, and matching's time, grow with the square of the views.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.spatial import Delaunay, QhullError, cKDTree

from ..log import log
from .retrieval import most_similar

AUTO_NEIGHBORS = 8  # nearest cameras matched per image when matcher-neighbors is 0 (auto)
SEQUENCE_NEIGHBORS = 2  # photographs before and after in capture order
# Without positions every pair is tried up to this many images; beyond, the most similar images.
EXHAUSTIVE_WITHOUT_GPS = 60
# Two nadir photographs overlap only within about a footprint of each other, a few times the distance at which
# overlapping pairs typically lie; a pair verified from farther apart was matched on repeated texture.
FAR_PAIR_FACTOR = 4.0
LOW_CAMERAS_PERCENTILE = 5.0  # the height of the lowest flight, robust to a few wild fixes below it

Pair = tuple[int, int]


def candidate_pairs(positions: np.ndarray, capture_order: list[int], neighbors: int,
                    signatures: np.ndarray | None = None, oblique: np.ndarray | None = None,
                    order_neighbors: int = 0) -> list[Pair]:
    """Sorted pairs (i < j) of image indices.

    positions: (N, 2) horizontal camera positions in metres, NaN where unknown.
    capture_order: image indices sorted by capture time.
    neighbors: nearest cameras per image; 0 lets the engine choose (and adds the triangulation graph).
    signatures: (N, K) image signatures (retrieval.signatures) when uses_retrieval; images without a position
        (every image when fewer than 3 have one) and oblique ones are paired with their most similar images.
    oblique: (N,) whether each photograph looks far from straight down.
    order_neighbors: photographs before and after each in capture order paired with it (matcher-order), beside
        the SEQUENCE_NEIGHBORS always paired.
    """
    n = len(positions)
    k = neighbors or AUTO_NEIGHBORS
    if exhaustive(positions, neighbors):
        return all_pairs(n)
    located = _located(positions)
    pairs = sequence_pairs(capture_order, max(SEQUENCE_NEIGHBORS, order_neighbors))
    if len(located) >= 3:
        stations, members = group_stations(positions[located], located)
        several = max(len(views) for views in members) > 1
        linked = nearest_pairs(stations, max(2, k // 2) if several else k, np.arange(len(stations)))
        if neighbors == 0:
            linked |= triangulation_pairs(stations, np.arange(len(stations)))
        pairs |= station_pairs(linked, members)
        seekers = np.setdiff1d(np.arange(n), located)
        if oblique is not None:
            seekers = np.union1d(seekers, np.flatnonzero(oblique))
    else:
        seekers = np.arange(n)
    if signatures is not None and len(seekers):
        found = retrieval_pairs(signatures, seekers, k)
        log.info("Image retrieval found %d candidate pairs for %d images without a position or oblique (%d not "
                 "otherwise paired)", len(found), len(seekers), len(found - pairs))
        pairs |= found
    return sorted(pairs)


def exhaustive(positions: np.ndarray, neighbors: int) -> bool:
    """Whether every pair is tried: sets too small to choose from, and small sets without positions."""
    n = len(positions)
    return n <= (neighbors or AUTO_NEIGHBORS) + 1 or (len(_located(positions)) < 3 and n <= EXHAUSTIVE_WITHOUT_GPS)


def uses_retrieval(positions: np.ndarray, neighbors: int, oblique: np.ndarray) -> bool:
    """Whether candidate_pairs pairs some images by their signatures."""
    return not exhaustive(positions, neighbors) and (len(_located(positions)) < len(positions) or oblique.any())


def retrieval_pairs(signatures: np.ndarray, queries: np.ndarray, k: int) -> set[Pair]:
    similar = most_similar(signatures, queries, k)
    return {_ordered(q, j) for q, row in zip(queries, similar) for j in row}


def _located(positions: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.isfinite(positions).all(axis=1))


def all_pairs(n: int) -> list[Pair]:
    return list(itertools.combinations(range(n), 2))


def nearest_pairs(xy: np.ndarray, k: int, ids: np.ndarray) -> set[Pair]:
    count = min(k + 1, len(xy))
    _, nearest = cKDTree(xy).query(xy, count)
    return {_ordered(ids[i], ids[j]) for i, row in enumerate(nearest) for j in row if j != i}


def group_stations(xy: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct positions (to the centimetre) and the image indices taken at each."""
    stations, station_of = np.unique(np.round(xy, 2), axis=0, return_inverse=True)
    return stations, [ids[station_of.ravel() == s] for s in range(len(stations))]


def station_pairs(linked: set[Pair], members: list[np.ndarray]) -> set[Pair]:
    """Every image pair of linked stations, and of the views within each station."""
    pairs = {_ordered(a, b) for s, t in linked for a in members[s] for b in members[t]}
    pairs |= {_ordered(a, b) for views in members for a, b in itertools.combinations(views, 2)}
    return pairs


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


def contradicting_pairs(pairs: list[tuple[str, str]], positions: dict[str, np.ndarray], nadir: set[str],
                        footprint_ratios: dict[str, float]) -> list[tuple[str, str]]:
    """Verified pairs of nadir photographs whose GPS positions lie too far apart for their views to overlap:
    farther than the sum of their footprint radii (footprint_radii)."""
    located = [(a, b) for a, b in pairs if a in positions and b in positions]
    if len(located) < 3:
        return []
    distances = np.array([np.linalg.norm(positions[a][:2] - positions[b][:2]) for a, b in located])
    radii = footprint_radii(positions, footprint_ratios, FAR_PAIR_FACTOR / 2 * float(np.median(distances)))
    return [(a, b) for (a, b), d in zip(located, distances)
            if d > radii[a] + radii[b] and a in nadir and b in nadir]


def footprint_radii(positions: dict[str, np.ndarray], footprint_ratios: dict[str, float], lowest_radius: float
                    ) -> dict[str, float]:
    """Each camera's reach on the ground: the lowest cameras' radius, which the distances between verified pairs
    tell (no height above the ground is known before the model: a barometer's is above the take-off point),
    grown by the camera's height above them times its footprint ratio (half the image diagonal over the focal
    length), so that a flight at several altitudes keeps the higher flights' pairs."""
    heights = {name: float(xyz[2]) for name, xyz in positions.items()}
    lowest = float(np.percentile(list(heights.values()), LOW_CAMERAS_PERCENTILE))
    return {name: lowest_radius + max(0.0, z - lowest) * footprint_ratios.get(name, 0.0)
            for name, z in heights.items()}
