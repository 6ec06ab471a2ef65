"""The textured model as 3D Tiles with levels of detail (tiles3d/meshtiles.py cuts and coarsens it): the leaves
hold the model as the texturing made it, each level above a quarter of the faces and of the texels per cell, so
that a viewer streams what the screen shows and a model of any size opens. Positions go from the world frame
(the GLB's CESIUM_RTC centre + position, z up) into the east-north-up frame at the model's centre, turned to
glTF's y up as 3D Tiles expects of glTF content. The coarsest level that fits SAFE_FACES is also written as a
georeferenced GLB like the texturing's: the reduced model for phones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic_files import write_json
from ..io.gltf import read_glb, write_glb
from ..mesh.model import TexturedMesh
from ..mesh.simplify import simplify_textured
from .frame import LocalFrame, frame_at
from .meshtiles import Grid, face_centres, leaf_level, merged, repacked, submesh, texel_size
from .tileset import box_volume, tileset

TILESET = "tileset.json"
LEAF_FACES = 60_000  # faces a leaf holds, about: a few MB of GLB
MAX_LEVEL = 6  # 4096 leaves
TEXTURE_LIMIT = 4096  # texels a tile's texture has a side, at most (what every WebGL device takes)
SAFE_FACES = 150_000


@dataclass(frozen=True)
class ModelTiles:
    vertices: int
    size: tuple[float, float, float]  # east, north, up extent in metres
    tiles: int
    levels: int


@dataclass
class Tile:
    level: int
    cell: tuple[int, int]
    mesh: TexturedMesh  # world frame
    deviation: float  # metres: the farthest the leaves' vertices under it lie from its surface, at most
    error: float  # metres: that deviation or a texel's side on the surface, whichever is larger
    children: list["Tile"]


def write_model_tiles(folder: Path, glb: Path, crs: str, safe_glb: Path | None = None) -> ModelTiles:
    """Fill `folder` (made by the caller) with the tileset of a georeferenced GLB whose CRS is `crs`; write the
    reduced model to `safe_glb` when given."""
    mesh, center = read_glb(glb)
    if center is None:
        raise ValueError(f"{glb} has no CESIUM_RTC centre: it is not placed in a CRS")
    mesh = merged([mesh])  # a vertex in several of the file's primitives becomes one
    world = mesh.vertices + center
    frame = frame_at(crs, (world.min(axis=0) + world.max(axis=0)) / 2)
    grid = Grid.around(mesh.vertices)
    leaves = leaf_level(len(mesh.faces), LEAF_FACES, MAX_LEVEL)
    levels = _levels(mesh, grid, leaves)
    tiles = sum(len(level) for level in levels)
    root = levels[0][0]
    (folder / "tiles").mkdir()
    node, low, high = _written(folder, root, frame, center)
    size = high - low
    document = tileset(node, float(np.linalg.norm(size)), frame.transform)
    document["extras"] = {"crs": crs, "frameToCrs": frame.crs_affine(low, high)}
    write_json(folder / TILESET, document)
    if safe_glb is not None:
        _write_safe(safe_glb, levels, center)
    return ModelTiles(len(mesh.vertices), (float(size[0]), float(size[1]), float(size[2])), tiles, leaves + 1)


def _levels(mesh: TexturedMesh, grid: Grid, leaves: int) -> list[list[Tile]]:
    """The tiles of every level, root first: the leaves cut from the model, each level above made of the four
    cells below it, joined, at half the texel density, and simplified to a quarter of their faces. A tile's
    geometric error bounds how far it strays from the leaves, in shape (the simplifications' deviations added up)
    and in detail (its texel's side), and is never below its children's."""
    cells = grid.cells(face_centres(mesh), leaves)
    keys = cells[:, 0] * 2 ** leaves + cells[:, 1]
    level = []
    for key in np.unique(keys):
        tile_mesh = repacked(submesh(mesh, keys == key), 1.0, TEXTURE_LIMIT)
        level.append(Tile(leaves, (int(key // 2 ** leaves), int(key % 2 ** leaves)), tile_mesh, 0.0, 0.0, []))
    levels = [level]
    for depth in range(leaves - 1, -1, -1):
        groups: dict[tuple[int, int], list[Tile]] = {}
        for child in levels[0]:
            groups.setdefault((child.cell[0] // 2, child.cell[1] // 2), []).append(child)
        level = []
        for cell, children in sorted(groups.items()):
            joined = repacked(merged([c.mesh for c in children]), 0.5, TEXTURE_LIMIT)
            coarse = simplify_textured(joined, max(len(joined.faces) // 4, 1))
            deviation = coarse.deviation + max(c.deviation for c in children)
            error = max(deviation, texel_size(coarse.mesh), *(c.error for c in children))
            level.append(Tile(depth, cell, coarse.mesh, deviation, error, children))
        levels.insert(0, level)
    return levels


def _written(folder: Path, tile: Tile, frame: LocalFrame, center: np.ndarray) -> tuple[dict, np.ndarray, np.ndarray]:
    """Writes the tile's content and its descendants'; returns its node of the tileset and its box (low, high) in
    the frame, z up, which holds its own vertices and its descendants'."""
    enu = frame.from_crs(tile.mesh.vertices + center)
    y_up = np.column_stack([enu[:, 0], enu[:, 2], -enu[:, 1]])
    content = TexturedMesh(y_up, tile.mesh.faces, tile.mesh.uvs, tile.mesh.face_uvs, tile.mesh.face_material,
                           tile.mesh.atlases)
    write_glb(folder / _content_uri(tile), content, None)
    low, high = enu.min(axis=0), enu.max(axis=0)
    children = []
    for child in tile.children:
        node, child_low, child_high = _written(folder, child, frame, center)
        children.append(node)
        low, high = np.minimum(low, child_low), np.maximum(high, child_high)
    node = {"boundingVolume": box_volume(low, high), "geometricError": tile.error, "refine": "REPLACE",
            "content": {"uri": _content_uri(tile)}}
    if children:
        node["children"] = children
    return node, low, high


def _content_uri(tile: Tile) -> str:
    return f"tiles/{tile.level}_{tile.cell[0]}_{tile.cell[1]}.glb"


def _write_safe(path: Path, levels: list[list[Tile]], center: np.ndarray) -> None:
    """The finest level whose faces fit SAFE_FACES (the root's when none does), as one GLB."""
    fitting = [level for level in levels if sum(len(t.mesh.faces) for t in level) <= SAFE_FACES]
    level = fitting[-1] if fitting else levels[0]
    write_glb(path, merged([t.mesh for t in level]), (float(center[0]), float(center[1])))
