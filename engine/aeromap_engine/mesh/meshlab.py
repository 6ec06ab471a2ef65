"""Meshes and point clouds handed to pymeshlab (MeshLab's filters) and taken back."""

from __future__ import annotations

import numpy as np
import pymeshlab

from .model import Mesh


def meshset(vertices: np.ndarray, faces: np.ndarray | None = None,
            normals: np.ndarray | None = None) -> pymeshlab.MeshSet:
    """A MeshSet holding one mesh, or one point cloud when `faces` is None."""
    arrays: dict[str, np.ndarray] = {"vertex_matrix": np.ascontiguousarray(vertices, np.float64)}
    if faces is not None:
        arrays["face_matrix"] = np.ascontiguousarray(faces, np.int32)
    if normals is not None:
        arrays["v_normals_matrix"] = np.ascontiguousarray(normals, np.float64)
    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(**arrays))
    return ms


def current_mesh(ms: pymeshlab.MeshSet) -> Mesh:
    """The MeshSet's current mesh, compacted (MeshLab leaves deleted elements in place until then)."""
    mesh = ms.current_mesh()
    mesh.compact()
    return Mesh(mesh.vertex_matrix().astype(np.float64), mesh.face_matrix().astype(np.int32))
