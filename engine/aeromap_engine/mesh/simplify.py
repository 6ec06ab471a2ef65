"""Quadric edge collapse down to a vertex budget: flat areas end up with few large triangles while the edges of
cars, trees and buildings keep theirs (ODM's mesh-size is a vertex count, MeshLab's target a face count)."""

from __future__ import annotations

import numpy as np

from ..parallel import in_child_process
from .meshlab import current_mesh, meshset
from .model import Mesh

QUALITY_THRESHOLD = 0.3  # MeshLab's default: collapses that would leave needle-like triangles are avoided
MAX_PASSES = 3


def edge_counts(faces: np.ndarray) -> tuple[int, int, int]:
    """(Euler characteristic V - E + F, edges E, boundary edges B: those of a single face) of a mesh."""
    edges = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1).astype(np.int64)
    _, uses = np.unique(edges[:, 0] * (int(faces.max()) + 1) + edges[:, 1], return_counts=True)
    return len(np.unique(faces)) - len(uses) + len(faces), len(uses), int(np.count_nonzero(uses == 1))


def target_faces(faces: np.ndarray, max_vertices: int, with_boundary: bool = True) -> int:
    """The face count at which a mesh like this one has `max_vertices` vertices. Edge collapses keep its Euler
    characteristic chi; each face has three edges, each shared by two faces except the B on the boundary
    (2E = 3F + B), so V = chi + (F + B) / 2. Collapses also shorten the outline, so with its B counted the
    result falls a little short of the budget, and without (B = 0) it ends over by half the B left."""
    euler, _, boundary = edge_counts(faces)
    return 2 * (max_vertices - euler) - (boundary if with_boundary else 0)


def simplify(mesh: Mesh, max_vertices: int, keep_positions: bool = False) -> Mesh:
    """The mesh with at most `max_vertices` vertices (unchanged when it has no more); no face is flipped. Each
    collapse puts the merged vertex where it best keeps the surface, or, with `keep_positions`, at one of the
    two it merges (so every vertex stays one of the input's: a mesh inside a convex area stays inside it; the
    fit is as close, the collapse about half again as slow)."""
    if len(mesh.vertices) <= max_vertices:
        return mesh
    return _decimated(mesh, max_vertices, keep_positions)


@in_child_process  # MeshLab's filters start OpenMP threads (parallel.in_child_process)
def _decimated(mesh: Mesh, max_vertices: int, keep_positions: bool) -> Mesh:
    ms = meshset(mesh.vertices, mesh.faces)
    # The outline's length after simplification is not known in advance: aim as if none were left (a few
    # vertices too many), then once more from there with the outline that is left (a few too few).
    faces = target_faces(mesh.faces, max_vertices, with_boundary=False)
    for _ in range(MAX_PASSES):
        ms.meshing_decimation_quadric_edge_collapse(
            targetfacenum=max(faces, 1), qualitythr=QUALITY_THRESHOLD, preservenormal=True, preservetopology=True,
            optimalplacement=not keep_positions, planarquadric=True, autoclean=True)
        if ms.current_mesh().vertex_number() <= max_vertices:
            break
        faces = target_faces(ms.current_mesh().face_matrix(), max_vertices)
    return current_mesh(ms)
