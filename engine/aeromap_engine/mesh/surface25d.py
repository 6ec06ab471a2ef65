"""The 2.5D mesh: a height grid of the cloud's highest points (gaps filled, as for a DSM) turned into
triangles over the surveyed area, two per cell. It is then simplified to the vertex budget, so the grid is made
denser than the budget: the simplification chooses where the detail goes.

Quadric edge collapse judges faces in 3D, so it can tip a near-vertical face (the side of a tree or a car in a
height grid) over until it looks down. The simplified vertices are therefore connected anew by a Delaunay
triangulation of their plan positions: a height field by construction, every face seen from above.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import Delaunay

from ..cloud.boundary import Region
from ..dem.grid import Grid
from .model import Mesh
from .simplify import simplify

OVERSAMPLING = 2  # grid vertices per vertex of the budget, at least
GRID_VERTICES = 400_000  # grid vertices for smaller budgets (simplified in a few seconds)


def grid_resolution(area: float, spacing: float, max_vertices: int) -> float:
    """Metres per cell: as many cells over the area as OVERSAMPLING times the vertex budget, or GRID_VERTICES
    if more, so that a small budget is still spent on edges found at a fine scale; but no finer than the
    points' spacing (finer cells would only repeat the same points)."""
    return max(spacing, math.sqrt(area / max(OVERSAMPLING * max_vertices, GRID_VERTICES)))


def grid_mesh(grid: Grid, heights: np.ndarray, inside: np.ndarray) -> Mesh:
    """Each square of four neighbouring cell centres split into two triangles, each kept when its three corners
    lie in cells marked inside (counter-clockwise seen from above); vertices at the centres the faces use."""
    index = np.arange(grid.height * grid.width).reshape(grid.height, grid.width)
    # Corners of every square: north-west, north-east, south-west, south-east (rows grow southwards).
    nw, ne, sw, se = index[:-1, :-1], index[:-1, 1:], index[1:, :-1], index[1:, 1:]
    triangles = np.concatenate([np.stack([nw, sw, ne], -1).reshape(-1, 3),
                                np.stack([ne, sw, se], -1).reshape(-1, 3)])
    triangles = triangles[inside.ravel()[triangles].all(axis=1)]
    rows, cols = np.divmod(np.arange(grid.height * grid.width), grid.width)
    x, y = grid.centers()
    return _compact(np.c_[x[0, cols], y[rows, 0], heights.ravel()], triangles)


def _compact(vertices: np.ndarray, faces: np.ndarray) -> Mesh:
    """The mesh of the faces with only the vertices they use."""
    used, index = np.unique(faces, return_inverse=True)
    return Mesh(vertices[used].astype(np.float64), index.reshape(-1, 3).astype(np.int32))


def plan_triangulation(vertices: np.ndarray) -> Mesh:
    """The vertices connected by the Delaunay triangulation of their plan positions, counter-clockwise seen from
    above; slivers without extent in plan (collinear vertices on the outline) are left out."""
    faces = Delaunay(vertices[:, :2]).simplices
    a, b, c = (vertices[faces[:, corner], :2] for corner in range(3))
    cross = (b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0]
    faces = np.where((cross < 0)[:, None], faces[:, ::-1], faces)
    return _compact(vertices, faces[np.abs(cross) > 1e-9])


def simplified(mesh: Mesh, max_vertices: int) -> Mesh:
    """The height grid's mesh with at most `max_vertices` vertices, as a height field. They are all vertices of
    the grid, so they stay inside the boundary; the plan triangulation between them may bridge the area's
    notches and gaps, which odm_meshing's `within` cuts away."""
    return plan_triangulation(simplify(mesh, max_vertices, keep_positions=True).vertices)


def cells_inside(grid: Grid, boundary: Region) -> np.ndarray:
    """Cells whose centre lies inside the boundary: the grid's own faces between them stay near the area."""
    x, y = grid.centers()
    xx, yy = np.broadcast_arrays(x, y)
    return boundary.contains(np.c_[xx.ravel(), yy.ravel()]).reshape(grid.height, grid.width)
