"""The 3D mesh: Screened Poisson surface reconstruction (Kazhdan and Hoppe, 2013; MeshLab's implementation) of
the cloud, with ODM's settings, then trimmed where the reconstructed surface strays from the points.

Poisson fits an implicit surface to oriented points, so it also spans the places nothing was seen (the sea, gaps
in the cloud) and runs on past the survey's edges. Those parts have a low sample density and lie far from every
point: both are cut away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pymeshlab
from scipy.spatial import cKDTree

from ..parallel import in_child_process
from .meshlab import current_mesh, meshset
from .model import Mesh

SCALE = 1.1  # the octree's cube is this much wider than the cloud (MeshLab's default)
SAMPLES_PER_NODE = 1.0  # ODM's settings
POINT_WEIGHT = 4.0
NORMAL_NEIGHBOURS = 10
CELL_SPACINGS = 2.0  # octree cells narrower than two point spacings fit the points' noise, not the surface
DENSITY_MARGIN = 2.0  # vertices whose samples' density lies this many octree levels below the depth are cut
REACH_CELLS = 4.0  # vertices farther than this many octree cells from every point are cut
FRAGMENT_CELLS = 3.0  # pieces left smaller across than this many cells (bubbles around stray points) are cut


@dataclass(frozen=True)
class Octree:
    """The depth of the reconstruction over the cloud's extent (its longest side, in metres)."""

    depth: int
    extent: float

    @property
    def cell(self) -> float:
        """Side of the finest octree cell (m)."""
        return SCALE * self.extent / 2**self.depth


def supported_depth(extent: float, spacing: float) -> int:
    """The deepest octree level whose cells are still CELL_SPACINGS point spacings wide."""
    return max(1, math.floor(math.log2(SCALE * extent / (CELL_SPACINGS * spacing))))


@in_child_process  # MeshLab's filters start OpenMP threads (parallel.in_child_process)
def oriented_normals(xyz: np.ndarray, viewpoints: np.ndarray) -> np.ndarray:
    """Unit normals (N, 3) of the points, from the plane through their nearest neighbours, each turned towards
    the nearest viewpoint (the cameras): the side that was seen is the outside."""
    ms = meshset(xyz)
    ms.compute_normal_for_point_clouds(k=NORMAL_NEIGHBOURS)
    normals = ms.current_mesh().vertex_normal_matrix().astype(np.float64)
    nearest = viewpoints[cKDTree(viewpoints).query(xyz)[1]]
    away = np.einsum("ij,ij->i", normals, nearest - xyz) < 0
    normals[away] *= -1
    return normals


@in_child_process  # MeshLab's filters start OpenMP threads (parallel.in_child_process)
def reconstruct(xyz: np.ndarray, normals: np.ndarray, octree: Octree, threads: int) -> tuple[Mesh, np.ndarray]:
    """The Poisson surface and, per vertex, the density of the samples that shaped it (in octree levels)."""
    ms = meshset(xyz, normals=normals)
    ms.generate_surface_reconstruction_screened_poisson(
        depth=octree.depth, scale=SCALE, samplespernode=SAMPLES_PER_NODE, pointweight=POINT_WEIGHT,
        threads=threads, preclean=False)
    density = ms.current_mesh().vertex_scalar_array().astype(np.float64)
    return current_mesh(ms), density


@in_child_process  # MeshLab's filters start OpenMP threads (parallel.in_child_process)
def trim(mesh: Mesh, density: np.ndarray, octree: Octree, points: cKDTree) -> Mesh:
    """The surface without the parts that stray from the points: faces with a vertex of low sample density or
    far from every point, then the fragments that leaves behind."""
    reach = REACH_CELLS * octree.cell
    distance, _ = points.query(mesh.vertices, distance_upper_bound=reach)
    keep = (density >= octree.depth - DENSITY_MARGIN) & (distance <= reach)
    ms = meshset(mesh.vertices, mesh.faces[keep[mesh.faces].all(axis=1)])
    ms.meshing_remove_unreferenced_vertices()
    ms.meshing_remove_connected_component_by_diameter(
        mincomponentdiag=pymeshlab.PureValue(FRAGMENT_CELLS * octree.cell))
    return current_mesh(ms)
