"""Which photographs go into which submodel: clusters of about `split` photographs by GPS position, or the groups
an image groups file names (split-image-groups), each grown by the photographs within `split-overlap` metres of
it so that neighbouring submodels share views to be aligned on and ground to be blended across (ODM's split and
split-overlap)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.cluster.vq import kmeans2
from scipy.spatial import cKDTree

SEED = 1  # fixed, so that a run resumed or repeated cuts the survey the same way
# k-means balances distances, not counts: on a survey of uneven density it can make one block far larger than the
# target. A cluster more than this share above the target is cut in two until none is.
MAX_CORE_EXCESS = 1.25


@dataclass(frozen=True)
class Submodel:
    name: str  # submodel_0000, as ODM names them
    core: tuple[str, ...]  # the photographs it owns: the ground nearest to them is taken from this submodel
    images: tuple[str, ...]  # the core and the photographs it shares with its neighbours

    def to_json(self) -> dict:
        return {"name": self.name, "core": list(self.core), "images": list(self.images)}

    @staticmethod
    def from_json(data: dict) -> "Submodel":
        return Submodel(data["name"], tuple(data["core"]), tuple(data["images"]))


def submodel_count(images: int, per_submodel: int) -> int:
    """How many submodels a survey is cut into: 1 (no split) unless it holds more photographs than `split`."""
    return 1 if images <= per_submodel else math.ceil(images / per_submodel)


def most_core(per_submodel: int) -> int:
    """The most photographs a submodel may own when it should own about `per_submodel`."""
    return max(1, math.floor(per_submodel * MAX_CORE_EXCESS))


def plan_submodels(names: list[str], xy: np.ndarray, per_submodel: int, overlap_m: float) -> list[Submodel]:
    """Submodels of about `per_submodel` photographs each, from their horizontal positions (n, 2) in metres.

    k-means on the positions cuts a survey into compact blocks (a block's width is what a cutline crosses); a
    cluster that k-means leaves empty is dropped, and one that owns more than `most_core` photographs is bisected
    (`within_cap`). Each block is then grown by every photograph closer than `overlap_m` to one of its own."""
    count = submodel_count(len(names), per_submodel)
    _, labels = kmeans2(xy.astype(np.float64), count, minit="++", seed=SEED)
    clusters = [np.flatnonzero(labels == k) for k in range(count)]
    clusters = within_cap([c for c in clusters if len(c)], xy, most_core(per_submodel))
    return grown(names, xy, clusters, overlap_m)


def plan_groups(names: list[str], xy: np.ndarray, groups: dict[str, str], overlap_m: float) -> list[Submodel]:
    """Submodels whose own photographs are the groups given (photograph name -> group name, for every one of
    `names`), each grown by the photographs within `overlap_m` of it."""
    by_group: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        by_group.setdefault(groups[name], []).append(index)
    return grown(names, xy, [np.array(members) for members in by_group.values()], overlap_m)


def read_groups(text: str) -> dict[str, str]:
    """An image groups file (ODM's image_groups.txt): one "file_name group_name" per line; blank lines and
    lines starting with # are skipped. Raises ValueError naming the first line that is not of that form."""
    groups: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2:
            raise ValueError(f"line {number} is not \"file_name group_name\": {line.strip()[:80]!r}")
        groups[fields[0]] = fields[1]
    return groups


def grown(names: list[str], xy: np.ndarray, clusters: list[np.ndarray], overlap_m: float) -> list[Submodel]:
    """The submodels owning `clusters` (indices into `names`), largest first, each grown by every photograph
    closer than `overlap_m` to one of its own."""
    clusters = sorted(clusters, key=lambda c: (-len(c), int(c.min())))
    tree = cKDTree(xy)
    submodels = []
    for index, core in enumerate(clusters):
        near = tree.query_ball_point(xy[core], overlap_m)
        members = sorted(set(core.tolist()).union(*map(set, near)))
        submodels.append(Submodel(f"submodel_{index:04d}", tuple(names[i] for i in sorted(core)),
                                  tuple(names[i] for i in members)))
    return submodels


def within_cap(clusters: list[np.ndarray], xy: np.ndarray, most: int) -> list[np.ndarray]:
    """The clusters (indices into `xy`), each one of more than `most` cut in two across its long axis at its
    median, again until no part holds more: the halves stay compact, and as long as each other."""
    done, pending = [], list(clusters)
    while pending:
        cluster = pending.pop()
        if len(cluster) <= most:
            done.append(cluster)
            continue
        along = long_axis_coordinates(xy[cluster])
        order = cluster[np.argsort(along, kind="stable")]
        half = len(order) // 2
        pending += [np.sort(order[:half]), np.sort(order[half:])]
    return done


def long_axis_coordinates(xy: np.ndarray) -> np.ndarray:
    """Each point's coordinate along the direction in which the points spread most (their first principal
    axis)."""
    centred = xy - xy.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    return centred @ axes[0]
