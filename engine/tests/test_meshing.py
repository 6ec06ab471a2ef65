"""The odm_meshing stage and its options, on the reconstruction of six Brighton Beach images at 1000 px that
test_products builds (the park, the car park, the sea): the 2.5D mesh and the 3D mesh, both made at default
options as ODM makes them, mesh-size, mesh-octree-depth, use-3dmesh and skip-3dmodel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.tri import LinearTriInterpolator, Triangulation
from scipy.spatial import cKDTree

from aeromap_engine import pipeline
from aeromap_engine.crs_offset import Georef
from aeromap_engine.io.meshply import read_mesh_ply
from aeromap_engine.io.ply import read_ply
from aeromap_engine.mesh.measure import point_distances
from aeromap_engine.mesh.model import Mesh
from aeromap_engine.project import Project
from aeromap_engine.io.geojson import read_survey_area
from conftest import clone
from test_products import options


@pytest.fixture()
def variant(meshed: Project, tmp_path: Path) -> Project:
    return clone(meshed, tmp_path / "p")


def mesh_stats(project: Project) -> dict:
    return json.loads(project.stats_file.read_text())["mesh"]


def cloud(project: Project) -> np.ndarray:
    return read_ply(project.path("odm_filterpoints", "point_cloud.ply")).xyz.astype(np.float64)


def sample(xyz: np.ndarray, size: int = 20_000) -> np.ndarray:
    return xyz[np.random.default_rng(3).choice(len(xyz), size, replace=False)]


def normals_and_areas(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    corners = mesh.vertices[mesh.faces]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.linalg.norm(cross, axis=1)
    return cross / length[:, None], 0.5 * length


def heights_under(mesh: Mesh, xy: np.ndarray) -> np.ndarray:
    """The 2.5D mesh's height at each point, NaN where the mesh does not reach."""
    triangulation = Triangulation(mesh.vertices[:, 0], mesh.vertices[:, 1], mesh.faces)
    return LinearTriInterpolator(triangulation, mesh.vertices[:, 2])(xy[:, 0], xy[:, 1]).filled(np.nan)


# --- the 2.5D mesh ---------------------------------------------------------------------------------------------

def test_25d_mesh_lies_on_the_cloud_and_fills_the_surveyed_area(meshed: Project) -> None:
    mesh = read_mesh_ply(meshed.mesh(three_d=False))
    xyz = sample(cloud(meshed))
    height = heights_under(mesh, xyz[:, :2])
    # Under every point but those in the strip (under a cell wide) between the outermost cell centres and the
    # boundary.
    assert np.isfinite(height).mean() > 0.995
    above = xyz[:, 2] - height
    assert np.nanmedian(np.abs(above)) < 0.03  # in cm...
    assert np.nanmean(above > 0.25) < 0.01  # ...and the highest surface: hardly a point pokes through it
    boundary = read_survey_area(meshed.bounds_file, Georef.load(meshed).offset)
    assert boundary.contains(mesh.vertices[:, :2]).all()  # the boundary is convex: no face reaches out of it
    normals, areas = normals_and_areas(mesh)
    assert (normals[:, 2] > 0).all()  # a height field, counter-clockwise seen from above
    assert (areas * normals[:, 2]).sum() > 0.97 * boundary.area  # gaps (the sea) filled, as in a DSM
    figures = mesh_stats(meshed)["2.5d"]
    assert figures["vertices"] == len(mesh.vertices) <= 200_000 and figures["faces"] == len(mesh.faces)
    assert figures["point_distance"]["median_cm"] < 4
    assert b"comment crs EPSG:32615" in meshed.mesh(three_d=False).read_bytes()[:300]


@pytest.mark.long
def test_mesh_size_caps_the_vertices_and_spends_them_on_relief(variant: Project, meshed: Project) -> None:
    pipeline.run(variant, options(mesh_size=3000, end_with="odm_meshing"))
    mesh = read_mesh_ply(variant.mesh(three_d=False))
    assert 2700 <= len(mesh.vertices) <= 3000 < mesh_stats(meshed)["2.5d"]["vertices"]
    assert read_survey_area(variant.bounds_file, Georef.load(variant).offset).contains(mesh.vertices[:, :2]).all()
    xyz = sample(cloud(variant))
    assert np.nanmedian(np.abs(xyz[:, 2] - heights_under(mesh, xyz[:, :2]))) < 0.15
    # Trees, cars and kerbs keep small triangles; open ground gets large ones (seen from above).
    normals, areas = normals_and_areas(mesh)
    footprint = areas * normals[:, 2]
    steep, flat = normals[:, 2] < 0.7, normals[:, 2] > 0.98
    assert steep.sum() > 50 and np.median(footprint[steep]) < 0.2 * np.median(footprint[flat])


# --- the 3D mesh -----------------------------------------------------------------------------------------------

def test_3d_mesh_lies_on_and_covers_the_cloud(meshed: Project) -> None:
    """Made beside the 2.5D one at default options, as ODM makes both."""
    mesh = read_mesh_ply(meshed.mesh(three_d=True))
    xyz = cloud(meshed)
    distance = point_distances(mesh, sample(xyz, 5000))
    assert np.median(distance) < 0.02  # on the cloud...
    assert np.mean(distance < 0.15) > 0.95 and np.mean(distance > 1) < 0.002  # ...and covering it
    # Trimmed: no sheets spanning the sea or closing the surface around the survey (it may reach past the points
    # by a few octree cells, over the sides of cars for example).
    normals, areas = normals_and_areas(mesh)
    cell = mesh_stats(meshed)["3d"]["octree_cell_cm"] / 100
    assert cKDTree(xyz).query(mesh.vertices[mesh.faces].mean(axis=1))[0].max() < 5 * cell
    assert (areas * normals[:, 2]).sum() > 0.8 * areas.sum()  # the outside is up, where the cameras are
    figures = mesh_stats(meshed)["3d"]
    assert figures["vertices"] == len(mesh.vertices) <= 200_000
    assert figures["octree_depth_requested"] == 11 and 6 <= figures["octree_depth"] <= 11
    assert figures["poisson_faces"] > figures["trimmed_faces"] >= figures["faces"]


def test_octree_depth_sets_the_detail_of_the_3d_mesh_and_use_3dmesh_leaves_out_the_25d(variant: Project,
                                                                                       meshed: Project) -> None:
    default = mesh_stats(meshed)["3d"]
    depth = default["octree_depth"] - 3
    pipeline.run(variant, options(use_3dmesh=True, mesh_octree_depth=depth, end_with="odm_meshing"))
    assert not variant.mesh(three_d=False).exists()  # the 2.5D mesh of the earlier run is gone
    assert list(mesh_stats(variant)) == ["3d"]
    coarse = mesh_stats(variant)["3d"]
    assert coarse["octree_depth"] == depth and coarse["octree_cell_cm"] == pytest.approx(
        8 * default["octree_cell_cm"], rel=0.01)
    assert coarse["poisson_faces"] < default["poisson_faces"] / 10
    assert coarse["point_distance"]["p90_cm"] > 1.5 * default["point_distance"]["p90_cm"]


# --- skip-3dmodel ----------------------------------------------------------------------------------------------

def test_skip_3dmodel_writes_no_mesh_and_removes_a_stale_one(variant: Project) -> None:
    assert variant.mesh(three_d=False).exists()
    pipeline.run(variant, options(skip_3dmodel=True, use_3dmesh=True, end_with="odm_meshing"))
    assert not variant.mesh(three_d=False).exists() and not variant.mesh(three_d=True).exists()
    assert mesh_stats(variant) == {}
