"""Binary PLY triangle meshes (float vertices, int face lists), the format of the meshing stage's outputs
(ODM's odm_mesh.ply and odm_25dmesh.ply), readable by MeshLab, CloudCompare and trimesh."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..atomic_files import atomic_path
from ..mesh.model import Mesh

_FACE = np.dtype([("count", "u1"), ("indices", "<i4", (3,))])


def write_mesh_ply(path: Path, mesh: Mesh, comments: tuple[str, ...] = ()) -> None:
    """Vertices as float64 when given so (CRS coordinates), float32 otherwise; written atomically."""
    double = mesh.vertices.dtype == np.float64
    kind = "double" if double else "float"
    header = ["ply", "format binary_little_endian 1.0", *(f"comment {c}" for c in comments),
              f"element vertex {len(mesh.vertices)}", f"property {kind} x", f"property {kind} y",
              f"property {kind} z", f"element face {len(mesh.faces)}", "property list uchar int vertex_indices",
              "end_header"]
    faces = np.empty(len(mesh.faces), _FACE)
    faces["count"] = 3
    faces["indices"] = mesh.faces
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(("\n".join(header) + "\n").encode("ascii"))
            np.ascontiguousarray(mesh.vertices, "<f8" if double else "<f4").tofile(f)
            faces.tofile(f)


def read_mesh_ply(path: Path) -> Mesh:
    """Read a mesh written by write_mesh_ply (vertex x, y, z then triangle faces); vertices come back float64."""
    with open(path, "rb") as f:
        if f.readline().strip() != b"ply":
            raise ValueError(f"{path} is not a PLY file")
        counts: dict[str, int] = {}
        kind = "float"
        while True:
            line = f.readline()
            if not line:
                raise ValueError(f"{path}: PLY header has no end")
            words = line.decode("ascii", "replace").split()
            if words[:1] == ["element"]:
                counts[words[1]] = int(words[2])
            elif words[:2] == ["property", "double"]:
                kind = "double"
            elif words[:1] == ["format"] and words[1] != "binary_little_endian":
                raise ValueError(f"{path}: only binary little-endian PLY is supported")
            elif words[:1] == ["end_header"]:
                break
        vertices = np.fromfile(f, "<f8" if kind == "double" else "<f4", counts.get("vertex", 0) * 3)
        faces = np.fromfile(f, _FACE, counts.get("face", 0))
    if len(faces) and (faces["count"] != 3).any():
        raise ValueError(f"{path}: only triangle faces are supported")
    return Mesh(vertices.reshape(-1, 3).astype(np.float64), faces["indices"].astype(np.int32))
