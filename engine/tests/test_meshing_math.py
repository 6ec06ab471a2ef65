"""The mesh math (grid meshes, simplification, Poisson depth, normals, trimming) on synthetic surfaces whose
answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.tri import LinearTriInterpolator, Triangulation
from scipy.spatial import ConvexHull, cKDTree

from aeromap_engine.cloud.boundary import Boundary
from aeromap_engine.dem.grid import Grid
from aeromap_engine.mesh.measure import point_distances, point_spacing
from aeromap_engine.mesh.model import Mesh
from aeromap_engine.mesh.poisson import Octree, oriented_normals, reconstruct, supported_depth, trim
from aeromap_engine.mesh.simplify import edge_counts, simplify, target_faces
from aeromap_engine.mesh.surface25d import cells_inside, grid_mesh, grid_resolution, plan_triangulation, simplified


def _normals(mesh: Mesh) -> np.ndarray:
    corners = mesh.vertices[mesh.faces]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    return cross / np.linalg.norm(cross, axis=1, keepdims=True)


def _areas(mesh: Mesh) -> np.ndarray:
    corners = mesh.vertices[mesh.faces]
    return 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)


def _heights_under(mesh: Mesh, xy: np.ndarray) -> np.ndarray:
    triangulation = Triangulation(mesh.vertices[:, 0], mesh.vertices[:, 1], mesh.faces)
    return LinearTriInterpolator(triangulation, mesh.vertices[:, 2])(xy[:, 0], xy[:, 1]).filled(np.nan)


def _box_field(size: int = 120, resolution: float = 0.1) -> tuple[Grid, np.ndarray]:
    """Flat ground at 10 m with a 2 m high box in the middle, as a height grid."""
    grid = Grid(0.0, size * resolution, resolution, size, size)
    heights = np.full((size, size), 10.0, np.float32)
    heights[size // 3:2 * size // 3, size // 3:2 * size // 3] = 12.0
    return grid, heights


def test_grid_mesh_covers_the_marked_cells_counter_clockwise() -> None:
    grid = Grid(100.0, 50.0, 0.5, 4, 3)
    heights = np.arange(12, dtype=np.float32).reshape(3, 4)
    inside = np.ones((3, 4), bool)
    inside[0, 0] = inside[2, 3] = False
    mesh = grid_mesh(grid, heights, inside)
    assert len(mesh.faces) == 2 * 3 * 2 - 2  # the two corner squares lose the triangle touching the gap
    assert len(mesh.vertices) == 10
    assert mesh.vertices[mesh.faces].reshape(-1, 3).tolist().count([100.75, 49.75, 1.0]) == 2  # row 0, column 1
    assert (_normals(Mesh(mesh.vertices * [1, 1, 0] + [0, 0, 1], mesh.faces))[:, 2] > 0.99).all()
    assert mesh.faces.dtype == np.int32 and mesh.vertices.dtype == np.float64
    lonely = np.zeros((3, 4), bool)
    lonely[1, 1] = True  # a cell without neighbours makes no face, and so no vertex
    assert len(grid_mesh(grid, heights, lonely).vertices) == 0


def test_cells_inside_keeps_every_triangle_within_the_boundary() -> None:
    boundary = Boundary(np.array([[0.0, 0.0], [10.0, 1.0], [7.0, 9.0], [1.0, 6.0]]))
    grid = Grid.covering(boundary.bounds, 0.37)
    mesh = grid_mesh(grid, np.zeros((grid.height, grid.width), np.float32), cells_inside(grid, boundary))
    centroids = mesh.vertices[mesh.faces].mean(axis=1)
    assert boundary.contains(mesh.vertices[:, :2]).all() and boundary.contains(centroids[:, :2]).all()
    assert _areas(mesh).sum() > 0.9 * boundary.area  # yet it fills the boundary


def test_grid_resolution_follows_the_budget_but_not_below_the_spacing() -> None:
    assert grid_resolution(10_000, 0.05, 400_000) == pytest.approx(np.sqrt(10_000 / 800_000))
    assert grid_resolution(10_000, 0.05, 3_000) == pytest.approx(np.sqrt(10_000 / 400_000))  # still fine
    assert grid_resolution(10_000, 0.5, 200_000) == 0.5


def test_target_faces_from_the_euler_characteristic() -> None:
    grid, heights = _box_field(60)
    mesh = grid_mesh(grid, heights, np.ones(heights.shape, bool))
    # A grid of n x n vertices is a disk (chi = 1) with B = 4 (n - 1) boundary edges.
    assert edge_counts(mesh.faces) == (1, 3 * 59 * 59 + 2 * 59, 4 * 59)
    assert target_faces(mesh.faces, 1000) == 2 * (1000 - 1) - 4 * 59
    assert target_faces(mesh.faces, 1000, with_boundary=False) == 2 * (1000 - 1)


def test_simplify_respects_the_budget_and_keeps_the_edges() -> None:
    grid, heights = _box_field()
    mesh = grid_mesh(grid, heights, np.ones(heights.shape, bool))
    assert simplify(mesh, len(mesh.vertices)) is mesh  # nothing to do
    xy = np.random.default_rng(0).uniform(0.1, 11.9, (5000, 2))
    off_walls = np.abs(np.maximum(np.abs(xy[:, 0] - 6), np.abs(xy[:, 1] - 6)) - 2) > 0.15
    expected = np.where(np.maximum(np.abs(xy[:, 0] - 6), np.abs(xy[:, 1] - 6)) < 2, 12.0, 10.0)[off_walls]
    for keep_positions in (False, True):
        for budget in (300, 40):  # 40: the box's 16 corners and the ground's few
            simple = simplify(mesh, budget, keep_positions)
            assert 0.9 * budget <= len(simple.vertices) <= budget
            assert (_normals(simple)[:, 2] > 0).all()  # no face folded over
            height = _heights_under(simple, xy[off_walls])
            assert np.abs(height - expected).max() < 0.01  # the box keeps its sharp edges
    grid_points = {tuple(v) for v in mesh.vertices}
    assert all(tuple(v) in grid_points for v in simplify(mesh, 300, keep_positions=True).vertices)
    assert not all(tuple(v) in grid_points for v in simplify(mesh, 300).vertices)


def _trees(size: int = 100) -> tuple[Grid, np.ndarray]:
    """Slightly rough ground with a dozen round crowns: sheer sides, as the height grid of a park has."""
    rng = np.random.default_rng(0)
    grid = Grid(0.0, size * 0.1, 0.1, size, size)
    y, x = np.mgrid[0:size, 0:size] * 0.1
    heights = rng.normal(0, 0.02, (size, size))
    for _ in range(12):
        cx, cy, radius, top = rng.uniform(0, 10), rng.uniform(0, 10), rng.uniform(0.3, 1.5), rng.uniform(1, 8)
        distance = np.hypot(x - cx, y - cy)
        heights = np.maximum(heights, np.where(distance < radius, top - 0.5 * distance, heights))
    return grid, heights.astype(np.float32)


def test_simplified_height_grid_stays_a_height_field() -> None:
    grid, heights = _trees()
    mesh = grid_mesh(grid, heights, np.ones(heights.shape, bool))
    tipped = simplify(mesh, 400, keep_positions=True)
    assert (_normals(tipped)[:, 2] <= 0).any()  # collapses alone tip some walls over...
    field = simplified(mesh, 400)
    assert len(field.vertices) <= 400
    assert (_normals(field)[:, 2] > 0).all()  # ...connected anew in plan, every face looks up
    plan = _areas(Mesh(field.vertices * [1, 1, 0], field.faces)).sum()
    assert plan == pytest.approx(ConvexHull(field.vertices[:, :2]).volume)  # no overlaps, no gaps
    grid_points = {tuple(v) for v in mesh.vertices}
    assert all(tuple(v) in grid_points for v in field.vertices)


def test_plan_triangulation_leaves_out_slivers() -> None:
    vertices = np.array([[0, 0, 0], [1, 0, 5], [2, 0, 0], [1, 1, 0]], float)  # three in a row on the outline
    mesh = plan_triangulation(vertices)
    assert len(mesh.faces) == 2 and (_normals(mesh)[:, 2] > 0).all()


def test_point_spacing_of_a_regular_lattice() -> None:
    x, y = np.meshgrid(np.arange(200) * 0.1, np.arange(200) * 0.1)
    xyz = np.c_[x.ravel(), y.ravel(), np.zeros(x.size)]
    assert point_spacing(cKDTree(xyz)) == pytest.approx(0.1, rel=0.15)
    assert point_spacing(cKDTree(xyz[::4])) > 1.5 * point_spacing(cKDTree(xyz))  # fewer points, wider apart


def test_supported_depth_stops_at_two_point_spacings() -> None:
    assert supported_depth(100.0, 0.05) == 10  # 110 m / 1024 = 10.7 cm cells, 2 x 5 cm
    assert supported_depth(100.0, 0.06) == 9  # depth 10 cells would be under 12 cm
    assert Octree(10, 100.0).cell == pytest.approx(110.0 / 1024)
    assert supported_depth(1.0, 10.0) == 1


@pytest.mark.parametrize("camera_z", [50.0, -50.0])
def test_normals_turn_towards_the_cameras(camera_z: float) -> None:
    rng = np.random.default_rng(0)
    xyz = np.c_[rng.uniform(0, 20, (5000, 2)), rng.normal(0, 0.01, 5000)]
    normals = oriented_normals(xyz, np.array([[0.0, 0.0, camera_z], [20.0, 20.0, camera_z]]))
    assert (normals[:, 2] * np.sign(camera_z) > 0.9).all()


def test_poisson_surface_is_trimmed_to_the_points() -> None:
    """A gently waving square of points with a round hole: Poisson spans the hole; trimming opens it again."""
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 20, (40_000, 2))
    xy = xy[np.hypot(xy[:, 0] - 10, xy[:, 1] - 10) > 4]
    xyz = np.c_[xy, 0.1 * np.sin(xy[:, 0] / 3) + rng.normal(0, 0.005, len(xy))]
    normals = oriented_normals(xyz, np.array([[10.0, 10.0, 30.0]]))
    octree = Octree(7, 20.0)
    surface, density = reconstruct(xyz, normals, octree, threads=1)
    points = cKDTree(xyz)
    far = points.query(surface.vertices[surface.faces].mean(axis=1))[0] > 1.0
    assert _areas(surface)[far].sum() > 20  # untrimmed, the surface spans the hole
    trimmed = trim(surface, density, octree, points)
    centroids = trimmed.vertices[trimmed.faces].mean(axis=1)
    reach = points.query(centroids)[0]
    assert reach.max() < 4 * octree.cell  # nothing strays from the points...
    assert np.hypot(centroids[:, 0] - 10, centroids[:, 1] - 10).min() > 4 - 4 * octree.cell  # ...the hole is open
    assert np.percentile(point_distances(trimmed, xyz), 99.9) < 0.03  # ...and every point is on it (noise: 5 mm)
    assert (_normals(trimmed)[:, 2] > 0).all()  # seen from above
