"""The textured models of the six-image Brighton Beach reconstruction of test_products (1000 px images): the 3D
mesh's, which mvs_texturing makes from the photographs, and the 2.5D mesh's, which odm_postprocess drapes with
the orthophoto; the files written, the textures in place against the orthophoto, and the options that change or
skip them; and the 3D Tiles that odm_postprocess makes of this run's model and cloud."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import cv2
import laspy
import numpy as np
import pygltflib
import pytest
import rasterio
from scipy.spatial import cKDTree

from aeromap_engine import pipeline
from aeromap_engine.crs_offset import Georef
from aeromap_engine.io.meshply import read_mesh_ply
from aeromap_engine.mesh.model import TexturedMesh
from aeromap_engine.project import Project
from aeromap_engine.tiles3d.pnts import decode_pnts
from conftest import clone
from test_products import options
from test_texture_math import surface_colours
from test_tiles3d import MM, check_tileset, matrix, tiles, to_crs

MODEL = "odm_textured_model_geo"


@pytest.fixture(scope="module")
def textured(meshed: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A whole run at default options but the report: both meshes textured, GLB on."""
    project = clone(meshed, tmp_path_factory.mktemp("textured") / "p")
    pipeline.run(project, options(skip_report=True))
    return project


@pytest.fixture()
def variant(textured: Project, tmp_path: Path) -> Project:
    return clone(textured, tmp_path / "p")


def texturing_stats(project: Project) -> dict:
    return json.loads(project.stats_file.read_text())["texturing"]


@functools.lru_cache(maxsize=4)
def read_obj(directory: Path) -> TexturedMesh:
    """The textured model as written: positions, texture coordinates, faces per material and the atlases (read
    once per folder: no test changes them)."""
    lines = (directory / f"{MODEL}.obj").read_text().splitlines()

    def numbers(prefix: str, width: int, dtype: type) -> np.ndarray:
        rows = [line[len(prefix):] for line in lines if line.startswith(prefix)]
        return np.array(" ".join(rows).replace("/", " ").split(), dtype).reshape(-1, width)
    faces, materials, material = [], [], -1
    for line in lines:
        if line.startswith("usemtl material"):
            material = int(line[len("usemtl material"):])
        elif line.startswith("f "):
            faces.append(line[2:])
            materials.append(material)
    pairs = np.array(" ".join(faces).replace("/", " ").split(), np.int64).reshape(-1, 3, 2) - 1
    library = (directory / f"{MODEL}.mtl").read_text()
    atlases = [cv2.imread(str(directory / name))[:, :, ::-1] for name in re.findall(r"^map_Kd (.+)$", library, re.M)]
    return TexturedMesh(numbers("v ", 3, float), pairs[:, :, 0], numbers("vt ", 2, np.float32), pairs[:, :, 1],
                        np.array(materials), atlases)


def plan_area(vertices: np.ndarray, faces: np.ndarray) -> float:
    """Area of the faces seen from above, m²."""
    (ab, ac) = (vertices[faces[:, k], :2] - vertices[faces[:, 0], :2] for k in (1, 2))
    return 0.5 * float(np.abs(ab[:, 0] * ac[:, 1] - ac[:, 0] * ab[:, 1]).sum())


def test_the_stage_writes_the_obj_its_atlases_and_the_glb(textured: Project) -> None:
    directory = textured.path("odm_texturing")
    model = read_obj(directory)
    figures = texturing_stats(textured)
    assert figures["mesh"] == "3d"
    mesh_faces = json.loads(textured.stats_file.read_text())["mesh"]["3d"]["faces"]
    assert len(model.faces) == figures["faces_textured"] == mesh_faces - figures["faces_unseen"]
    # Left out: the steep faces of the canopy that face away from every camera or that other trees hide, the
    # undersides of the Poisson surface's edges (measured: 0.95 of the plan area left).
    mesh = read_mesh_ply(textured.mesh(True))
    assert plan_area(model.vertices, model.faces) > 0.93 * plan_area(mesh.vertices, mesh.faces)
    assert len(model.atlases) == len(figures["atlases"]) and (directory / "odm_textured_model.mtl").exists()
    assert all(max(atlas.shape[:2]) <= 8192 for atlas in model.atlases)
    assert model.uvs.min() >= 0 and model.uvs.max() <= 1
    assert figures["views_used"] >= 4 and figures["texel_scale"] == 1.0  # small images: read whole
    assert figures["seam_step_after"] < figures["seam_step_before"] / 2
    glb = pygltflib.GLTF2.load_binary(str(directory / f"{MODEL}.glb"))
    assert glb.extensions["CESIUM_RTC"]["center"][:2] == pytest.approx(list(Georef.load(textured).offset))
    assert len(glb.images) == len(model.atlases)


def orthophoto_agreement(project: Project, folder: str = "odm_texturing") -> tuple[int, float, float]:
    """How the model's colour at the ground points the orthophoto shows (faces turned up, where both have colour)
    agrees with it: the points compared, the correlation of their greys, the median grey difference."""
    model = read_obj(project.path(folder))
    corners = model.vertices[model.faces]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    up = normals[:, 2] > 0.95 * np.linalg.norm(normals, axis=1)
    up[np.arange(len(up)) % max(1, len(up) // 50_000) != 0] = False  # some 50,000 faces spread over the model
    flat = TexturedMesh(model.vertices, model.faces[up], model.uvs, model.face_uvs[up], model.face_material[up],
                        model.atlases)
    points, colours = surface_colours(flat)
    points = points.astype(np.float64)  # float32 eastings are 6 cm apart: a pixel off
    offset = Georef.load(project).offset
    with rasterio.open(project.path("odm_orthophoto", "odm_orthophoto.tif")) as ortho:
        rows, cols = rasterio.transform.rowcol(ortho.transform, points[:, 0] + offset[0], points[:, 1] + offset[1])
        rgba = ortho.read()
    rows, cols = np.asarray(rows), np.asarray(cols)
    inside = (rows >= 0) & (cols >= 0) & (rows < rgba.shape[1]) & (cols < rgba.shape[2])
    ortho_colour = rgba[:, rows[inside], cols[inside]].T.astype(float)
    seen = ortho_colour[:, 3] > 0
    ours, theirs = colours[inside][seen].mean(axis=1), ortho_colour[seen, :3].mean(axis=1)
    return int(seen.sum()), float(np.corrcoef(ours, theirs)[0, 1]), float(np.median(np.abs(ours - theirs)))


def test_the_texture_agrees_with_the_orthophoto(textured: Project) -> None:
    compared, correlation, difference = orthophoto_agreement(textured)
    assert compared > 100_000
    # The 3D mesh's texture comes from the views that see each face most squarely, the orthophoto's from those
    # that see it from nearest above: measured 0.96 and 4.0 grey levels.
    assert correlation > 0.93 and difference < 6


def test_the_25d_model_is_the_25d_mesh_draped_with_the_orthophoto(textured: Project) -> None:
    directory = textured.path("odm_texturing_25d")
    model = read_obj(directory)
    figures = json.loads(textured.stats_file.read_text())["texturing_25d"]
    mesh = read_mesh_ply(textured.mesh(False))
    assert len(model.faces) == figures["faces_textured"] and figures["faces"] == len(mesh)
    # Left out: the faces outside the orthophoto's cut (the surveyed area's cropped edge).
    assert plan_area(model.vertices, model.faces) > 0.95 * plan_area(mesh.vertices, mesh.faces)
    assert [[a.shape[1], a.shape[0]] for a in model.atlases] == figures["atlases"]
    assert model.uvs.min() >= 0 and model.uvs.max() <= 1
    with rasterio.open(textured.orthophoto()) as ortho:
        assert figures["resolution_cm"] == pytest.approx(ortho.res[0] * 100, abs=0.01)
    glb = pygltflib.GLTF2.load_binary(str(directory / f"{MODEL}.glb"))
    assert glb.extensions["CESIUM_RTC"]["center"][:2] == pytest.approx(list(Georef.load(textured).offset))
    compared, correlation, difference = orthophoto_agreement(textured, "odm_texturing_25d")
    assert compared > 100_000 and correlation > 0.99 and difference < 2.5  # measured: 0.995 and 1.4


@pytest.mark.long
def test_the_3d_mesh_textured_in_one_material(variant: Project) -> None:
    """texturing-single-material: the Poisson mesh's texture in one atlas, still in place."""
    pipeline.run(variant, options(texturing_single_material=True, end_with="mvs_texturing"))
    figures = texturing_stats(variant)
    assert figures["mesh"] == "3d" and len(figures["atlases"]) == 1
    model = read_obj(variant.path("odm_texturing"))
    assert len(model.atlases) == 1 and max(model.atlases[0].shape[:2]) <= 8192
    assert len(model.faces) > 0.8 * json.loads(variant.stats_file.read_text())["mesh"]["3d"]["faces"]
    compared, correlation, difference = orthophoto_agreement(variant)
    assert compared > 50_000 and correlation > 0.85 and difference < 12


@pytest.mark.long
def test_without_seam_levelling_or_glb(variant: Project) -> None:
    pipeline.run(variant, options(texturing_skip_global_seam_leveling=True, gltf=False, end_with="mvs_texturing"))
    directory = variant.path("odm_texturing")
    assert "seam_step_after" not in texturing_stats(variant)
    assert not (directory / f"{MODEL}.glb").exists() and (directory / f"{MODEL}.obj").exists()


def test_skip_3dmodel_leaves_no_textured_model(variant: Project) -> None:
    assert variant.path("odm_texturing").is_dir()
    pipeline.run(variant, options(skip_3dmodel=True, end_with="mvs_texturing"))
    assert not variant.path("odm_texturing").exists()
    assert texturing_stats(variant) == {"mesh": None}


def test_3d_tiles_of_the_model_and_the_cloud_sit_where_the_laz_and_glb_do(variant: Project) -> None:
    """3d-tiles re-runs only the last stages; every tile decoded and taken back into the CRS through the root's
    transform: the cloud's tiles hold the LAZ's points (count and extent to the millimetre), the model's the GLB's
    vertices."""
    pipeline.run(variant, options(skip_report=True, **{"3d_tiles": True}))
    crs = Georef.load(variant).crs
    cloud_folder, model_folder = variant.path("3d_tiles", "pointcloud"), variant.path("3d_tiles", "model")
    cloud_tiles, model_tiles = check_tileset(cloud_folder), check_tileset(model_folder)

    with laspy.open(variant.georeferenced_model("laz")) as las:
        laz = las.read()
    laz_xyz = np.column_stack([laz.x, laz.y, laz.z])
    transform = matrix(cloud_tiles["root"]["transform"])
    uris = [tile["content"]["uri"] for tile, _, _ in tiles(cloud_tiles["root"])]
    local = np.concatenate([decode_pnts((cloud_folder / uri).read_bytes()).positions for uri in uris])
    points = to_crs(local @ transform[:3, :3].T + transform[:3, 3], crs)
    assert len(points) == len(laz_xyz) and len(uris) > 1
    assert np.allclose(points.min(axis=0), laz_xyz.min(axis=0), atol=MM)
    assert np.allclose(points.max(axis=0), laz_xyz.max(axis=0), atol=MM)

    source = pygltflib.GLTF2().load_binary(str(variant.texturing_dir(True) / f"{MODEL}.glb"))
    glb_xyz = np.concatenate([_positions(source, p) for p in source.meshes[0].primitives])
    glb_xyz += source.extensions["CESIUM_RTC"]["center"]
    # The leaves hold the model as the texturing made it: every vertex of the GLB, and no other.
    leaves = [tile for tile, _, _ in tiles(model_tiles["root"]) if "children" not in tile]
    transform = matrix(model_tiles["root"]["transform"])
    y_up = np.concatenate([_positions(model, p) for model in
                           (pygltflib.GLTF2().load_binary(str(model_folder / t["content"]["uri"])) for t in leaves)
                           for p in model.meshes[0].primitives])
    vertices = to_crs(np.column_stack([y_up[:, 0], -y_up[:, 2], y_up[:, 1]]) @ transform[:3, :3].T
                      + transform[:3, 3], crs)
    assert cKDTree(glb_xyz).query(vertices)[0].max() < MM and cKDTree(vertices).query(glb_xyz)[0].max() < MM
    assert variant.safe_model.is_file()

    figures = json.loads(variant.stats_file.read_text())["3d_tiles"]
    assert figures["pointcloud"] == {"tiles": len(uris), "points": len(laz_xyz),
                                     "depth": max(depth for _, depth, _ in tiles(cloud_tiles["root"]))}
    assert figures["model"]["vertices"] == len(np.unique(glb_xyz, axis=0))

    pipeline.run(variant, options(skip_report=True))  # off again: no stale tilesets
    assert not variant.path("3d_tiles").exists() and not variant.safe_model.exists()
    assert json.loads(variant.stats_file.read_text())["3d_tiles"] is None


def _positions(gltf: pygltflib.GLTF2, primitive: pygltflib.Primitive) -> np.ndarray:
    accessor = gltf.accessors[primitive.attributes.POSITION]
    view = gltf.bufferViews[accessor.bufferView]
    return np.frombuffer(gltf.binary_blob(), np.float32, 3 * accessor.count,
                         view.byteOffset).reshape(-1, 3).astype(np.float64)
