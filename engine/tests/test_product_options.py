"""The product options that add files or leave them out: orthophoto-kmz, orthophoto-cutline, tiles, skip-orthophoto,
skip-report, boundary, optimize-disk-space (merge-skip-blending: test_split_merge). The files' formats on small
made-up inputs, then the options on the reconstruction of six Brighton Beach images (conftest's `sparse`), run
quickly (lowest dense quality, 20 cm rasters)."""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pyogrio.raw
import pytest
import rasterio
from PIL import Image
from pyproj import CRS, Transformer
from rasterio.transform import from_origin
from rasterio.warp import transform_bounds

from aeromap_engine import pipeline
from aeromap_engine.cloud.area import SurveyArea
from aeromap_engine.crs_offset import Georef
from aeromap_engine.errors import InputError, OptionsError
from aeromap_engine.io.geojson import parse_boundary, read_geometry
from aeromap_engine.io.gpkg import write_polygons
from aeromap_engine.io.kmz import write_kmz
from aeromap_engine.io.tiledir import TileFolderWriter
from aeromap_engine.options import resolve
from aeromap_engine.project import Project
from aeromap_engine.sfm.export import control_points_geojson
from aeromap_engine.tiles.pyramid import coarser_tiles
from conftest import clone

UTM = "EPSG:32630"


# --- formats ---------------------------------------------------------------------------------------------------

def read_multipolygon(wkb: bytes) -> list[list[np.ndarray]]:
    """The polygons of a little-endian ISO WKB MultiPolygon."""
    order, kind, count = struct.unpack_from("<BII", wkb)
    assert (order, kind) == (1, 6)
    offset = 9
    polygons = []
    for _ in range(count):
        _, kind, rings = struct.unpack_from("<BII", wkb, offset)
        assert kind == 3
        offset += 9
        parsed = []
        for _ in range(rings):
            (points,) = struct.unpack_from("<I", wkb, offset)
            parsed.append(np.frombuffer(wkb, "<f8", 2 * points, offset + 4).reshape(points, 2))
            offset += 4 + 16 * points
        polygons.append(parsed)
    assert offset == len(wkb)
    return polygons


def test_geopackage_holds_the_polygons_in_their_crs(tmp_path: Path) -> None:
    outer = [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]
    hole = [[2, 2], [2, 4], [4, 4], [4, 2], [2, 2]]
    other = [[20, 0], [30, 0], [30, 5], [20, 0]]
    shift = np.array([500000.0, 4000000.0])
    geometry = {"type": "MultiPolygon", "coordinates": [[list(np.add(outer, shift)), list(np.add(hole, shift))],
                                                        [list(np.add(other, shift))]]}
    path = tmp_path / "cutline.gpkg"
    write_polygons(path, "cutline", geometry, UTM)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cutline.gpkg"]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == 0x47504B47  # "GPKG"
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    contents = db.execute("SELECT table_name, data_type, srs_id, min_x, min_y, max_x, max_y FROM gpkg_contents")
    assert contents.fetchall() == [("cutline", "features", 32630, 500000.0, 4000000.0, 500030.0, 4000010.0)]
    meta, _, wkb, _ = pyogrio.raw.read(path, layer="cutline")
    assert meta["crs"] == "EPSG:32630" and meta["geometry_type"] == "MultiPolygon" and len(wkb) == 1
    polygons = read_multipolygon(bytes(wkb[0]))
    assert [len(rings) for rings in polygons] == [2, 1]
    assert np.array_equal(polygons[0][1], np.add(hole, shift)) and np.array_equal(polygons[1][0], np.add(other, shift))


def utm_orthophoto(path: Path) -> Path:
    """A 300 x 200 px RGBA orthophoto at 10 cm in UTM, opaque over a rectangle inside it."""
    rgba = np.zeros((4, 200, 300), np.uint8)
    rgba[0], rgba[1] = 180, np.arange(300, dtype=np.uint8)[None, :]
    rgba[3, 20:180, 30:270] = 255
    with rasterio.open(path, "w", driver="GTiff", width=300, height=200, count=4, dtype="uint8", crs=UTM,
                       transform=from_origin(699000, 5630000, 0.1, 0.1), photometric="RGB", alpha="YES") as out:
        out.write(rgba)
    return path


def test_kmz_opens_in_gdal_in_wgs84(tmp_path: Path) -> None:
    source = utm_orthophoto(tmp_path / "odm_orthophoto.tif")
    target = tmp_path / "odm_orthophoto.kmz"
    write_kmz(source, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odm_orthophoto.kmz", "odm_orthophoto.tif"]
    with rasterio.open(source) as src:
        expected = transform_bounds(src.crs, "EPSG:4326", *src.bounds)
    with rasterio.open(target) as kmz:
        assert kmz.driver == "KMLSUPEROVERLAY" and kmz.crs.to_epsg() == 4326 and kmz.count == 4
        assert np.allclose(tuple(kmz.bounds), expected, atol=2e-6)
        rgba = kmz.read()
    opaque = rgba[3] > 0
    assert 0.55 < opaque.mean() < 0.75  # the rectangle's share, 0.64, give or take the warp's edges
    assert abs(int(np.median(rgba[0][opaque])) - 180) <= 1


def test_tile_folder_is_in_the_tms_layout(tmp_path: Path) -> None:
    folder = tmp_path / "orthophoto_tiles"
    (folder / "old").mkdir(parents=True)  # a stale set is replaced whole
    with TileFolderWriter(folder, "odm_orthophoto.tif", (0.0, 0.0, 100.0, 100.0)) as out:
        out.add(17, 65536, 131071, b"south")  # XYZ rows: the southernmost at zoom 17...
        out.add(16, 32768, 0, b"north")  # ...and the northernmost at zoom 16
    assert (folder / "17" / "65536" / "0.png").read_bytes() == b"south"  # TMS rows count from the south
    assert (folder / "16" / "32768" / "65535.png").read_bytes() == b"north"
    assert not (folder / "old").exists()
    resource = ElementTree.parse(folder / "tilemapresource.xml").getroot()
    assert resource.find("SRS").text == "EPSG:3857"
    assert [s.get("order") for s in resource.find("TileSets")] == ["16", "17"]
    assert resource.find("TileFormat").get("extension") == "png"


def test_coarser_tiles_put_the_tile_in_its_quarter() -> None:
    tile = np.zeros((256, 256, 4), np.uint8)
    tile[..., 0], tile[..., 3] = 200, 255
    levels = list(coarser_tiles(7, 5, 2, tile, 5))
    assert [(z, x, y) for z, x, y, _ in levels] == [(6, 2, 1), (5, 1, 0)]
    _, _, _, six = levels[0]
    assert six[:128, 128:, 3].min() == 255 and six[..., 3].sum() == 255 * 128 * 128  # x odd, y even: top right
    assert six[:128, 128:, 0].min() == 200


def test_control_points_geojson_places_each_point_in_wgs84() -> None:
    georef = Georef(UTM, (699000.0, 5630000.0), "gcp")
    residuals = {"points": [{"name": "a", "surveyed_m": [10.0, 20.0, 30.0], "delta_m": [0.1, -0.2, 0.3],
                             "marked_in": ["x.jpg", "y.jpg"], "used": True}]}
    checks = {"points": [{"name": "k", "surveyed_m": [0.0, 0.0, 5.0], "delta_m": [0.0, 0.1, 0.0],
                          "marked_in": ["x.jpg", "z.jpg", "w.jpg"]}]}
    feature, checkpoint = control_points_geojson(residuals, georef, checks)["features"]
    lon, lat = Transformer.from_crs(UTM, "EPSG:4326", always_xy=True).transform(699010.1, 5630019.8)
    assert feature["geometry"]["coordinates"] == pytest.approx([lon, lat, 30.3])
    assert feature["properties"] == {"id": "a", "observations_count": 2, "observations_list": "x.jpg,y.jpg",
                                     "error_x": 0.1, "error_y": -0.2, "error_z": 0.3, "used": True,
                                     "checkpoint": False}
    # A checkpoint: placed where the model has it, never used to place the model.
    assert checkpoint["properties"]["checkpoint"] and not checkpoint["properties"]["used"]
    assert checkpoint["properties"]["observations_count"] == 3 and checkpoint["properties"]["error_y"] == 0.1


SQUARE = {"type": "Polygon", "coordinates": [[[-3.0, 50.0], [-2.9, 50.0], [-2.9, 50.1], [-3.0, 50.1], [-3.0, 50.0]]]}


@pytest.mark.parametrize("text", [
    json.dumps(SQUARE),
    json.dumps({"type": "Feature", "properties": {}, "geometry": SQUARE}),
    json.dumps({"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": SQUARE}]}),
])
def test_boundary_in_any_geojson_wrapping(text: str) -> None:
    boundary = parse_boundary(text)
    assert boundary.crs == "EPSG:4326" and len(boundary.polygons) == 1
    area = boundary.area(UTM, (500000.0, 5500000.0))
    assert 7.0e7 < area.area < 8.0e7  # 0.1 x 0.1 degree at 50 N: about 7.2 km x 11.1 km


def test_boundary_with_a_crs_member() -> None:
    ring = [[699000, 5630000], [699100, 5630000], [699100, 5630100], [699000, 5630100], [699000, 5630000]]
    text = json.dumps({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": UTM}},
                       "features": [{"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring]}}]})
    area = parse_boundary(text).area(UTM, (699000.0, 5630000.0))
    assert area.bounds == pytest.approx((0.0, 0.0, 100.0, 100.0)) and area.area == pytest.approx(10_000.0)


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"type": "Point", "coordinates": [0, 0]}), "is a 'Point', not a Polygon"),
    (json.dumps({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]}), "fewer than 4 positions"),
    (json.dumps({"type": "Polygon", "coordinates": [[[0, 0], [1, "a"], [1, 1], [0, 0]]]}), "not a pair of numbers"),
    (json.dumps({"type": "FeatureCollection", "features": []}), "holds no polygon"),
    (json.dumps({**SQUARE, "crs": {"type": "name", "properties": {"name": "EPSG:999999"}}}), "is not a coordinate"),
])
def test_a_bad_boundary_is_an_options_error_saying_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(OptionsError, match=f"Option boundary: .*{message}"):
        resolve(pipeline.all_options(), [{"name": "boundary", "value": text}])


def test_boundary_is_listed_as_nodeodm_lists_it() -> None:
    (boundary,) = [o.to_nodeodm() for o in pipeline.all_options() if o.name == "boundary"]
    assert (boundary["type"], boundary["value"], boundary["domain"]) == ("string", "", "json")


# --- on a real survey ------------------------------------------------------------------------------------------

BASE = [{"name": "feature-quality", "value": "ultra"}]  # the fixture's, so that structure from motion is not re-run
QUICK = {"skip-3dmodel": True, "orthophoto-resolution": 20, "dem-resolution": 20}


def options(**values: object) -> list[dict]:
    merged = {**QUICK, **{name.replace("_", "-"): value for name, value in values.items()}}
    return BASE + [{"name": name, "value": value} for name, value in merged.items()]


@pytest.fixture(scope="module")
def extras(products: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The shared products' run again, coarser, with the optional products on, the report off and intermediate
    files deleted (only the elevation models and the stages after them run again)."""
    project = clone(products, tmp_path_factory.mktemp("extras") / "p")
    pipeline.run(project, options(dsm=True, dtm=True, orthophoto_kmz=True, orthophoto_cutline=True, tiles=True,
                                  skip_report=True, optimize_disk_space=True))
    return project


@pytest.mark.long
def test_kmz_and_cutline_of_the_orthophoto(extras: Project) -> None:
    with rasterio.open(extras.orthophoto()) as ortho:
        expected = transform_bounds(ortho.crs, "EPSG:4326", *ortho.bounds)
        crs = ortho.crs
    with rasterio.open(extras.orthophoto("kmz")) as kmz:
        assert kmz.crs.to_epsg() == 4326 and np.allclose(tuple(kmz.bounds), expected, atol=1e-5)
        assert kmz.read(4).any()
    meta, _, wkb, _ = pyogrio.raw.read(extras.orthophoto_cutline, layer="cutline")
    assert CRS.from_user_input(meta["crs"]).to_epsg() == crs.to_epsg()
    polygons = read_multipolygon(bytes(wkb[0]))
    # The polygon the orthophoto is cut to: the surveyed area, cropped; the orthophoto is transparent outside it.
    area = read_geometry(extras.bounds_file)
    parts = [area["coordinates"]] if area["type"] == "Polygon" else area["coordinates"]
    assert [len(rings) for rings in polygons] == [len(rings) for rings in parts]
    assert np.allclose(polygons[0][0], parts[0][0])


@pytest.mark.long
def test_tiles_folders_hold_the_pyramids_tiles_down_to_zoom_5(extras: Project) -> None:
    for layer, mbtiles in (("orthophoto", extras.orthophoto("mbtiles")), ("dsm", extras.dem("dsm").with_suffix(
            ".mbtiles")), ("dtm", extras.dem("dtm").with_suffix(".mbtiles"))):
        folder = extras.tiles_dir(layer)
        db = sqlite3.connect(mbtiles)
        rows = db.execute("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles").fetchall()
        min_zoom = min(z for z, *_ in rows)
        on_disk = {tuple(int(p) for p in f.relative_to(folder).with_suffix("").parts): f
                   for f in folder.glob("*/*/*.png")}
        # MBTiles rows are TMS rows too: the same tiles at the same places, the same PNGs.
        assert {key for key in on_disk if key[0] >= min_zoom} == {(z, x, y) for z, x, y, _ in rows}
        assert all(on_disk[(z, x, y)].read_bytes() == data for z, x, y, data in rows)
        assert sorted(key[0] for key in on_disk if key[0] < min_zoom) == list(range(5, min_zoom))
        # Above the top tile, its area halves with each level (at zoom 5 it is far less than a pixel: transparent,
        # as gdal2tiles writes it too).
        (above,) = [f for key, f in on_disk.items() if key[0] == min_zoom - 1]
        with Image.open(above) as tile:
            assert tile.size == (256, 256) and tile.mode == "RGBA" and tile.getextrema()[3][1] > 0


@pytest.mark.long
def test_skip_report_keeps_the_statistics(extras: Project) -> None:
    assert not extras.report_file.exists()
    stats = json.loads(extras.stats_file.read_text())
    assert {"processing_statistics", "reconstruction_statistics", "point_cloud_statistics"} <= set(stats)


@pytest.mark.long
def test_optimize_disk_space_deletes_the_dense_cloud_only(extras: Project, tmp_path: Path) -> None:
    assert not extras.dense_cloud.exists()
    for product in (extras.orthophoto(), extras.dem("dsm"), extras.dem("dtm"), extras.georeferenced_model("laz"),
                    extras.filtered_cloud):
        assert product.exists()
    project = clone(extras, tmp_path / "p")
    with pytest.raises(InputError, match="openmvs/scene_dense.ply is missing: re-run from openmvs"):
        pipeline.run(project, options(dsm=True, dtm=True, orthophoto_kmz=True, orthophoto_cutline=True, tiles=True,
                                      skip_report=True, optimize_disk_space=True, rerun_from="odm_filterpoints"))


@pytest.mark.long
def test_without_the_options_none_of_their_files(extras: Project, tmp_path: Path) -> None:
    """A re-run without them leaves none of the files the first run made, and the report is back."""
    project = clone(extras, tmp_path / "p")
    pipeline.run(project, options(dsm=True, dtm=True, rerun_from="odm_orthophoto"))
    assert project.report_file.exists()
    for gone in (project.orthophoto("kmz"), project.orthophoto_cutline, project.tiles_dir("orthophoto"),
                 project.tiles_dir("dsm"), project.tiles_dir("dtm")):
        assert not gone.exists()


@pytest.mark.long
def test_skip_orthophoto(extras: Project, tmp_path: Path) -> None:
    project = clone(extras, tmp_path / "p")
    pipeline.run(project, options(dsm=True, dtm=True, skip_orthophoto=True, tiles=True, orthophoto_kmz=True,
                                  skip_report=True, optimize_disk_space=True, rerun_from="odm_orthophoto"))
    assert not project.orthophoto().exists() and not project.orthophoto("kmz").exists()
    assert not project.orthophoto("mbtiles").exists() and not project.tiles_dir("orthophoto").exists()
    assert project.dem("dsm").exists() and project.tiles_dir("dsm").is_dir()


@pytest.mark.long
def test_boundary_crops_every_product(dense: Project, extras: Project, tmp_path: Path) -> None:
    """The western half of the surveyed area's bounding box, given in WGS84: the cloud, the area and the
    orthophoto's opaque pixels all stay within it."""
    georef = Georef.load(extras)
    area = SurveyArea.from_geometry(read_geometry(extras.bounds_file))
    xmin, ymin, xmax, ymax = area.bounds
    half = np.array([[xmin - 50, ymin - 50], [(xmin + xmax) / 2, ymin - 50], [(xmin + xmax) / 2, ymax + 50],
                     [xmin - 50, ymax + 50]])
    lon, lat = Transformer.from_crs(georef.crs, "EPSG:4326", always_xy=True).transform(half[:, 0], half[:, 1])
    ring = [[float(a), float(b)] for a, b in zip(lon, lat)]
    boundary = json.dumps({"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring + ring[:1]]}})
    project = clone(dense, tmp_path / "p")
    pipeline.run(project, options(dsm=True, boundary=boundary, auto_boundary=True, skip_report=True))
    middle = (xmin + xmax) / 2
    cropped = SurveyArea.from_geometry(read_geometry(project.bounds_file))
    assert 0.3 * area.area < cropped.area < 0.6 * area.area
    assert cropped.bounds[2] < middle + 3.0  # within the occupancy grid's cells of the boundary
    with rasterio.open(project.orthophoto()) as ortho:
        _, cols = np.nonzero(ortho.read(4) > 0)
        assert ortho.xy(0, int(cols.max()))[0] < middle + 3.0
    stats = json.loads(project.stats_file.read_text())["point_cloud"]
    assert stats["points"] < 0.7 * json.loads(extras.stats_file.read_text())["point_cloud"]["points"]
