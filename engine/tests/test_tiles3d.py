"""OGC 3D Tiles of the point cloud and the textured model: the frame that places them on the globe against the
closed-form geodetic formulas, and tilesets written from synthetic data read back, every point and vertex taken
from its tile through the root's transform to ECEF and back to the source CRS by PROJ."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np
import pygltflib
import pytest
from pygltflib import validator
from pyproj import Transformer
from scipy.spatial import cKDTree

from aeromap_engine.cloud import tiled_octree
from aeromap_engine.cloud.octree import bounding_cube
from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.cloud.tiled import Tiling, tile_sorted
from aeromap_engine.io.gltf import read_glb, write_glb
from aeromap_engine.mesh.model import TexturedMesh
from aeromap_engine.tiles3d import model as model_tiles
from aeromap_engine.tiles3d.meshtiles import repacked
from aeromap_engine.tiles3d.frame import enu_axes, frame_at
from aeromap_engine.tiles3d.model import write_model_tiles
from aeromap_engine.tiles3d.pnts import decode_pnts, encode_pnts
from aeromap_engine.tiles3d.pointcloud import write_cloud_tiles
from test_copc import survey
from test_model_io import COLOUR_TOLERANCE, OFFSET, _scene

A = 6378137.0  # WGS 84
E2 = 6.69437999014e-3
UTM_15N = "EPSG:32615"
MM = 0.001


def geodetic_to_ecef(lon: float, lat: float, h: float) -> np.ndarray:
    lon, lat = np.radians(lon), np.radians(lat)
    n = A / np.sqrt(1 - E2 * np.sin(lat) ** 2)
    return np.array([(n + h) * np.cos(lat) * np.cos(lon), (n + h) * np.cos(lat) * np.sin(lon),
                     (n * (1 - E2) + h) * np.sin(lat)])


def matrix(transform: list[float]) -> np.ndarray:
    return np.array(transform, dtype=np.float64).reshape(4, 4).T  # stored column-major


def to_crs(ecef: np.ndarray, crs: str) -> np.ndarray:
    x, y, z = Transformer.from_crs("EPSG:4978", crs, always_xy=True).transform(*ecef.T)
    return np.column_stack([x, y, z])


def box_contains(box: list[float], xyz: np.ndarray, margin: float = 1e-6) -> bool:
    """Whether an axis-aligned box of 3D Tiles' form holds the points."""
    center, half = np.array(box[:3]), np.array([box[3], box[7], box[11]])
    assert np.allclose([box[4], box[5], box[6], box[8], box[9], box[10]], 0)  # axis-aligned, as written
    return bool((np.abs(xyz - center) <= half + margin).all())


def tiles(tile: dict[str, Any], depth: int = 0, ancestors: tuple = ()):
    """Every tile of a tree with its depth and the tiles above it."""
    yield tile, depth, ancestors
    for child in tile.get("children", []):
        yield from tiles(child, depth + 1, (*ancestors, tile))


def check_tileset(folder: Path) -> dict[str, Any]:
    """The structure 3D Tiles requires of tileset.json, and that every content it names exists: answers it."""
    tileset = json.loads((folder / "tileset.json").read_text())
    assert tileset["asset"]["version"] in ("1.0", "1.1")
    assert tileset["geometricError"] >= 0
    root = tileset["root"]
    transform = matrix(root["transform"])
    assert np.allclose(transform[3], [0, 0, 0, 1])
    assert np.allclose(transform[:3, :3] @ transform[:3, :3].T, np.eye(3))  # a rotation: no scale, no shear
    assert 6.3e6 < np.linalg.norm(transform[:3, 3]) < 6.4e6  # the origin lies on the Earth's surface
    for tile, _, ancestors in tiles(root):
        assert len(tile["boundingVolume"]["box"]) == 12
        assert tile["geometricError"] >= 0 and tile["refine"] in ("ADD", "REPLACE")
        assert all(tile["geometricError"] < parent["geometricError"] for parent in ancestors)
        assert (folder / tile["content"]["uri"]).is_file()
        assert "transform" not in tile or tile is root
    assert tileset["geometricError"] >= root["geometricError"]
    return tileset


def test_frame_puts_a_known_point_where_the_geodetic_formula_does() -> None:
    # UTM 15N's central meridian on the equator: easting 500000, northing 0, 120 m above the ellipsoid.
    frame = frame_at(UTM_15N, np.array([500000.0, 0.0, 120.0]))
    assert np.allclose(frame.origin, geodetic_to_ecef(-93.0, 0.0, 120.0), atol=MM)
    # Away from it: a point of Minnesota, whose geodetic position PROJ gives.
    lon, lat = Transformer.from_crs(UTM_15N, "EPSG:4326", always_xy=True).transform(476123.4, 4987654.3)
    frame = frame_at(UTM_15N, np.array([476123.4, 4987654.3, 250.0]))
    assert np.allclose(frame.origin, geodetic_to_ecef(lon, lat, 250.0), atol=MM)
    axes = enu_axes(lon, lat)
    assert np.allclose(axes @ axes.T, np.eye(3)) and np.allclose(np.cross(axes[0], axes[1]), axes[2])
    # Up is the ellipsoid's normal: 10 m up in the frame is 10 m higher at the same longitude and latitude.
    transform = matrix(frame.transform)
    assert np.allclose((transform @ [0, 0, 10, 1])[:3], geodetic_to_ecef(lon, lat, 260.0), atol=MM)
    # North goes north: a point 100 m north in UTM has a positive north component, a small east one (the grid's
    # convergence, under 2 degrees here), and drops below the tangent plane by the Earth's curvature only.
    north = frame.from_crs(np.array([[476123.4, 4987754.3, 250.0]]))[0]
    assert 99.9 < north[1] < 100.1 and abs(north[0]) < 100 * np.tan(np.radians(2)) and -0.01 < north[2] < 0


def test_pnts_keeps_positions_colours_and_alignment() -> None:
    rng = np.random.default_rng(4)
    for count in (1, 5, 1000):
        offsets = rng.normal(0, 50, (count, 3))
        rgb = rng.integers(0, 256, (count, 3)).astype(np.uint8)
        center = np.array([12.5, -3.25, 40.0])
        data = encode_pnts(offsets, rgb, center)
        json_length, binary_length = np.frombuffer(data[12:20], np.uint32)
        assert (28 + json_length) % 8 == 0 and binary_length % 8 == 0 and len(data) % 8 == 0
        content = decode_pnts(data)
        assert np.allclose(content.positions, offsets + center, atol=1e-5 * 50) and (content.rgb == rgb).all()
    with pytest.raises(ValueError):
        encode_pnts(np.zeros((3, 3)), np.zeros((2, 3), np.uint8), np.zeros(3))
    with pytest.raises(ValueError):
        decode_pnts(b"b3dm" + data[4:])


@pytest.mark.parametrize("part_points", [1_000_000, 40_000])
def test_point_cloud_tileset_holds_every_point_in_place(tmp_path: Path, part_points: int,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Built at once, and column by column (a cloud larger than PART_POINTS): every point once, within 1 mm of
    where it was in the CRS, inside its tile's box and every box above it, with its colour."""
    monkeypatch.setattr(tiled_octree, "PART_POINTS", part_points)
    monkeypatch.setattr(tiled_octree, "MAX_POINTS", 10_000)  # a few levels of detail from a small cloud
    xyz = survey(200_000, seed=5)
    rgb = np.random.default_rng(6).integers(0, 256, (len(xyz), 3)).astype(np.uint8)
    offset = (576_000.0, 5_188_000.0)
    local = PointCloud((xyz - [*offset, 0.0]).astype(np.float32), rgb, np.full(len(xyz), 3, np.uint8))
    cloud = tile_sorted([local], Tiling.fitting([local]), tmp_path / "tiled.ply", tmp_path)
    stored = PointCloud.concatenate(list(cloud.parts(offset)))  # float32 in the world frame, as stored
    cube = bounding_cube(np.array(cloud.box, dtype=np.float64))
    folder = tmp_path / "pointcloud"
    folder.mkdir()
    made = write_cloud_tiles(folder, tiled_octree.octree_nodes(cloud, cube, tmp_path), cube, UTM_15N, offset)
    tileset = check_tileset(folder)
    assert made.points == len(xyz) and made.depth >= 2
    transform = matrix(tileset["root"]["transform"])
    positions, colours = [], []
    for tile, depth, ancestors in tiles(tileset["root"]):
        assert tile["refine"] == "ADD"
        content = decode_pnts((folder / tile["content"]["uri"]).read_bytes())
        for box in [tile["boundingVolume"]["box"]] + [a["boundingVolume"]["box"] for a in ancestors]:
            assert box_contains(box, content.positions)
        if depth == 0:  # the root's sample is even: the whole survey at a coarse spacing
            assert np.ptp(content.positions[:, 0]) > 190 and np.ptp(content.positions[:, 1]) > 110
        positions.append(content.positions)
        colours.append(content.rgb)
    ecef = (np.concatenate(positions) @ transform[:3, :3].T) + transform[:3, 3]
    back = to_crs(ecef, UTM_15N)
    assert len(back) == len(xyz)
    distance, nearest = cKDTree(stored.xyz).query(back)
    assert distance.max() < MM
    assert len(np.unique(nearest)) == len(xyz)  # each point exactly once
    assert (np.concatenate(colours) == stored.rgb[nearest]).all()


def _tile_meshes(folder: Path, tileset: dict[str, Any], crs: str) -> list[tuple[int, TexturedMesh, dict]]:
    """Every tile's content read back with its depth and node, vertices taken through the root's transform to
    the CRS (glTF's y up turned back to z up, as 3D Tiles does)."""
    transform = matrix(tileset["root"]["transform"])
    read = []
    for tile, depth, _ in tiles(tileset["root"]):
        model = pygltflib.GLTF2().load_binary(str(folder / tile["content"]["uri"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the validator announces itself as provisional
            assert validator.validate(model) == []
        assert not model.extensions and len(model.images) == 1  # one texture a tile; no CESIUM_RTC
        mesh, center = read_glb(folder / tile["content"]["uri"])
        assert center is None
        enu = np.column_stack([mesh.vertices[:, 0], -mesh.vertices[:, 2], mesh.vertices[:, 1]])
        assert box_contains(tile["boundingVolume"]["box"], enu, margin=1e-3)
        mesh.vertices = to_crs(enu @ transform[:3, :3].T + transform[:3, 3], crs)
        # The affine map a viewer in the CRS places the tiles by agrees with PROJ's (a small model: to a mm).
        affine = matrix(tileset["extras"]["frameToCrs"])
        assert tileset["extras"]["crs"] == crs
        assert np.abs(enu @ affine[:3, :3].T + affine[:3, 3] - mesh.vertices).max() < MM
        read.append((depth, mesh, tile))
    return read


def _face_colours(mesh: TexturedMesh) -> np.ndarray:
    """The colour of each face's texture at its corners' mean texture coordinate."""
    atlas = mesh.atlases[0]
    h, w = atlas.shape[:2]
    uv = mesh.uvs[mesh.face_uvs].mean(axis=1)
    return atlas[((1 - uv[:, 1]) * h).astype(int).clip(0, h - 1), (uv[:, 0] * w).astype(int).clip(0, w - 1)]


def test_glb_reads_back_as_written(tmp_path: Path) -> None:
    mesh, colours = _scene()
    write_glb(tmp_path / "model.glb", mesh, OFFSET)
    read, center = read_glb(tmp_path / "model.glb")
    assert np.allclose(center, [*OFFSET, 0.0])
    corners = read.vertices[read.faces]
    order = np.lexsort(corners.mean(axis=1).T)  # faces are regrouped by material: compare them by place
    expected = mesh.vertices[mesh.faces]
    assert np.abs(corners[order] - expected[np.lexsort(expected.mean(axis=1).T)]).max() < MM
    found = np.array([_face_colours(TexturedMesh(read.vertices, read.faces[[f]], read.uvs, read.face_uvs[[f]],
                                                 read.face_material[[f]], [read.atlases[read.face_material[f]]]))[0]
                      for f in order])
    assert np.abs(found.astype(int) - colours[np.lexsort(expected.mean(axis=1).T)]).max() <= COLOUR_TOLERANCE


def test_small_model_is_one_tile_with_every_face_placed_and_coloured(tmp_path: Path) -> None:
    mesh, colours = _scene()
    glb = tmp_path / "odm_textured_model_geo.glb"
    write_glb(glb, mesh, OFFSET)
    folder = tmp_path / "model"
    folder.mkdir()
    made = write_model_tiles(folder, glb, UTM_15N, tmp_path / "safe.glb")
    tileset = check_tileset(folder)
    assert "children" not in tileset["root"] and tileset["root"]["geometricError"] == 0
    assert made.tiles == 1 and made.levels == 1 and 29 < made.size[0] < 31 and 29 < made.size[1] < 31
    [(_, tile, _)] = _tile_meshes(folder, tileset, UTM_15N)
    expected = mesh.vertices + [*OFFSET, 0.0]
    assert cKDTree(expected).query(tile.vertices)[0].max() < MM
    # Each face keeps its colour through the repacked texture: found by where it lies.
    centres = expected[mesh.faces].mean(axis=1)
    owner = cKDTree(centres).query(tile.vertices[tile.faces].mean(axis=1))[1]
    assert len(tile.faces) == len(mesh.faces) and len(np.unique(owner)) == len(mesh.faces)
    assert np.abs(_face_colours(tile).astype(int) - colours[owner]).max() <= COLOUR_TOLERANCE
    safe, center = read_glb(tmp_path / "safe.glb")
    assert np.allclose(center, [*OFFSET, 0.0]) and len(safe.faces) == len(mesh.faces)


def _wavy_model(n: int) -> tuple[TexturedMesh, Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """A terrain of n x n cells, 0.5 m each, whose texture is a colour ramp over the ground plan; with the height
    and the colour of any place (world frame)."""
    def height(xy: np.ndarray) -> np.ndarray:
        return 100 + 3 * np.sin(xy[:, 0] / 6) + 2 * np.cos(xy[:, 1] / 4)

    def colour(xy: np.ndarray) -> np.ndarray:
        t = xy / (0.5 * n)
        return np.column_stack([40 + 180 * t[:, 0], 40 + 180 * t[:, 1], np.full(len(t), 128.0)])

    gx, gy = np.meshgrid(np.arange(n + 1) * 0.5, np.arange(n + 1) * 0.5)
    xy = np.c_[gx.ravel(), gy.ravel()]
    grid = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = grid[:-1, :-1].ravel(), grid[:-1, 1:].ravel(), grid[1:, :-1].ravel(), grid[1:, 1:].ravel()
    faces = np.r_[np.c_[a, b, d], np.c_[a, d, c]].astype(np.int32)
    side = 1024
    px = (np.arange(side) + 0.5) / side * 0.5 * n
    tx, ty = np.meshgrid(px, px[::-1])  # row 0 is the texture's top: v = 1, the north
    atlas = colour(np.c_[tx.ravel(), ty.ravel()]).reshape(side, side, 3).astype(np.uint8)
    uvs = (xy / (0.5 * n)).astype(np.float32)
    mesh = TexturedMesh(np.c_[xy, height(xy)], faces, uvs, faces.copy(), np.zeros(len(faces), np.int32), [atlas])
    return mesh, height, colour


def test_large_model_streams_in_levels_that_meet_without_cracks(tmp_path: Path, monkeypatch) -> None:
    mesh, height, colour = _wavy_model(120)  # 28,800 faces
    monkeypatch.setattr(model_tiles, "LEAF_FACES", 2000)  # 16 leaves, as a model of a million faces would have
    monkeypatch.setattr(model_tiles, "SAFE_FACES", 4000)
    glb = tmp_path / "odm_textured_model_geo.glb"
    write_glb(glb, mesh, OFFSET)
    folder = tmp_path / "model"
    folder.mkdir()
    made = write_model_tiles(folder, glb, UTM_15N, tmp_path / "safe.glb")
    tileset = check_tileset(folder)  # errors shrink from the root down: a viewer refines towards the leaves
    assert made.levels == 3 and made.tiles == 21
    read = _tile_meshes(folder, tileset, UTM_15N)
    faces = [sum(len(m.faces) for d, m, _ in read if d == depth) for depth in range(3)]
    print(f"\nfaces per level {faces}; errors {[t['geometricError'] for d, _, t in read if d < 2][:2]}")
    assert faces[2] == len(mesh.faces) and faces[0] < faces[1] / 2 < faces[2] / 4
    for depth in range(3):
        level = [m for d, m, _ in read if d == depth]
        world = np.concatenate([m.vertices for m in level]) - [*OFFSET, 0.0]
        # On the true surface: exact at the leaves; where coarsened, within the error the tile declares.
        for _, tile, node in (t for t in read if t[0] == depth):
            local = tile.vertices - [*OFFSET, 0.0]
            worst = np.abs(local[:, 2] - height(local[:, :2])).max()
            assert worst < (0.002 if depth == 2 else node["geometricError"]), f"level {depth}: {worst:.3f} m"
        # The texture follows the faces at every level: the ramp's colour where each face lies.
        centres = np.concatenate([m.vertices[m.faces].mean(axis=1) for m in level]) - [*OFFSET, 0.0]
        found = np.concatenate([_face_colours(m) for m in level]).astype(float)
        assert np.median(np.abs(found - colour(centres[:, :2]))) < 3
        # No cracks: the tiles of a level, joined, leave open edges only on the model's outline.
        joined = np.unique(np.round(world, 3), axis=0, return_inverse=True)[1].ravel()
        offsets = np.cumsum([0] + [len(m.vertices) for m in level])
        all_faces = np.concatenate([joined[m.faces + o] for m, o in zip(level, offsets)])
        edges = np.sort(all_faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
        unique, uses = np.unique(edges, axis=0, return_counts=True)
        points = np.unique(np.round(world, 3), axis=0)
        open_ends = points[unique[uses == 1].ravel()][:, :2]
        outline = (np.abs(open_ends) < 1e-3) | (np.abs(open_ends - 60) < 1e-3)
        assert outline.any(axis=1).all(), f"level {depth} has open edges inside the model"
    safe, center = read_glb(tmp_path / "safe.glb")
    assert np.allclose(center, [*OFFSET, 0.0]) and faces[0] <= len(safe.faces) <= 4000


def test_a_tile_whose_charts_cannot_fit_one_texture_is_refused_not_looped_on() -> None:
    rng = np.random.default_rng(5)
    count = 3000  # single-triangle charts, each with its gutter: more than a 64 texel texture holds
    faces = np.arange(3 * count, dtype=np.int32).reshape(-1, 3)
    uvs = (rng.random((3 * count, 2)) * 0.01 + np.repeat(rng.random((count, 2)) * 0.98, 3, axis=0)).astype(np.float32)
    mesh = TexturedMesh(rng.random((3 * count, 3)), faces, uvs, faces.copy(), np.zeros(count, np.int32),
                        [np.zeros((512, 512, 3), np.uint8)])
    with pytest.raises(ValueError, match="3000 texture charts do not fit"):
        repacked(mesh, 1.0, 64)


def test_model_without_a_place_is_refused(tmp_path: Path) -> None:
    mesh, _ = _scene()
    glb = tmp_path / "local.glb"
    write_glb(glb, mesh, None)
    with pytest.raises(ValueError, match="CESIUM_RTC"):
        write_model_tiles(tmp_path, glb, UTM_15N)
