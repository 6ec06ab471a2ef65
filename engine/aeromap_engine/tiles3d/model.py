"""The textured model as 3D Tiles: the GLB the texturing wrote (io/gltf.py), its positions moved from the world
frame (CESIUM_RTC centre + position, z up) into the east-north-up frame at the model's centre and turned to glTF's
y up, as 3D Tiles expects of glTF content; one tile, whose box holds every vertex. Indices, texture coordinates
and the JPEG atlases are kept byte for byte."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pygltflib

from ..atomic_files import write_json
from .frame import frame_at
from .tileset import box_volume, tileset

TILESET = "tileset.json"
CONTENT = "model.glb"
RTC = "CESIUM_RTC"


@dataclass(frozen=True)
class ModelTiles:
    vertices: int
    size: tuple[float, float, float]  # east, north, up extent in metres


def write_model_tiles(folder: Path, glb: Path, crs: str) -> ModelTiles:
    """Fill `folder` (made by the caller) with the tileset of a georeferenced GLB whose CRS is `crs`."""
    gltf = pygltflib.GLTF2().load_binary(str(glb))
    center = (gltf.extensions or {}).get(RTC, {}).get("center")
    if center is None:
        raise ValueError(f"{glb} has no {RTC} centre: it is not placed in a CRS")
    blob = bytearray(gltf.binary_blob())
    accessors = sorted({primitive.attributes.POSITION for mesh in gltf.meshes for primitive in mesh.primitives})
    views = {index: _position_view(gltf, index) for index in accessors}
    world = {index: np.frombuffer(blob, np.float32, count, start).reshape(-1, 3).astype(np.float64) + center
             for index, (start, count) in views.items()}
    everything = np.concatenate(list(world.values()))
    frame = frame_at(crs, (everything.min(axis=0) + everything.max(axis=0)) / 2)
    low, high = np.full(3, np.inf), np.full(3, -np.inf)
    for index, xyz in world.items():
        local = frame.from_crs(xyz)
        y_up = np.column_stack([local[:, 0], local[:, 2], -local[:, 1]]).astype(np.float32)
        stored = y_up[:, [0, 2, 1]].astype(np.float64) * [1, -1, 1]  # the vertices as stored, back to z up
        low, high = np.minimum(low, stored.min(axis=0)), np.maximum(high, stored.max(axis=0))
        start, count = views[index]
        blob[start:start + 4 * count] = y_up.tobytes()
        gltf.accessors[index].min = y_up.min(axis=0).tolist()
        gltf.accessors[index].max = y_up.max(axis=0).tolist()
    gltf.extensions = {name: value for name, value in gltf.extensions.items() if name != RTC}
    gltf.extensionsUsed = [name for name in gltf.extensionsUsed if name != RTC]
    gltf.set_binary_blob(bytes(blob))
    gltf.save_binary(str(folder / CONTENT))
    size = high - low
    root = {"boundingVolume": box_volume(low, high), "geometricError": 0.0, "refine": "REPLACE",
            "content": {"uri": CONTENT}}
    write_json(folder / TILESET, tileset(root, float(size.max()), frame.transform))
    return ModelTiles(len(everything), (float(size[0]), float(size[1]), float(size[2])))


def _position_view(gltf: pygltflib.GLTF2, index: int) -> tuple[int, int]:
    """(byte offset in the binary chunk, float count) of a tightly packed float32 VEC3 position accessor."""
    accessor = gltf.accessors[index]
    view = gltf.bufferViews[accessor.bufferView]
    if accessor.componentType != pygltflib.FLOAT or accessor.type != pygltflib.VEC3 or view.byteStride not in (
            None, 12):
        raise ValueError(f"position accessor {index} is not packed float32 VEC3")
    return (view.byteOffset or 0) + (accessor.byteOffset or 0), 3 * accessor.count
