"""The textured-model writers (OBJ + MTL + PNG, GLB), read back by an independent reader on a small mesh whose every
face has a known texture colour."""

from __future__ import annotations

import io
import struct
import warnings
from pathlib import Path

import numpy as np
import pygltflib
import pytest
import trimesh
from PIL import Image
from pygltflib import validator
from scipy.spatial import cKDTree

from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.io.gltf import write_glb
from aeromap_engine.io.ply import ply_writer, read_ply
from aeromap_engine.io.obj import write_obj
from aeromap_engine.mesh.model import TexturedMesh

OFFSET = (512345.0, 4512345.0)
# Each atlas in four quadrants of strongly different colours, so that a sample taken from the wrong atlas, or with
# u or v mirrored, lands on another colour. Rows of QUADRANTS are (top-left, top-right, bottom-left, bottom-right).
QUADRANTS = np.array([[[230, 20, 20], [20, 230, 20], [20, 20, 230], [230, 230, 20]],
                      [[230, 20, 230], [20, 230, 230], [240, 240, 240], [15, 15, 15]]], dtype=np.uint8)
ATLAS_SHAPES = [(128, 128), (96, 64)]  # (height, width); the second is not square, to catch swapped axes
COLOUR_TOLERANCE = 16  # JPEG and chroma subsampling, well inside uniform quadrants
FILES = {"odm_textured_model_geo.obj", "odm_textured_model_geo.mtl", "odm_textured_model.mtl",
         "odm_textured_model_geo_material0000_map_Kd.png", "odm_textured_model_geo_material0001_map_Kd.png"}


def _atlas(colours: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    h, w = shape
    atlas = np.empty((h, w, 3), np.uint8)
    atlas[:h // 2, :w // 2], atlas[:h // 2, w // 2:] = colours[0], colours[1]
    atlas[h // 2:, :w // 2], atlas[h // 2:, w // 2:] = colours[2], colours[3]
    return atlas


def _scene() -> tuple[TexturedMesh, np.ndarray]:
    """A 3x3-cell terrain of 18 triangles (world frame, non-round coordinates) and each face's expected colour.

    Each cell takes a quadrant of one atlas; its two triangles share the diagonal's texture coordinates, and
    neighbouring cells share vertices but not texture coordinates, as texture seams do."""
    rng = np.random.default_rng(3)
    n = 3
    gx, gy = np.meshgrid(np.arange(n + 1) * 10.0, np.arange(n + 1) * 10.0)
    vertices = np.c_[gx.ravel(), gy.ravel(), 100 + rng.uniform(0, 8, gx.size)] + rng.uniform(0, 1e-3, (gx.size, 3))
    vertices[:, :2] += 1234.5678
    faces, face_uvs, face_material, colours, uvs = [], [], [], [], []
    for cell in range(n * n):
        row, col = divmod(cell, n)
        a = row * (n + 1) + col  # corners a, b (east of a), c (north of a), d (north-east)
        b, c, d = a + 1, a + n + 1, a + n + 2
        material, quadrant = cell % 2, (cell // 2) % 4
        top, right = quadrant < 2, quadrant % 2 == 1
        u0, v0 = (0.6 if right else 0.1), (0.6 if top else 0.1)  # 0.3-wide square inside the quadrant (v up)
        k = len(uvs)
        uvs += [(u0, v0), (u0 + 0.3, v0), (u0, v0 + 0.3), (u0 + 0.3, v0 + 0.3)]
        faces += [(a, b, d), (a, d, c)]  # counter-clockwise from above
        face_uvs += [(k, k + 1, k + 3), (k, k + 3, k + 2)]
        face_material += [material, material]
        colours += [QUADRANTS[material, quadrant]] * 2
    atlases = [_atlas(QUADRANTS[m], ATLAS_SHAPES[m]) for m in range(2)]
    mesh = TexturedMesh(vertices, np.array(faces, np.int32), np.array(uvs, np.float32), np.array(face_uvs, np.int32),
                        np.array(face_material, np.int32), atlases)
    return mesh, np.array(colours)


def _sample(image: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Colour at texture coordinates given in OBJ's convention (v up), which trimesh uses for both formats."""
    h, w = image.shape[:2]
    return image[int((1 - uv[1]) * h), int(uv[0] * w), :3]


def _check_faces(geometries: list[trimesh.Trimesh], mesh: TexturedMesh, colours: np.ndarray,
                 shift: np.ndarray, tolerance: float) -> None:
    """Every face of `mesh` is found once among the loaded faces, at the same corners (loaded + shift) and with its
    colour at the centroid of its texture coordinates."""
    centroids = cKDTree(mesh.vertices[mesh.faces].mean(axis=1))
    seen = []
    for geometry in geometries:
        image = np.asarray(_texture(geometry))
        for face in geometry.faces:
            corners = geometry.vertices[face] + shift
            distance, index = centroids.query(corners.mean(axis=0))
            assert distance < tolerance
            np.testing.assert_allclose(corners, mesh.vertices[mesh.faces[index]], atol=tolerance)
            colour = _sample(image, geometry.visual.uv[face].mean(axis=0)).astype(int)
            assert np.abs(colour - colours[index]).max() <= COLOUR_TOLERANCE, (index, colour, colours[index])
            seen.append(index)
    assert sorted(seen) == list(range(len(mesh.faces)))


def _texture(geometry: trimesh.Trimesh) -> Image.Image:
    """The OBJ's map_Kd or the GLB's base-colour texture, as trimesh loaded it."""
    material = geometry.visual.material
    image = material.baseColorTexture if isinstance(material, trimesh.visual.material.PBRMaterial) else material.image
    assert image is not None  # the reader found and decoded the texture
    return image


def _load_scene(path: Path) -> list[trimesh.Trimesh]:
    scene = trimesh.load(path, force="scene", process=False)
    return list(scene.geometry.values())


def test_obj_files_are_named_and_laid_out_as_odm_names_them(tmp_path: Path) -> None:
    mesh, _ = _scene()
    write_obj(tmp_path, mesh)
    assert {p.name for p in tmp_path.iterdir()} == FILES
    library = (tmp_path / "odm_textured_model_geo.mtl").read_text()
    assert (tmp_path / "odm_textured_model.mtl").read_text() == library
    assert [line.split()[1] for line in library.splitlines() if line.startswith("newmtl")] == \
        ["material0000", "material0001"]
    assert [line.split()[1] for line in library.splitlines() if line.startswith("map_Kd")] == \
        ["odm_textured_model_geo_material0000_map_Kd.png", "odm_textured_model_geo_material0001_map_Kd.png"]
    lines = (tmp_path / "odm_textured_model_geo.obj").read_text().splitlines()
    assert lines[0] == "mtllib odm_textured_model_geo.mtl"
    assert [line for line in lines if line.startswith("usemtl")] == ["usemtl material0000", "usemtl material0001"]
    assert sum(line.startswith("f ") for line in lines) == len(mesh.faces)


def test_obj_reads_back_with_positions_and_texture_colours(tmp_path: Path) -> None:
    mesh, colours = _scene()
    write_obj(tmp_path, mesh, workers=2)
    geometries = _load_scene(tmp_path / "odm_textured_model_geo.obj")
    assert len(geometries) == 2
    assert [_texture(geometry).format for geometry in geometries] == ["PNG", "PNG"]
    _check_faces(geometries, mesh, colours, np.zeros(3), tolerance=2e-6)  # written to 6 decimals


def test_obj_pngs_are_the_atlases_exactly(tmp_path: Path) -> None:
    mesh, _ = _scene()
    write_obj(tmp_path, mesh)
    for i, atlas in enumerate(mesh.atlases):
        with Image.open(tmp_path / f"odm_textured_model_geo_material{i:04d}_map_Kd.png") as image:
            assert np.array_equal(np.asarray(image.convert("RGB")), atlas)


def test_glb_reads_back_in_the_crs_with_texture_colours(tmp_path: Path) -> None:
    mesh, colours = _scene()
    path = tmp_path / "odm_textured_model_geo.glb"
    write_glb(path, mesh, OFFSET)
    center = pygltflib.GLTF2.load_binary(str(path)).extensions["CESIUM_RTC"]["center"]
    assert center == [OFFSET[0], OFFSET[1], 0.0]
    geometries = _load_scene(path)
    assert len(geometries) == 2
    crs = mesh.vertices + [*OFFSET, 0.0]
    shifted = TexturedMesh(crs, mesh.faces, mesh.uvs, mesh.face_uvs, mesh.face_material, mesh.atlases)
    _check_faces(geometries, shifted, colours, np.array(center), tolerance=1e-4)  # float32 positions near 1 km


def test_glb_in_a_local_frame_has_no_rtc(tmp_path: Path) -> None:
    mesh, _ = _scene()
    path = tmp_path / "model.glb"
    write_glb(path, mesh, None)
    gltf = pygltflib.GLTF2.load_binary(str(path))
    assert "CESIUM_RTC" not in gltf.extensionsUsed
    assert "CESIUM_RTC" not in (gltf.extensions or {})
    positions = _accessor(gltf, gltf.meshes[0].primitives[0].attributes.POSITION)
    corners = mesh.vertices[mesh.faces[mesh.face_material == 0]].reshape(-1, 3)
    np.testing.assert_allclose(positions.min(axis=0), corners.min(axis=0), atol=1e-4)  # the world frame as it is
    np.testing.assert_allclose(positions.max(axis=0), corners.max(axis=0), atol=1e-4)


def _accessor(gltf: pygltflib.GLTF2, index: int) -> np.ndarray:
    accessor = gltf.accessors[index]
    view = gltf.bufferViews[accessor.bufferView]
    dtype = {pygltflib.FLOAT: np.float32, pygltflib.UNSIGNED_INT: np.uint32}[accessor.componentType]
    width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3}[accessor.type]
    start = view.byteOffset + (accessor.byteOffset or 0)
    data = np.frombuffer(gltf.binary_blob(), dtype, accessor.count * width, start)
    return data.reshape(accessor.count, width) if width > 1 else data


def test_glb_structure_is_valid_and_as_odm_writes_it(tmp_path: Path) -> None:
    mesh, _ = _scene()
    path = tmp_path / "model.glb"
    write_glb(path, mesh, OFFSET)
    raw = path.read_bytes()
    magic, version, length = struct.unpack("<4sII", raw[:12])
    assert (magic, version, length) == (b"glTF", 2, len(raw))
    gltf = pygltflib.GLTF2.load_binary(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the validator announces itself as provisional
        assert validator.validate(gltf) == []
    blob = gltf.binary_blob()
    assert gltf.buffers[0].byteLength == len(blob)
    for view in gltf.bufferViews:
        assert view.byteOffset % 4 == 0 and view.byteOffset + view.byteLength <= len(blob)
    assert set(gltf.extensionsUsed) == {"KHR_materials_unlit", "CESIUM_RTC"}

    primitives = gltf.meshes[0].primitives
    assert len(primitives) == len(gltf.materials) == len(gltf.textures) == len(gltf.images) == 2
    for material, primitive in enumerate(primitives):
        faces = mesh.face_material == material
        positions = _accessor(gltf, primitive.attributes.POSITION)
        texcoords = _accessor(gltf, primitive.attributes.TEXCOORD_0)
        indices = _accessor(gltf, primitive.indices)
        accessor = gltf.accessors[primitive.attributes.POSITION]
        assert accessor.min == positions.min(axis=0).tolist() and accessor.max == positions.max(axis=0).tolist()
        for index in (primitive.attributes.POSITION, primitive.attributes.TEXCOORD_0, primitive.indices):
            a = gltf.accessors[index]
            size = {"SCALAR": 4, "VEC2": 8, "VEC3": 12}[a.type]
            assert a.count * size <= gltf.bufferViews[a.bufferView].byteLength
        assert gltf.bufferViews[gltf.accessors[primitive.indices].bufferView].target == pygltflib.ELEMENT_ARRAY_BUFFER
        # one vertex per distinct (position, texture coordinate) pair, no more, no fewer
        pairs = {(v, t) for v, t in zip(mesh.faces[faces].ravel(), mesh.face_uvs[faces].ravel())}
        assert len(positions) == len(texcoords) == len(pairs)
        assert len(indices) == 3 * faces.sum() and indices.max() < len(positions)
        # glTF's texture coordinates run down from the image's top: v = 1 - v of the OBJ convention
        corners = np.c_[positions[indices], texcoords[indices]].reshape(-1, 3, 5)
        expected = np.c_[mesh.vertices[mesh.faces[faces]].reshape(-1, 3),
                         mesh.uvs[mesh.face_uvs[faces]].reshape(-1, 2) * [1, -1] + [0, 1]].reshape(-1, 3, 5)
        np.testing.assert_allclose(corners, expected, atol=1e-4)

        gltf_material = gltf.materials[primitive.material]
        assert gltf_material.extensions == {"KHR_materials_unlit": {}}
        assert gltf_material.name == f"material{material:04d}"
        image = gltf.images[gltf.textures[gltf_material.pbrMetallicRoughness.baseColorTexture.index].source]
        assert image.mimeType == "image/jpeg"
        view = gltf.bufferViews[image.bufferView]
        assert view.target is None
        jpeg = Image.open(io.BytesIO(blob[view.byteOffset:view.byteOffset + view.byteLength]))
        assert jpeg.format == "JPEG" and jpeg.size == mesh.atlases[material].shape[1::-1]
        reference = io.BytesIO()
        Image.fromarray(mesh.atlases[material]).save(reference, "JPEG", quality=90)
        assert jpeg.quantization == Image.open(reference).quantization  # the tables of quality 90


def test_writers_refuse_faces_without_an_atlas(tmp_path: Path) -> None:
    mesh, _ = _scene()
    mesh.face_material[0] = 2
    with pytest.raises(ValueError, match="atlases"):
        write_glb(tmp_path / "model.glb", mesh, OFFSET)
    with pytest.raises(ValueError, match="atlases"):
        write_obj(tmp_path, mesh)
    assert list(tmp_path.iterdir()) == []


def test_glb_interrupted_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail_midway(gltf: pygltflib.GLTF2, name: str) -> None:
        Path(name).write_bytes(b"glTF")
        raise OSError("disk full")

    monkeypatch.setattr(pygltflib.GLTF2, "save_binary", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        write_glb(tmp_path / "model.glb", _scene()[0], OFFSET)
    assert list(tmp_path.iterdir()) == []


def test_a_ply_written_in_parts_holds_every_part_in_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    parts = [PointCloud(rng.normal(size=(n, 3)).astype(np.float32), rng.integers(0, 256, (n, 3), np.uint8),
                        rng.integers(2, 9, n).astype(np.uint8)) for n in (1000, 0, 257)]
    path = tmp_path / "dense.ply"
    with ply_writer(path, tmp_path) as append:
        for part in parts:
            append(part)
    whole = PointCloud.concatenate(parts)
    independent = trimesh.load(path)  # another reader of the header and the binary layout
    assert np.array_equal(np.asarray(independent.vertices, np.float32), whole.xyz)
    back = read_ply(path)
    assert np.array_equal(back.rgb, whole.rgb) and np.array_equal(back.views, whole.views)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dense.ply"]  # no scratch file left
