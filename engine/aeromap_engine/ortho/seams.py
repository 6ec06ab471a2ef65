"""Seamlines: which view colours each cell, chosen so that seams run where neighbouring views agree.

The nearest-nadir rule alone cuts across whatever lies on the line halfway between two cameras: a car that
moved between the photographs, a tree the surface model does not follow, a roof edge seen from two sides. Here
every cell's view is a label of a Markov random field: each label costs its view's departure from nadir at the
cell (the nadir rule's own preference), and two neighbouring cells with different labels cost how much the two
views' colours differ at both cells. The labelling that minimises the sum is found by alpha-expansion (Boykov,
Veksler and Zabih, 2001), one minimum cut per label and cycle, the cuts by PyMaxflow. The seam then bends
around what the views disagree on, through ground where they agree, and stays near the nadir line otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import maxflow
import numpy as np

FORBIDDEN = np.float32(1e6)  # data cost of a view that cannot colour a cell (outside its frame)
RIGHT = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0]])  # PyMaxflow edge structures: to the right, downwards
DOWN = np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0]])


@dataclass(frozen=True)
class SeamSettings:
    factor: int = 4  # orthophoto pixels per side of a seam cell: seams are placed on a coarser grid
    nadir_weight: float = 2.5  # data cost per seam cell per unit of tan^2 of the off-nadir angle
    seam_cost: float = 0.05  # cost of every seam cell edge, so that of equally good seams the shorter wins
    corridor: float = 0.04  # views further than this (tan^2) from the most nadir one at every cell are left out
    cycles: int = 2  # passes over all labels


@dataclass(frozen=True)
class _Field:
    """The labelling problem on a grid, flattened: data costs and the colour difference of every pair of views
    at every cell, so that each cut gathers scalars."""

    costs: np.ndarray  # (views, cells)
    steps: np.ndarray  # (views * views, cells): sum over bands of |colour a - colour b|
    shape: tuple[int, int]
    seam_cost: float

    @classmethod
    def of(cls, costs: np.ndarray, colours: np.ndarray, seam_cost: float) -> "_Field":
        views, h, w = costs.shape
        flat = colours.reshape(views, h * w, -1).astype(np.float32)
        steps = np.zeros((views, views, h * w), np.float32)
        for a in range(views):
            for b in range(a + 1, views):
                steps[a, b] = steps[b, a] = np.abs(flat[a] - flat[b]).sum(axis=-1)
        return cls(costs.reshape(views, h * w), steps.reshape(views * views, h * w), (h, w), seam_cost)

    def data(self, labels: np.ndarray) -> np.ndarray:
        """Each cell's data cost under a labelling (flat)."""
        return np.take_along_axis(self.costs, labels[None], axis=0)[0].astype(np.float64)

    def pair(self, a: np.ndarray, b: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Cost of neighbouring cells p and q (flat indices) labelled a and b: 0 when a == b, else how much the
        two views differ at both cells, plus the seam cost."""
        rows = a * len(self.costs) + b
        step = self.steps[rows, p] + self.steps[rows, q] + self.seam_cost
        return np.where(a == b, 0.0, step)

    def edges(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each neighbour direction as (p cells, q cells, PyMaxflow structure), p the cell the edge leaves."""
        h, w = self.shape
        index = np.arange(h * w).reshape(h, w)
        return [(index[:, :-1].ravel(), index[:, 1:].ravel(), RIGHT), (index[:-1].ravel(), index[1:].ravel(), DOWN)]

    def energy(self, labels: np.ndarray) -> float:
        """A labelling's (flat) data costs plus its seams' costs."""
        total = self.data(labels).sum()
        for p, q, _ in self.edges():
            total += self.pair(labels[p], labels[q], p, q).sum()
        return float(total)

    def expand(self, labels: np.ndarray, alpha: int, fixed: np.ndarray) -> np.ndarray:
        """The best labelling that gives any set of cells the label `alpha` and keeps the rest: one minimum cut.

        A cell's binary variable x is 1 when it takes alpha. A pair term E(x_p, x_q) is written as
        E00 + (E10 - E00) x_p + (E11 - E10) x_q + c (1 - x_p) x_q with c = E01 + E10 - E00 - E11, not negative
        since the pair cost is a metric; c becomes an edge p -> q, cut when p keeps its label and q takes
        alpha."""
        keep = self.data(labels)
        take = self.costs[alpha].astype(np.float64)
        take[fixed & (labels != alpha)] = FORBIDDEN
        graph = maxflow.Graph[float]()
        nodes = graph.add_grid_nodes(self.shape)
        for p, q, structure in self.edges():
            lp, lq, a = labels[p], labels[q], np.full(len(p), alpha)
            e00, e01, e10 = self.pair(lp, lq, p, q), self.pair(lp, a, p, q), self.pair(a, lq, p, q)
            take[p] += e10 - e00  # p and q each list a cell at most once per direction
            take[q] -= e10
            weights = np.zeros(len(take))
            weights[p] = np.maximum(e01 + e10 - e00, 0.0)
            graph.add_grid_edges(nodes, weights=weights.reshape(self.shape), structure=structure, symmetric=False)
        least = np.minimum(keep, take)
        # A node on the sink side takes alpha and pays its source capacity.
        graph.add_grid_tedges(nodes, (take - least).reshape(self.shape), (keep - least).reshape(self.shape))
        graph.maxflow()
        return np.where(graph.get_grid_segments(nodes).ravel(), alpha, labels)


def place_seams(costs: np.ndarray, colours: np.ndarray, fixed: np.ndarray, settings: SeamSettings) -> np.ndarray:
    """The label (view index) of every cell.

    costs: (views, h, w) data cost of each view at each cell (FORBIDDEN where it cannot colour it); colours:
    (views, h, w, bands) each view's colour there, in [0, 1]; fixed: (h, w) cells that keep the cheapest view
    (a tile's rim, so that neighbouring tiles meet on the same labels)."""
    nadir = np.argmin(costs, axis=0)
    if len(costs) < 2:
        return nadir
    field = _Field.of(costs, colours, settings.seam_cost)
    labels, rim = nadir.ravel(), fixed.ravel()
    for _ in range(settings.cycles):
        before = labels
        for alpha in range(len(costs)):
            # An expansion never raises the energy: the pair cost is a metric, so each cut is exact.
            labels = field.expand(labels, alpha, rim)
        if np.array_equal(before, labels):
            break
    return labels.reshape(nadir.shape)
