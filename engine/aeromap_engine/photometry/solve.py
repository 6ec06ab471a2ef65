"""The model's sparse least squares: its matrix, the gauge of each group of tied photographs, and Huber's
reweighting."""

from __future__ import annotations

import numpy as np
import scipy.sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import lsqr

from .model import POWERS

HUBER = 0.05  # log units: residuals beyond this are down-weighted
ROUNDS = 3
RIDGE = 1e-3  # pull of the gains and fall-off towards none where the data say little


def huber_cost(residual: np.ndarray) -> float:
    size = np.abs(residual)
    return float(np.where(size <= HUBER, 0.5 * size**2, HUBER * (size - 0.5 * HUBER)).sum())


def design(image: np.ndarray, track: np.ndarray, radius: np.ndarray, camera_of: np.ndarray, n_images: int,
            n_cameras: int, terms: np.ndarray | None = None) -> tuple[scipy.sparse.csr_matrix, int]:
    """The model's matrix, one row per observation and band: the gain of (image, band), the fall-off terms of
    its camera, per band a coefficient of each column of `terms` (N, T: terms of the rays, their tilts and a
    hotspot's kernel), the radiance of (point, band); and the number of unknowns before the radiances."""
    rows, n_tracks = len(image), int(track.max()) + 1
    n_terms = 0 if terms is None else terms.shape[1]
    unknowns = 3 * n_images + len(POWERS) * n_cameras + 3 * n_terms
    rows_of, columns_of, values = [], [], []
    for band in range(3):
        row = band * rows + np.arange(rows)
        rows_of += [row, row]
        columns_of += [3 * image + band, unknowns + 3 * track + band]
        values += [np.ones(rows), np.ones(rows)]
        for k, power in enumerate(POWERS):
            rows_of.append(row)
            columns_of.append(3 * n_images + len(POWERS) * camera_of + k)
            values.append(radius**power)
        for k in range(n_terms):
            rows_of.append(row)
            columns_of.append(np.full(rows, 3 * n_images + len(POWERS) * n_cameras + n_terms * band + k))
            values.append(terms[:, k])
    matrix = scipy.sparse.csr_matrix((np.concatenate(values), (np.concatenate(rows_of), np.concatenate(columns_of))),
                                     shape=(3 * rows, unknowns + 3 * n_tracks))
    return matrix, unknowns


def robust_solve(matrix: scipy.sparse.csr_matrix, right: np.ndarray, groups: np.ndarray, unknowns: int,
                  start: np.ndarray | None = None, weights: np.ndarray | None = None, rounds: int = ROUNDS
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The model's unknowns, reweighted `rounds` times (Huber), from a `start` and `weights` where given; and the
    weights the last residuals give."""
    weights = np.ones(len(right)) if weights is None else weights
    solution = start
    for _ in range(rounds):
        solution = _solve(matrix, right, weights, groups, unknowns, solution)
        weights = _huber_weights(matrix @ solution - right)
    return solution, weights


def _huber_weights(residual: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, HUBER / np.maximum(np.abs(residual), 1e-12))


def tied_groups(image: np.ndarray, track: np.ndarray, n_images: int) -> np.ndarray:
    """For each photograph, the number of its group (0, 1, ...): the photographs that points they share tie
    together (a photograph without a usable observation is a group of its own)."""
    n_tracks = int(track.max()) + 1
    links = scipy.sparse.coo_matrix((np.ones(len(image)), (image, n_images + track)),
                                    shape=(n_images + n_tracks, n_images + n_tracks))
    return connected_components(links, directed=False)[1][:n_images]


def _solve(observed: scipy.sparse.csr_matrix, right: np.ndarray, weights: np.ndarray, groups: np.ndarray,
           unknowns: int, start: np.ndarray | None = None) -> np.ndarray:
    """Weighted least squares of the observation rows, with per group of tied photographs and band a row holding
    the mean log gain at 0, and a small ridge on the first `unknowns` columns (the gains and fall-off); iterated
    from `start` where given (a nearby solution saves most of the iterations)."""
    rows, columns = observed.shape
    n_images, n_groups = len(groups), int(groups.max()) + 1
    gauge = scipy.sparse.csr_matrix((np.full(3 * n_images, 10.0 * np.sqrt(rows / n_images)),
                                     (3 * np.repeat(groups, 3) + np.tile(np.arange(3), n_images),
                                      np.arange(3 * n_images))),
                                    shape=(3 * n_groups, columns))
    ridge = scipy.sparse.csr_matrix((np.full(unknowns, RIDGE), (np.arange(unknowns), np.arange(unknowns))),
                                    shape=(unknowns, columns))
    matrix = scipy.sparse.vstack([scipy.sparse.diags(np.sqrt(weights)) @ observed, gauge, ridge]).tocsr()
    target = np.concatenate([right * np.sqrt(weights), np.zeros(3 * n_groups), np.zeros(unknowns)])
    return lsqr(matrix, target, atol=1e-8, btol=1e-8, iter_lim=2000, x0=start)[0]
