"""Wavefront OBJ textured models in the layout of ODM's texturing (texrecon's writer): odm_textured_model_geo.obj
and .mtl, one material `materialNNNN` per atlas, each atlas as `odm_textured_model_geo_<material>_map_Kd.png`, and
a copy of the .mtl as odm_textured_model.mtl for clients that look for the older name. Coordinates are the engine's
world frame (projected CRS minus the offset), as in ODM's `_geo` model; texture coordinates keep OBJ's v up."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import cv2
import numpy as np

from ..mesh.model import TexturedMesh

MODEL_NAME = "odm_textured_model_geo"
LEGACY_MTL = "odm_textured_model.mtl"
# Rows formatted by one string operation: enough to make Python's per-call cost negligible, few enough that the
# chunk's text stays a few megabytes.
_ROWS = 65536


def material_name(index: int) -> str:
    return f"material{index:04d}"


def texture_name(index: int) -> str:
    return f"{MODEL_NAME}_{material_name(index)}_map_Kd.png"


def check_materials(mesh: TexturedMesh) -> None:
    """Refuse a mesh whose faces name an atlas it does not have: the files would reference a missing texture."""
    if len(mesh.face_material) and not 0 <= mesh.face_material.min() <= mesh.face_material.max() < len(mesh.atlases):
        raise ValueError(f"face materials span {mesh.face_material.min()}..{mesh.face_material.max()} "
                         f"but the mesh has {len(mesh.atlases)} atlases")


def write_obj(directory: Path, mesh: TexturedMesh, workers: int = 1) -> None:
    """Fill `directory`, which the caller made, with the model, its material libraries and its atlases.

    `workers` atlases are PNG-encoded at once, beside the text, which is written meanwhile (the encoder releases
    the interpreter lock)."""
    check_materials(mesh)
    with ThreadPoolExecutor(max(1, workers)) as pool:
        pngs = [pool.submit(_write_png, directory / texture_name(i), atlas) for i, atlas in enumerate(mesh.atlases)]
        library = _material_library(len(mesh.atlases))
        (directory / f"{MODEL_NAME}.mtl").write_text(library)
        (directory / LEGACY_MTL).write_text(library)
        with open(directory / f"{MODEL_NAME}.obj", "wb") as f:
            _write_model(f, mesh)
        for png in pngs:
            png.result()


def _material_library(count: int) -> str:
    # White colours, so that viewers which multiply the texture by Kd (three.js's MTLLoader does) show it unchanged.
    return "".join(f"newmtl {material_name(i)}\nKa 1.000000 1.000000 1.000000\nKd 1.000000 1.000000 1.000000\n"
                   f"Ks 0.000000 0.000000 0.000000\nillum 1\nNs 1.000000\nmap_Kd {texture_name(i)}\n"
                   for i in range(count))


def _write_model(f: BinaryIO, mesh: TexturedMesh) -> None:
    """One `usemtl` run per material: faces are grouped by material, in their order within each group."""
    f.write(f"mtllib {MODEL_NAME}.mtl\n".encode("ascii"))
    _write_rows(f, "v %.6f %.6f %.6f\n", mesh.vertices)  # micrometres: the world frame's metres stay small
    _write_rows(f, "vt %.6f %.6f\n", mesh.uvs)  # a thousandth of a pixel on an 8192 px atlas
    order = np.argsort(mesh.face_material, kind="stable")
    materials = mesh.face_material[order]
    corners = np.stack([mesh.faces[order], mesh.face_uvs[order]], axis=2).reshape(-1, 6) + 1  # v/vt pairs, 1-based
    starts = np.flatnonzero(np.diff(materials, prepend=-1))
    for start, end in zip(starts, [*starts[1:], len(materials)]):
        f.write(f"usemtl {material_name(int(materials[start]))}\n".encode("ascii"))
        _write_rows(f, "f %d/%d %d/%d %d/%d\n", corners[start:end])


def _write_rows(f: BinaryIO, row_format: str, rows: np.ndarray) -> None:
    """Format a whole chunk of rows with one `%` over a repeated format: several times faster than np.savetxt,
    which formats row by row."""
    for start in range(0, len(rows), _ROWS):
        chunk = rows[start:start + _ROWS]
        f.write(((row_format * len(chunk)) % tuple(chunk.ravel().tolist())).encode("ascii"))


def _write_png(path: Path, atlas: np.ndarray) -> None:
    # Level 1: a large atlas compresses several times faster than at the default level and ends only slightly
    # larger.
    if not cv2.imwrite(str(path), cv2.cvtColor(atlas, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 1]):
        raise OSError(f"could not write {path}")
