"""Who owns the ground between submodels, and how their rasters are blended across the cutlines.

Each submodel owns the ground nearest to its own core cameras (a Voronoi partition over the camera positions):
there its reconstruction is best supported, and the cutline between two submodels runs where the nearest core
cameras of each are equally far. Around a cutline the submodels' rasters are feathered, so a small residual
misalignment between them fades over a band instead of showing as a step. Pure NumPy/SciPy, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.spatial import cKDTree

from ..dem.grid import Grid, resample


class Owners:
    """The Voronoi partition of the ground over the submodels' core cameras (x, y in CRS metres)."""

    def __init__(self, cores: list[np.ndarray]) -> None:
        planar = [np.asarray(c, np.float64)[:, :2] if len(c) else np.empty((0, 2)) for c in cores]
        # A submodel without core cameras owns nothing: it has no tree and is infinitely far from everywhere.
        self._trees = [cKDTree(c) if len(c) else None for c in planar]
        # Every core camera in one tree, each labelled with its submodel: the owner of a place is that of the
        # nearest camera, one query where there would be one per submodel.
        self._all = cKDTree(np.concatenate(planar))
        self._labels = np.repeat(np.arange(len(cores)), [len(c) for c in cores])

    def __len__(self) -> int:
        return len(self._trees)

    def distances(self, x: np.ndarray, y: np.ndarray, members: Sequence[int] | None = None) -> np.ndarray:
        """(K, *shape) distance from each location to the nearest core camera of each submodel, `shape` being
        that of x and y broadcast together (so a grid's centres, (1, W) and (H, 1), give (K, H, W)).
        `members`: only these submodels, in this order (K = len(members)); all by default."""
        xx, yy = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
        points = np.c_[xx.ravel(), yy.ravel()]
        members = range(len(self._trees)) if members is None else members
        out = np.full((len(members), len(points)), np.inf)
        for row, k in enumerate(members):
            if self._trees[k] is not None and len(points):
                out[row], _ = self._trees[k].query(points)
        return out.reshape(len(members), *xx.shape)

    def grid_distances(self, grid: Grid, members: Sequence[int], step: float) -> np.ndarray:
        """distances() at the cell centres of `grid`, computed on a grid of cells `step` wide over the same bounds
        and resampled bilinearly: (K, H, W). A distance changes by no more than the location does, so the
        resampled one is off by less than `step`, where a query per cell of a raster would dominate a merge's
        time."""
        if step <= grid.resolution:
            return self.distances(*grid.centers(), members)
        coarse = Grid.covering(grid.bounds, step)
        return np.stack([resample(coarse, d, grid) if np.isfinite(d).all() else np.full((grid.height, grid.width),
                                                                                          np.inf)
                         for d in self.distances(*coarse.centers(), members)])

    def owner(self, xy: np.ndarray) -> np.ndarray:
        """(N,) index of the submodel whose core camera is nearest each of the (N, 2) locations."""
        _, nearest = self._all.query(np.asarray(xy, np.float64))
        return self._labels[nearest]


def cutline_weights(distances: np.ndarray, valid: np.ndarray, band_m: float,
                    edges: np.ndarray | None = None) -> np.ndarray:
    """(K, H, W) float32 blending weights of K submodels' rasters, from `distances` (K, H, W) to each one's
    nearest core camera and `valid` (K, H, W), where each has data.

    w_k = clip(1 - (d_k - d_min) / band_m, 0, 1), then normalised to sum to 1. On a cutline the two submodels
    are equally far, so their weights are equal; where the owner's cameras are band_m nearer than the other's,
    the other's weight reaches 0 and the owner alone is kept. Between, the weights change gradually, so a
    residual offset between submodels becomes a ramp rather than a step. d_min is taken over the submodels
    that have data at a cell: where the owner has a hole, the next nearest takes over fully instead of being
    faded out against nothing. Where none has data, all weights are 0. `edges` (K, H, W), when given, are how
    far inside its own data each submodel is (0 at the edge, 1 well inside): see `faded`. band_m 0: no blending,
    each cell wholly from the nearest submodel with data (a cut along the cutlines)."""
    d = np.where(valid, distances, np.inf)
    if band_m <= 0:
        return _nearest_weights(d, valid)
    if edges is not None and len(d) > 1:
        d = faded(d, edges, band_m)
    nearest = d.min(axis=0)
    covered = np.isfinite(nearest)
    with np.errstate(invalid="ignore"):  # inf - inf where nothing is valid; masked out just below
        raw = np.clip(1.0 - (d - nearest) / band_m, 0.0, 1.0)
    raw = np.where(valid & covered, raw, 0.0)
    # Data only from submodels without core cameras (no distance to compare): share it evenly.
    raw = np.where(~covered & valid.any(axis=0), valid, raw)
    total = raw.sum(axis=0)
    # The owner among the valid ones always has weight 1, so total >= 1 wherever something is covered.
    weights = np.divide(raw, total, out=np.zeros_like(raw), where=total > 0)
    return weights.astype(np.float32)


def _nearest_weights(d: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """One-hot weights of the nearest submodel with data at each cell (the first of equals); data only from
    submodels without core cameras is taken from the first of them."""
    covered = np.isfinite(d).any(axis=0)
    choice = np.where(covered, np.argmin(d, axis=0), np.argmax(valid, axis=0))
    weights = (np.arange(len(d))[:, None, None] == choice[None]) & valid.any(axis=0)[None]
    return weights.astype(np.float32)


def faded(d: np.ndarray, edges: np.ndarray, band_m: float) -> np.ndarray:
    """Distances lengthened near the edge of each submodel's data, so that where its raster ends (or has a
    hole) inside its own ground, the next submodel takes over gradually instead of at a step: at the edge
    (factor 0) a submodel counts as band_m farther than the nearest other, well inside (1) as it is."""
    order = np.sort(d, axis=0)
    nearest, second = order[0], order[1]
    others = np.where(d == nearest, second, nearest)  # the nearest distance among the other submodels
    with np.errstate(invalid="ignore"):  # inf - inf where no other has data; kept as it is just below
        lengthened = d + (1.0 - edges) * np.maximum(0.0, others - d + band_m)
    return np.where(np.isfinite(others) & np.isfinite(d), lengthened, d)
