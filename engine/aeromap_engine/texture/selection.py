"""Which photograph textures each face.

A view is a candidate for a face when all the face's corners fall in its frame, the face turns its front to the
camera and the mesh itself does not hide it (a z-buffer of the mesh per view). The view's quality for the face
is the face's projected area in pixels (near, frontal views, which show it with the most detail). The choice is
smoothed over the mesh: a Potts model, with data cost 1 - quality / the face's best quality and a fixed cost for
each edge between faces of different views, minimised by iterated conditional modes (over sets of faces no two
of which are neighbours) and by moves of whole regions of one view to a neighbouring region's view, which merge
the blobs that single-face moves leave where two views are about as good.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..dense.views import View
from ..ortho.visibility import Projection, mesh_zbuffer, visible

CANDIDATES = 8  # the best views kept per face
SMOOTHNESS = 1.0  # cost of an edge between faces of different views, against data costs in [0, 1]
MAX_SWEEPS = 12
MAX_MERGES = 20
# Z-buffer buckets along a face's projected edge (the median face's): thin occluders (poles, branches) register.
BUCKETS_PER_EDGE = 2.0
# Barycentric points of a face that must all be seen: its centroid and three points towards its corners (the
# corners themselves are shared with neighbours that may be hidden while the face is not).
PROBES = np.array([[2, 2, 2], [4, 1, 1], [1, 4, 1], [1, 1, 4]], np.float32) / np.float32(6)


@dataclass
class Candidates:
    """The best views of each face: view indices (F, K), -1 in unused slots, and their quality (F, K), 0 there."""

    views: np.ndarray
    quality: np.ndarray

    @staticmethod
    def empty(faces: int, slots: int = CANDIDATES) -> "Candidates":
        return Candidates(np.full((faces, slots), -1, np.int32), np.zeros((faces, slots), np.float32))

    def offer(self, view: int, faces: np.ndarray, quality: np.ndarray) -> None:
        """A view seen by `faces` with these qualities: each face takes it in place of its worst candidate when
        it is better."""
        worst = self.quality[faces].argmin(axis=1)
        better = quality > self.quality[faces, worst]
        self.views[faces[better], worst[better]] = view
        self.quality[faces[better], worst[better]] = quality[better]

    def costs(self) -> np.ndarray:
        """Data costs (F, K): 0 for a face's best view, towards 1 for views far worse; inf in unused slots."""
        best = self.quality.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            cost = 1 - self.quality / best
        return np.where(self.views >= 0, cost, np.inf).astype(np.float32)


def face_candidates(vertices: np.ndarray, faces: np.ndarray, views: Sequence[View],
                    progress: Callable[[float], None] | None = None) -> Candidates:
    candidates = Candidates.empty(len(faces))
    for number, view in enumerate(views):
        seen, quality = view_quality(view, vertices, faces)
        candidates.offer(number, seen, quality)
        if progress is not None:
            progress((number + 1) / len(views))
    return candidates


def view_quality(view: View, vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The faces `view` sees (indices) and its quality for each."""
    projection = Projection.of(view, vertices)
    framed = np.flatnonzero(projection.in_image[faces].all(axis=1))
    u, v = projection.u[faces[framed]], projection.v[faces[framed]]
    # Image rows run downwards: a face seen from its front (counter-clockwise) turns clockwise in the image.
    area = 0.5 * ((u[:, 2] - u[:, 0]) * (v[:, 1] - v[:, 0]) - (u[:, 1] - u[:, 0]) * (v[:, 2] - v[:, 0]))
    front = area > 0
    framed, u, v, area = framed[front], u[front], v[front], area[front]
    if not len(framed):
        return framed, np.zeros(0, np.float32)
    edges = np.hypot(u - np.roll(u, 1, axis=1), v - np.roll(v, 1, axis=1))
    bucket = max(1.0, float(np.median(edges)) / BUCKETS_PER_EDGE)
    buffer = mesh_zbuffer(projection, faces, bucket, (view.camera.height, view.camera.width))
    depth = projection.depth[faces[framed]]
    inside = np.ones(len(PROBES) * len(framed), dtype=bool)
    probes = Projection((PROBES @ u.T).ravel(), (PROBES @ v.T).ravel(), (PROBES @ depth.T).ravel(), inside, inside)
    seen = visible(probes, buffer, bucket).reshape(len(PROBES), -1).all(axis=0)
    return framed[seen], area[seen].astype(np.float32)


def adjacent_faces(faces: np.ndarray) -> np.ndarray:
    """Pairs (E, 2) of faces that share an edge (where more than two share one, each with the next)."""
    if not len(faces):
        return np.zeros((0, 2), np.int32)
    ends = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2).astype(np.int64), axis=1)
    key = ends[:, 0] * (int(faces.max()) + 1) + ends[:, 1]
    order = np.argsort(key, kind="stable")
    same = key[order[1:]] == key[order[:-1]]
    pairs = np.c_[order[:-1][same] // 3, order[1:][same] // 3]
    return pairs[pairs[:, 0] != pairs[:, 1]].astype(np.int32)


def neighbour_table(pairs: np.ndarray, count: int) -> np.ndarray:
    """Each face's neighbours (count, D), padded with -1."""
    a, b = np.r_[pairs[:, 0], pairs[:, 1]], np.r_[pairs[:, 1], pairs[:, 0]]
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    rank = np.arange(len(a)) - np.searchsorted(a, a)
    table = np.full((count, int(rank.max()) + 1 if len(a) else 1), -1, np.int32)
    table[a, rank] = b
    return table


def independent_sets(table: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """The faces split into sets that hold no two neighbours (greedy colouring by random priority), so that a
    whole set can change its labels at once and every change still lowers the energy."""
    priority = rng.permutation(len(table)).astype(np.int64)
    remaining = np.ones(len(table), dtype=bool)
    sets = []
    while remaining.any():
        live = np.append(np.where(remaining, priority, -1), -1)  # the appended -1 answers the table's padding
        chosen = remaining & (live[:-1] > live[table].max(axis=1))
        sets.append(np.flatnonzero(chosen))
        remaining &= ~chosen
    return sets


def select_views(candidates: Candidates, pairs: np.ndarray, smoothness: float = SMOOTHNESS) -> np.ndarray:
    """The view of each face (-1 where no view sees it): each face's best view, then ICM sweeps, then moves of
    whole regions to a neighbouring region's view (which ICM, one face at a time, cannot find: a blob of faces
    that prefer another view by a hair stays), then ICM again for the new borders."""
    costs = candidates.costs()
    seen = np.isfinite(costs).any(axis=1)
    labels = np.where(seen, candidates.views[np.arange(len(costs)), costs.argmin(axis=1)], -1)
    if not seen.any():
        return labels
    table = neighbour_table(pairs, len(labels))
    sets = [members[seen[members]] for members in independent_sets(table, np.random.default_rng(0))]
    _icm(labels, candidates, costs, table, sets, smoothness)
    for _ in range(MAX_MERGES):
        if not _merge_regions(labels, candidates, costs, pairs, smoothness):
            break
    _icm(labels, candidates, costs, table, sets, smoothness)
    return labels


def connected_regions(labels: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Each face's region (-1 for faces without a view): components of the graph of adjacent faces that share a
    view."""
    same = (labels[pairs[:, 0]] == labels[pairs[:, 1]]) & (labels[pairs[:, 0]] >= 0)
    count = len(labels)
    graph = coo_matrix((np.ones(int(same.sum()), np.int8), (pairs[same, 0], pairs[same, 1])), shape=(count, count))
    component = connected_components(graph, directed=False)[1]
    region = np.full(count, -1, np.int32)
    kept = labels >= 0
    region[kept] = np.unique(component[kept], return_inverse=True)[1]
    return region


def _icm(labels: np.ndarray, candidates: Candidates, costs: np.ndarray, table: np.ndarray,
         sets: list[np.ndarray], smoothness: float) -> None:
    """Iterated conditional modes, in place: each set of faces (no two neighbours) at once takes the views that
    minimise their own cost plus smoothness per neighbour of another view, until no face changes."""
    for _ in range(MAX_SWEEPS):
        changed = 0
        for members in sets:
            neighbours = table[members]
            theirs = np.where(neighbours >= 0, labels[neighbours], -2)  # -2 matches no view
            options = candidates.views[members]
            agree = (theirs[:, :, None] == options[:, None, :]).sum(axis=1)
            total = costs[members] + smoothness * ((neighbours >= 0).sum(axis=1, keepdims=True) - agree)
            rows = np.arange(len(members))
            current = total[rows, (options == labels[members, None]).argmax(axis=1)]
            best = total.argmin(axis=1)
            # A face moves only to a strictly better view, so that sweeps end.
            move = total[rows, best] < current - 1e-6
            labels[members[move]] = options[move, best[move]]
            changed += int(move.sum())
        if not changed:
            return


def _merge_regions(labels: np.ndarray, candidates: Candidates, costs: np.ndarray, pairs: np.ndarray,
                   smoothness: float) -> int:
    """One round of region moves, in place: every region whose faces can all take a bordering view, at a data
    cost below what its border with that view costs, takes it (of two bordering regions that would move, only
    the one gaining more). Returns how many regions moved."""
    region = connected_regions(labels, pairs)
    count = int(region.max()) + 1
    views = int(candidates.views.max()) + 1
    a, b = region[pairs[:, 0]], region[pairs[:, 1]]
    cross = (a != b) & (a >= 0) & (b >= 0)
    a, b = a[cross], b[cross]
    # Border length between each region and each view beside it.
    beside = np.r_[a, b].astype(np.int64) * views + np.r_[labels[pairs[cross, 1]], labels[pairs[cross, 0]]]
    border_key, border = np.unique(beside, return_counts=True)
    if not len(border_key):
        return 0
    # Data cost of each region under each view that some of its faces can take, and how many faces can.
    slot = (candidates.views >= 0) & (region[:, None] >= 0)
    option_key, where = np.unique(np.broadcast_to(region[:, None], slot.shape)[slot].astype(np.int64) * views
                                  + candidates.views[slot], return_inverse=True)
    option_cost, able = np.bincount(where, costs[slot]), np.bincount(where)
    own = region >= 0
    size = np.bincount(region[own], minlength=count)
    current = np.bincount(region[own], costs[own, (candidates.views[own] == labels[own, None]).argmax(axis=1)],
                          minlength=count)
    found = np.minimum(np.searchsorted(option_key, border_key), len(option_key) - 1)
    mover = border_key // views
    feasible = (option_key[found] == border_key) & (able[found] == size[mover])
    gain = np.where(feasible, option_cost[found] - current[mover] - smoothness * border, np.inf)
    order = np.lexsort((gain, mover))  # each region's best move first
    first = order[np.r_[True, mover[order][1:] != mover[order][:-1]]]
    best_gain = np.full(count, np.inf)
    best_gain[mover[first]] = gain[first]
    target = np.zeros(count, np.int64)
    target[mover[first]] = border_key[first] % views
    moving = best_gain < -1e-6
    both = moving[a] & moving[b]
    a_worse = (best_gain[a] > best_gain[b]) | ((best_gain[a] == best_gain[b]) & (a > b))
    moving[a[both & a_worse]] = False
    moving[b[both & ~a_worse]] = False
    moves = own & moving[np.maximum(region, 0)]
    labels[moves] = target[region[moves]]
    return int(moving.sum())
