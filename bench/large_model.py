"""A textured model far larger than one survey's, for the 3D view's streaming: a processed task's 3D model copied
side by side on a grid (copies x copies, each with its own atlases), tiled by the engine's 3D Tiles writer, and
packed as an all.zip to import into a running Aeromap (then `bench/viewer3d_heap.ts` opens it). Prints the
model's size and the tiling's time and peak memory.

    engine/.venv/bin/python bench/large_model.py PROJECT_FOLDER OUT.zip [--copies 4]

PROJECT_FOLDER: a task's results processed with gltf (odm_texturing/odm_textured_model_geo.glb) and
georeferenced (odm_georeferencing/coords.txt).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from aeromap_engine.crs_offset import Georef
from aeromap_engine.io.gltf import read_glb, write_glb
from aeromap_engine.mesh.model import TexturedMesh
from aeromap_engine.project import Project
from aeromap_engine.tiles3d.model import write_model_tiles

GAP_M = 10.0  # between copies


def copied(mesh: TexturedMesh, copies: int) -> TexturedMesh:
    """`copies` x `copies` of the mesh, side by side; each copy its own atlases (as separate photographs give)."""
    size = mesh.vertices.max(axis=0) - mesh.vertices.min(axis=0)
    shifts = [np.array([i * (size[0] + GAP_M), j * (size[1] + GAP_M), 0.0]) for i in range(copies)
              for j in range(copies)]
    count = len(shifts)
    return TexturedMesh(np.concatenate([mesh.vertices + shift for shift in shifts]),
                        np.concatenate([mesh.faces + k * len(mesh.vertices) for k in range(count)]),
                        np.concatenate([mesh.uvs] * count),
                        np.concatenate([mesh.face_uvs + k * len(mesh.uvs) for k in range(count)]),
                        np.concatenate([mesh.face_material + k * len(mesh.atlases) for k in range(count)]),
                        [atlas.copy() for _ in range(count) for atlas in mesh.atlases])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()
    project = Project(args.project)
    crs = Georef.load(project).crs
    source, center = read_glb(project.texturing_dir(True) / "odm_textured_model_geo.glb")
    large = copied(source, args.copies)
    with tempfile.TemporaryDirectory() as scratch:
        glb = Path(scratch) / "odm_textured_model_geo.glb"
        write_glb(glb, large, (float(center[0]), float(center[1])))
        del large
        folder = Path(scratch) / "model"
        folder.mkdir()
        began = time.monotonic()
        tiles = write_model_tiles(folder, glb, crs)
        seconds = time.monotonic() - began
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        with zipfile.ZipFile(args.out, "w", zipfile.ZIP_STORED) as archive:
            archive.write(glb, "odm_texturing/odm_textured_model_geo.glb")
            for file in sorted(folder.rglob("*")):
                archive.write(file, f"3d_tiles/model/{file.relative_to(folder).as_posix()}")
        print(f"model: {args.copies}x{args.copies} copies, {len(source.faces) * args.copies**2:,} faces, "
              f"{len(source.atlases) * args.copies**2} atlases, GLB {glb.stat().st_size / 2**20:.0f} MB")
        print(f"3D Tiles: {tiles.tiles} tiles in {tiles.levels} levels, {tiles.size[0]:.0f} x {tiles.size[1]:.0f} m, "
              f"{seconds:.0f} s, peak memory {peak:.1f} GB")
        print(f"all.zip: {args.out} ({args.out.stat().st_size / 2**20:.0f} MB)")


if __name__ == "__main__":
    main()
