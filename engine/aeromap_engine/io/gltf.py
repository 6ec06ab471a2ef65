"""glTF 2.0 binary (GLB) textured models as ODM's obj2glb writes them: one primitive per atlas that faces use, each
with an unlit material (KHR_materials_unlit) whose base colour is the atlas re-encoded as JPEG (quality 90), and the
world frame's offset as the asset's CESIUM_RTC centre, so that centre + position gives CRS coordinates while the
float32 positions stay small.

Axes: positions are the world frame's as they are (x east, y north, z up), not turned to glTF's y up. ODM does the
same (obj2glb copies the OBJ's vertices), and WebODM relies on it: its 3D view adds the GLB's scene to the z-up
point-cloud scene, moved by the CESIUM_RTC centre's x and y and not rotated. Texture coordinates follow glTF
(v down from the image's top): v = 1 - v of the OBJ convention."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pygltflib

from ..atomic_files import atomic_path
from ..mesh.model import TexturedMesh
from .obj import check_materials, material_name

_JPEG_QUALITY = 90


class _BinaryChunk:
    """The GLB's single buffer, filled view by view, packed tight."""

    def __init__(self, gltf: pygltflib.GLTF2) -> None:
        self.gltf = gltf
        self.parts: list[bytes] = []
        self.length = 0

    def add_view(self, data: bytes, target: int | None) -> int:
        self.gltf.bufferViews.append(pygltflib.BufferView(buffer=0, byteOffset=self.length, byteLength=len(data),
                                                          target=target))
        self.parts.append(data)
        self.length += len(data)
        return len(self.gltf.bufferViews) - 1

    def add_accessor(self, array: np.ndarray, target: int, bounds: bool = False) -> int:
        """An accessor over a new view holding `array` (float32 rows of 2 or 3, or uint32 scalars)."""
        kind = {1: pygltflib.SCALAR, 2: pygltflib.VEC2, 3: pygltflib.VEC3}[1 if array.ndim == 1 else array.shape[1]]
        component = pygltflib.FLOAT if array.dtype == np.float32 else pygltflib.UNSIGNED_INT
        view = self.add_view(np.ascontiguousarray(array).tobytes(), target)
        self.gltf.accessors.append(pygltflib.Accessor(
            bufferView=view, componentType=component, count=len(array), type=kind,
            min=array.min(axis=0).tolist() if bounds else None, max=array.max(axis=0).tolist() if bounds else None))
        return len(self.gltf.accessors) - 1

    def blob(self) -> bytes:
        return b"".join(self.parts)


def write_glb(path: Path, mesh: TexturedMesh, offset: tuple[float, float] | None) -> None:
    """Write atomically. `offset` is the world frame's origin (easting, northing) in the CRS; None in a local
    frame, where the file has no CESIUM_RTC."""
    check_materials(mesh)
    if not len(mesh.faces):
        raise ValueError("a glTF mesh needs at least one face")
    gltf = pygltflib.GLTF2(
        asset=pygltflib.Asset(version="2.0", generator="aeromap_engine"), scene=0,
        scenes=[pygltflib.Scene(nodes=[0])], nodes=[pygltflib.Node(mesh=0)],
        # Clamped: atlas charts touching the border must not blend with the opposite border.
        samplers=[pygltflib.Sampler(magFilter=pygltflib.LINEAR, minFilter=pygltflib.LINEAR,
                                    wrapS=pygltflib.CLAMP_TO_EDGE, wrapT=pygltflib.CLAMP_TO_EDGE)],
        # Used, not required: a viewer without the extension still shows the texture, only shaded.
        extensionsUsed=["KHR_materials_unlit"])
    chunk = _BinaryChunk(gltf)
    materials = [int(material) for material in np.unique(mesh.face_material)]
    primitives = [_primitive(chunk, mesh, material, index) for index, material in enumerate(materials)]
    # The JPEGs after all vertex and index data: every view before them holds 4-byte values, so each starts on the
    # 4-byte boundary that glTF requires, whatever the JPEGs' lengths.
    for material in materials:
        _add_material(chunk, mesh.atlases[material], material_name(material))
    gltf.meshes = [pygltflib.Mesh(primitives=primitives)]
    if offset is not None:
        gltf.extensionsUsed.append("CESIUM_RTC")
        gltf.extensions = {"CESIUM_RTC": {"center": [float(offset[0]), float(offset[1]), 0.0]}}
    blob = chunk.blob()
    gltf.buffers = [pygltflib.Buffer(byteLength=len(blob))]
    gltf.set_binary_blob(blob)
    with atomic_path(path) as tmp:
        gltf.save_binary(str(tmp))


def _primitive(chunk: _BinaryChunk, mesh: TexturedMesh, material: int, index: int) -> pygltflib.Primitive:
    """The faces of one material, which becomes the file's material `index`, with one glTF vertex per distinct
    (position, texture coordinate) corner pair, since glTF indexes both with one index."""
    faces = np.flatnonzero(mesh.face_material == material)
    uv_count = len(mesh.uvs)
    pairs = mesh.faces[faces].astype(np.int64).ravel() * uv_count + mesh.face_uvs[faces].ravel()
    keys, indices = np.unique(pairs, return_inverse=True)
    positions = mesh.vertices[keys // uv_count].astype(np.float32)
    uvs = mesh.uvs[keys % uv_count].astype(np.float32)
    texcoords = np.column_stack([uvs[:, 0], 1 - uvs[:, 1]])
    attributes = pygltflib.Attributes(
        POSITION=chunk.add_accessor(positions, pygltflib.ARRAY_BUFFER, bounds=True),  # glTF requires min and max
        TEXCOORD_0=chunk.add_accessor(texcoords, pygltflib.ARRAY_BUFFER))
    index_accessor = chunk.add_accessor(indices.astype(np.uint32).ravel(), pygltflib.ELEMENT_ARRAY_BUFFER)
    return pygltflib.Primitive(attributes=attributes, indices=index_accessor, material=index)


def _add_material(chunk: _BinaryChunk, atlas: np.ndarray, name: str) -> None:
    gltf = chunk.gltf
    ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(atlas, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, _JPEG_QUALITY])
    if not ok:
        raise ValueError(f"could not encode the atlas of {name} as JPEG")
    gltf.images.append(pygltflib.Image(bufferView=chunk.add_view(jpeg.tobytes(), None), mimeType="image/jpeg"))
    gltf.textures.append(pygltflib.Texture(source=len(gltf.images) - 1, sampler=0))
    gltf.materials.append(pygltflib.Material(
        name=name, alphaMode=pygltflib.OPAQUE, extensions={"KHR_materials_unlit": {}},
        # The fallback for viewers without the extension: no metal, no highlights.
        pbrMetallicRoughness=pygltflib.PbrMetallicRoughness(
            baseColorTexture=pygltflib.TextureInfo(index=len(gltf.textures) - 1), metallicFactor=0.0,
            roughnessFactor=1.0)))


def read_glb(path: Path) -> tuple[TexturedMesh, np.ndarray | None]:
    """A GLB as write_glb writes it (one mesh, each primitive indexed triangles with one base-colour texture) and
    its CESIUM_RTC centre, None without one. Every primitive keeps its own vertices; texture coordinates go back
    to OBJ's convention."""
    gltf = pygltflib.GLTF2().load_binary(str(path))
    blob = gltf.binary_blob()
    vertices, uvs, faces, materials = [], [], [], []
    textures: dict[int, int] = {}  # the file's image index -> the atlas list's
    atlases: list[np.ndarray] = []
    count = 0
    for mesh in gltf.meshes:
        for primitive in mesh.primitives:
            if primitive.indices is None or primitive.attributes.TEXCOORD_0 is None or primitive.material is None:
                raise ValueError(f"{path.name}: a primitive without indices, texture coordinates or material")
            texture = gltf.materials[primitive.material].pbrMetallicRoughness.baseColorTexture
            image = gltf.textures[texture.index].source
            if image not in textures:
                textures[image] = len(atlases)
                atlases.append(_decoded(gltf, blob, image))
            positions = _accessor(gltf, blob, primitive.attributes.POSITION).astype(np.float64)
            texcoords = _accessor(gltf, blob, primitive.attributes.TEXCOORD_0)
            indices = _accessor(gltf, blob, primitive.indices).astype(np.int64).reshape(-1, 3)
            vertices.append(positions)
            uvs.append(np.column_stack([texcoords[:, 0], 1 - texcoords[:, 1]]).astype(np.float32))
            faces.append(indices + count)
            materials.append(np.full(len(indices), textures[image], np.int32))
            count += len(positions)
    if not faces:
        raise ValueError(f"{path.name} holds no mesh")
    all_faces = np.concatenate(faces).astype(np.int32)
    center = (gltf.extensions or {}).get("CESIUM_RTC", {}).get("center")
    textured = TexturedMesh(np.concatenate(vertices), all_faces, np.concatenate(uvs), all_faces.copy(),
                            np.concatenate(materials), atlases)
    return textured, None if center is None else np.asarray(center, np.float64)


_COMPONENTS = {pygltflib.FLOAT: np.float32, pygltflib.UNSIGNED_INT: np.uint32, pygltflib.UNSIGNED_SHORT: np.uint16,
               pygltflib.UNSIGNED_BYTE: np.uint8}
_WIDTHS = {pygltflib.SCALAR: 1, pygltflib.VEC2: 2, pygltflib.VEC3: 3}


def _accessor(gltf: pygltflib.GLTF2, blob: bytes, index: int) -> np.ndarray:
    accessor = gltf.accessors[index]
    view = gltf.bufferViews[accessor.bufferView]
    dtype, width = np.dtype(_COMPONENTS[accessor.componentType]), _WIDTHS[accessor.type]
    if view.byteStride not in (None, dtype.itemsize * width):
        raise ValueError(f"accessor {index} is interleaved")
    values = np.frombuffer(blob, dtype, accessor.count * width, (view.byteOffset or 0) + (accessor.byteOffset or 0))
    return values.reshape(-1, width) if width > 1 else values


def _decoded(gltf: pygltflib.GLTF2, blob: bytes, index: int) -> np.ndarray:
    view = gltf.bufferViews[gltf.images[index].bufferView]
    data = np.frombuffer(blob, np.uint8, view.byteLength, view.byteOffset or 0)
    image = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"image {index} of the model cannot be decoded")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
