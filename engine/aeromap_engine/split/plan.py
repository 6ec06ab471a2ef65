"""Which photographs go into which submodel: clusters of about `split` photographs by GPS position, each grown by
the photographs within `split-overlap` metres of it so that neighbouring submodels share views to be aligned on
and ground to be blended across (ODM's split and split-overlap)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.cluster.vq import kmeans2
from scipy.spatial import cKDTree

SEED = 1  # fixed, so that a run resumed or repeated cuts the survey the same way


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


def plan_submodels(names: list[str], xy: np.ndarray, per_submodel: int, overlap_m: float) -> list[Submodel]:
    """Submodels of about `per_submodel` photographs each, from their horizontal positions (n, 2) in metres.

    k-means on the positions cuts a survey into compact blocks (a block's width is what a cutline crosses); a
    cluster that k-means leaves empty is dropped. Each block is then grown by every photograph closer than
    `overlap_m` to one of its own."""
    count = submodel_count(len(names), per_submodel)
    _, labels = kmeans2(xy.astype(np.float64), count, minit="++", seed=SEED)
    clusters = [np.flatnonzero(labels == k) for k in range(count)]
    clusters = sorted((c for c in clusters if len(c)), key=lambda c: (-len(c), int(c.min())))
    tree = cKDTree(xy)
    submodels = []
    for index, core in enumerate(clusters):
        near = tree.query_ball_point(xy[core], overlap_m)
        members = sorted(set(core.tolist()).union(*map(set, near)))
        submodels.append(Submodel(f"submodel_{index:04d}", tuple(names[i] for i in sorted(core)),
                                  tuple(names[i] for i in members)))
    return submodels
