"""The mesh types passed between stages and to the writers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Mesh:
    vertices: np.ndarray  # (N, 3) float64 in the engine's world frame (projected CRS minus offset)
    faces: np.ndarray  # (M, 3) int32 vertex indices, counter-clockwise seen from outside (from above, in 2.5D)

    def __len__(self) -> int:
        return len(self.faces)


@dataclass
class TexturedMesh:
    """A mesh whose faces take their colour from texture atlases (OBJ's model: separate position and texture
    coordinate indices per face corner)."""

    vertices: np.ndarray  # (N, 3) float64, world frame
    faces: np.ndarray  # (M, 3) int32 indices into vertices
    uvs: np.ndarray  # (K, 2) float32 texture coordinates in [0, 1] of the face's atlas, OBJ's convention (v up)
    face_uvs: np.ndarray  # (M, 3) int32 indices into uvs
    face_material: np.ndarray  # (M,) int32 index into atlases
    atlases: list[np.ndarray]  # (h, w, 3) uint8 RGB images, each side at most the texturing's atlas limit


def mesh_kinds(use_3dmesh: bool, skip_3dmodel: bool) -> tuple[bool, ...]:
    """The meshes a run makes, True for the full 3D one, as ODM makes them: the 3D mesh unless skip-3dmodel, and
    the 2.5D one beside it unless use-3dmesh."""
    if skip_3dmodel:
        return ()
    return (True,) if use_3dmesh else (True, False)
