"""Figures of a point cloud and of a mesh made from it: how far apart the points stand, and how far they lie
from the mesh."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymeshlab
from scipy.spatial import cKDTree

from ..parallel import in_child_process
from .meshlab import meshset
from .model import Mesh

SAMPLE = 20_000  # points drawn for the figures: enough for stable medians, in well under a second
NEIGHBOURS = 8
FAR = 1.0  # metres: distances are measured up to here (the search slows down with its reach)


def sample(xyz: np.ndarray, size: int = SAMPLE) -> np.ndarray:
    """A repeatable random sample of the points (all of them when there are fewer)."""
    if len(xyz) <= size:
        return xyz
    return xyz[np.random.default_rng(0).choice(len(xyz), size, replace=False)]


def point_spacing(tree: cKDTree, total: int | None = None) -> float:
    """The side of the square of surface each point stands for (m): the disk reaching a point's 8th-nearest
    neighbour holds 8 points' squares. The median over a sample; unlike area over count, holes in the cloud
    (water, shadows) do not make it larger. When the tree holds a uniform sample of a cloud of `total` points,
    distances are scaled to the cloud's density."""
    probe = sample(tree.data)
    distances, _ = tree.query(probe, k=NEIGHBOURS + 1)
    return float(np.median(distances[:, -1]) * np.sqrt(np.pi / NEIGHBOURS * tree.n / (total or tree.n)))


@dataclass(frozen=True)
class Fit:
    """How far the cloud's points lie from the mesh (m; distances beyond FAR count as FAR)."""

    median: float
    p90: float
    far: float  # fraction of the points farther than FAR

    def as_stats(self) -> dict[str, float]:
        return {"median_cm": round(self.median * 100, 2), "p90_cm": round(self.p90 * 100, 2),
                f"farther_than_{FAR:g}m": round(self.far, 4)}


@in_child_process  # MeshLab's filters start OpenMP threads (parallel.in_child_process)
def point_distances(mesh: Mesh, points: np.ndarray, reach: float = FAR) -> np.ndarray:
    """Distance from each point to the nearest place on the mesh's surface (m); inf beyond `reach`."""
    ms = meshset(points)
    ms.add_mesh(pymeshlab.Mesh(vertex_matrix=mesh.vertices, face_matrix=mesh.faces))
    ms.compute_scalar_by_distance_from_another_mesh_per_vertex(
        measuremesh=0, refmesh=1, signeddist=False, maxdist=pymeshlab.PureValue(reach))
    distances = ms.mesh(0).vertex_scalar_array().astype(np.float64)
    distances[distances > reach] = np.inf  # MeshLab marks points it found nothing for with a larger value
    return distances


def fit(mesh: Mesh, xyz: np.ndarray) -> Fit:
    """How far a sample of the points lies from the mesh."""
    distances = np.minimum(point_distances(mesh, sample(xyz)), FAR)
    return Fit(float(np.median(distances)), float(np.percentile(distances, 90)), float(np.mean(distances >= FAR)))
