"""Meshes and point clouds handed to pymeshlab (MeshLab's filters) and taken back."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pymeshlab

from .model import Mesh, TexturedMesh


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


def textured_meshset(mesh: TexturedMesh) -> pymeshlab.MeshSet:
    """A MeshSet holding a mesh with per-corner texture coordinates into one texture. Through an OBJ: MeshLab's
    texture-aware filters ask each face to name its texture, which only its file readers set. The texture image
    is not written (nothing reads it back)."""
    corners = np.column_stack([mesh.faces, mesh.face_uvs])[:, [0, 3, 1, 4, 2, 5]] + 1
    ms = pymeshlab.MeshSet()
    with tempfile.TemporaryDirectory(prefix="aeromap-mesh-") as scratch:
        obj = Path(scratch) / "mesh.obj"
        (Path(scratch) / "mesh.mtl").write_text("newmtl texture\nmap_Kd texture.png\n")
        with obj.open("w") as f:
            f.write("mtllib mesh.mtl\n")
            np.savetxt(f, mesh.vertices, fmt="v %.6f %.6f %.6f")
            np.savetxt(f, mesh.uvs, fmt="vt %.7f %.7f")
            f.write("usemtl texture\n")
            np.savetxt(f, corners, fmt="f %d/%d %d/%d %d/%d")
        ms.load_new_mesh(str(obj))
    return ms
