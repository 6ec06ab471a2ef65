"""Which images to match with which: stereo partners and fusion neighbours from the sparse reconstruction.

Overlap is read from the sparse points two views share (works for any flight pattern or GPS quality), and the
stereo geometry from the angle at which they see those points: too small an angle gives noisy depth, too large
a one makes the images too different to match.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from .views import SparseModel


@dataclass(frozen=True)
class PairSettings:
    partners: int = 4  # stereo partners per reference image: ahead, behind and both sides in a grid flight
    neighbours: int = 10  # views a fused point is checked against
    min_shared: int = 30  # sparse points two views must share to count as overlapping
    min_angle: float = 2.0  # degrees: median intersection angle of the shared points
    max_angle: float = 40.0
    ideal_angle: tuple[float, float] = (6.0, 20.0)
    max_axis_angle: float = 50.0  # degrees between the two viewing directions


@dataclass(frozen=True)
class ViewLinks:
    partners: list[int]  # stereo partners, best first
    neighbours: list[int]  # overlapping views, most shared points first


def _median_angle(model: SparseModel, i: int, j: int, shared: np.ndarray) -> float:
    xyz = model.xyz(shared)
    a = xyz - model.views[i].center
    b = xyz - model.views[j].center
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(np.degrees(np.median(np.arccos(np.clip(cos, -1.0, 1.0)))))


def _angle_weight(angle: float, settings: PairSettings) -> float:
    low, high = settings.ideal_angle
    if angle < low:
        return angle / low
    if angle > high:
        return high / angle
    return 1.0


def shared_counts(model: SparseModel) -> sparse.csr_matrix:
    """Sparse points each two views share, as a (views, views) matrix: one sparse product of the views' point
    incidence, so the work grows with the observations and the overlap, not with the square of the views."""
    rows = np.concatenate([np.full(len(v.point_ids), i) for i, v in enumerate(model.views)])
    columns = np.searchsorted(model.point_ids, np.concatenate([v.point_ids for v in model.views]))
    incidence = sparse.csr_matrix((np.ones(len(rows), np.int32), (rows, columns)),
                                  shape=(len(model.views), len(model.point_ids)))
    return (incidence @ incidence.T).tocsr()


def link_views(model: SparseModel, settings: PairSettings = PairSettings()) -> list[ViewLinks]:
    views = model.views
    counts = shared_counts(model)
    links = []
    for i, view in enumerate(views):
        row = counts.getrow(i)
        overlapping, scored = [], []
        for j, count in zip(row.indices.tolist(), row.data.tolist()):
            if j == i or count < settings.min_shared:
                continue
            other = views[j]
            overlapping.append((count, j))
            axis_angle = np.degrees(np.arccos(np.clip(view.axis @ other.axis, -1.0, 1.0)))
            if axis_angle > settings.max_axis_angle:
                continue
            angle = _median_angle(model, i, j, np.intersect1d(view.point_ids, other.point_ids, assume_unique=True))
            if not settings.min_angle <= angle <= settings.max_angle:
                continue
            overlap = count / len(view.point_ids)
            scored.append((overlap * _angle_weight(angle, settings), j))
        scored.sort(reverse=True)
        overlapping.sort(reverse=True)
        links.append(ViewLinks([j for _, j in scored[: settings.partners]],
                               [j for _, j in overlapping[: settings.neighbours]]))
    return links
