"""OGC 3D Tiles of the point cloud and the textured model: the frame that places them on the globe against the
closed-form geodetic formulas, and tilesets written from synthetic data read back, every point and vertex taken
from its tile through the root's transform to ECEF and back to the source CRS by PROJ."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
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
from aeromap_engine.io.gltf import write_glb
from aeromap_engine.tiles3d.frame import enu_axes, frame_at
from aeromap_engine.tiles3d.model import write_model_tiles
from aeromap_engine.tiles3d.pnts import decode_pnts, encode_pnts
from aeromap_engine.tiles3d.pointcloud import write_cloud_tiles
from test_copc import survey
from test_model_io import OFFSET, _scene

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


def test_model_tileset_places_every_vertex_and_keeps_the_texture(tmp_path: Path) -> None:
    mesh, _ = _scene()
    glb = tmp_path / "odm_textured_model_geo.glb"
    write_glb(glb, mesh, OFFSET)
    folder = tmp_path / "model"
    folder.mkdir()
    made = write_model_tiles(folder, glb, UTM_15N)
    tileset = check_tileset(folder)
    root = tileset["root"]
    assert "children" not in root and root["content"]["uri"] == "model.glb"
    assert made.vertices > 0 and 29 < made.size[0] < 31 and 29 < made.size[1] < 31
    source, model = pygltflib.GLTF2().load_binary(str(glb)), pygltflib.GLTF2().load_binary(str(folder / "model.glb"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the validator announces itself as provisional
        assert validator.validate(model) == []
    assert not model.extensions and "CESIUM_RTC" not in model.extensionsUsed
    transform = matrix(root["transform"])
    expected = mesh.vertices + [*OFFSET, 0.0]
    blob = model.binary_blob()
    for primitive in model.meshes[0].primitives:
        accessor = model.accessors[primitive.attributes.POSITION]
        view = model.bufferViews[accessor.bufferView]
        y_up = np.frombuffer(blob, np.float32, 3 * accessor.count, view.byteOffset).reshape(-1, 3).astype(float)
        assert np.allclose(y_up.min(axis=0), accessor.min) and np.allclose(y_up.max(axis=0), accessor.max)
        enu = np.column_stack([y_up[:, 0], -y_up[:, 2], y_up[:, 1]])  # 3D Tiles turns glTF's y up to z up
        assert box_contains(root["boundingVolume"]["box"], enu)
        back = to_crs(enu @ transform[:3, :3].T + transform[:3, 3], UTM_15N)
        assert cKDTree(expected).query(back)[0].max() < MM
    # Everything but the positions is the texturing's own: indices, texture coordinates, the JPEG atlases.
    for index, image in enumerate(source.images):
        old, new = source.bufferViews[image.bufferView], model.bufferViews[model.images[index].bufferView]
        assert source.binary_blob()[old.byteOffset:old.byteOffset + old.byteLength] == \
            blob[new.byteOffset:new.byteOffset + new.byteLength]


def test_model_without_a_place_is_refused(tmp_path: Path) -> None:
    mesh, _ = _scene()
    glb = tmp_path / "local.glb"
    write_glb(glb, mesh, None)
    with pytest.raises(ValueError, match="CESIUM_RTC"):
        write_model_tiles(tmp_path, glb, UTM_15N)
