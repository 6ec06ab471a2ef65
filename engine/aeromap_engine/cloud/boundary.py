"""Convex polygons in the horizontal plane: the area around the camera positions (auto-boundary) and the
cameras' hull. The surveyed area itself, which need not be convex, is `cloud.area.SurveyArea`; both answer the
`Region` questions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError


class Region(Protocol):
    """What the stages after odm_filterpoints ask of an area: its extent, its size and which points it holds."""

    @property
    def area(self) -> float: ...

    @property
    def bounds(self) -> tuple[float, float, float, float]: ...

    def contains(self, xy: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Boundary:
    """A convex polygon in the horizontal plane, counter-clockwise, world frame."""

    vertices: np.ndarray  # (N, 2)

    @staticmethod
    def around(xy: np.ndarray) -> "Boundary | None":
        """The convex hull of points, None when they span no area."""
        try:
            hull = ConvexHull(xy)
        except (QhullError, ValueError):
            return None
        return Boundary(xy[hull.vertices].astype(np.float64))

    def _half_planes(self) -> tuple[np.ndarray, np.ndarray]:
        """Unit outward normals n and offsets c of the edges: inside is n . p <= c."""
        a, b = self.vertices, np.roll(self.vertices, -1, axis=0)
        edge = b - a
        normal = np.c_[edge[:, 1], -edge[:, 0]] / np.linalg.norm(edge, axis=1)[:, None]
        return normal, np.sum(normal * a, axis=1)

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Points inside or on the polygon (within a micrometre, so its own vertices count)."""
        normal, offset = self._half_planes()
        inside = np.ones(len(xy), dtype=bool)
        for n, c in zip(normal, offset):  # one edge at a time keeps memory at O(points)
            inside &= xy @ n <= c + 1e-6
        return inside

    def shrunk(self, distance: float) -> "Boundary | None":
        """The polygon with every edge moved inwards by `distance` (exact for a convex polygon); None if
        nothing is left."""
        normal, offset = self._half_planes()
        c = offset - distance
        # The point deepest inside the shifted edges (Chebyshev centre) seeds the half-plane intersection.
        depth = linprog([0, 0, -1], A_ub=np.c_[normal, np.ones(len(normal))], b_ub=c,
                        bounds=[(None, None), (None, None), (0, None)])
        if not depth.success or depth.x[2] <= 1e-6:
            return None
        inner = HalfspaceIntersection(np.c_[normal, -c], depth.x[:2])
        return Boundary.around(inner.intersections)

    def grown(self, distance: float) -> "Boundary":
        """The polygon buffered outwards by `distance` (round corners approximated by 16 points each); the
        vertices need not be convex or even span an area."""
        angles = np.linspace(0, 2 * np.pi, 16, endpoint=False)
        circle = distance * np.c_[np.cos(angles), np.sin(angles)]
        grown = Boundary.around((self.vertices[:, None, :] + circle[None]).reshape(-1, 2))
        assert grown is not None  # a buffered polygon always has area
        return grown

    @property
    def area(self) -> float:
        x, y = self.vertices[:, 0], self.vertices[:, 1]
        return float(0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        (xmin, ymin), (xmax, ymax) = self.vertices.min(axis=0), self.vertices.max(axis=0)
        return float(xmin), float(ymin), float(xmax), float(ymax)


def camera_boundary(centers_xy: np.ndarray, distance: float) -> Boundary:
    """The area within `distance` of the camera positions' convex hull (ODM's auto-boundary)."""
    return Boundary(centers_xy.astype(np.float64)).grown(distance)
