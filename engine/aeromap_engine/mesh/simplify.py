"""Quadric edge collapse down to a vertex budget: flat areas end up with few large triangles while the edges of
cars, trees and buildings keep theirs (ODM's mesh-size is a vertex count, MeshLab's target a face count)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymeshlab

from ..parallel import in_child_process
from .meshlab import current_mesh, meshset, textured_meshset
from .model import Mesh, TexturedMesh

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


@dataclass(frozen=True)
class Simplified:
    mesh: TexturedMesh
    deviation: float  # the farthest a vertex of the input lies from the result's surface, in the mesh's units


@in_child_process
def simplify_textured(mesh: TexturedMesh, target_faces: int) -> Simplified:
    """A mesh with one texture collapsed towards `target_faces` faces, its texture coordinates carried along
    (charts' seams weigh in the collapse cost). Boundary vertices stay where they are, so that meshes cut from
    one surface and simplified apart still meet without cracks."""
    if len(mesh.faces) <= target_faces:
        return Simplified(mesh, 0.0)
    ms = textured_meshset(mesh)
    ms.add_mesh(ms.current_mesh(), "input")  # kept to measure the result against
    ms.set_current_mesh(0)
    ms.meshing_decimation_quadric_edge_collapse_with_texture(
        targetfacenum=max(target_faces, 1), qualitythr=QUALITY_THRESHOLD, preserveboundary=True,
        optimalplacement=True, preservenormal=True, planarquadric=True)
    result = ms.current_mesh()
    result.compact()
    distance = ms.get_hausdorff_distance(sampledmesh=1, targetmesh=0, samplevert=True,
                                         samplenum=ms.mesh(1).vertex_number(),
                                         maxdist=pymeshlab.PercentageValue(100))
    uvs, face_uvs = np.unique(result.wedge_tex_coord_matrix().astype(np.float32), axis=0, return_inverse=True)
    faces = result.face_matrix().astype(np.int32)
    coarse = TexturedMesh(result.vertex_matrix().astype(np.float64), faces, uvs,
                          face_uvs.reshape(-1, 3).astype(np.int32), np.zeros(len(faces), np.int32), mesh.atlases)
    return Simplified(coarse, float(distance["max"]))
