"""Tile pyramids: the Web Mercator grid maths, and `aeromap-engine tiles` on GeoTIFFs made here with rasterio in
other coordinate systems, an orthophoto with a marked spot and an elevation model with holes."""

from __future__ import annotations

import io
import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import rasterio
from PIL import Image
from pyproj import Transformer
from rasterio.transform import from_origin

from aeromap_engine.tiles.mercator import HALF, native_zoom, tile_bounds, tiles_covering, top_tile
from aeromap_engine.tiles.pyramid import BLOCK_CHUNK, Pyramid, build_pyramid, downsample
from aeromap_engine.tiles.style import colour, ramp

ENGINE = [sys.executable, "-m", "aeromap_engine.cli"]


def run_tiles(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(ENGINE + ["tiles", *args], capture_output=True, text=True)


def test_tile_grid_matches_the_xyz_scheme() -> None:
    assert tile_bounds(0, 0, 0) == pytest.approx((-HALF, -HALF, HALF, HALF))
    # Zoom 1: x grows eastwards, y southwards.
    assert tile_bounds(1, 1, 0) == pytest.approx((0, 0, HALF, HALF))
    assert tiles_covering(2, (-1.0, -1.0, 1.0, 1.0)) == (1, 1, 2, 2)
    assert top_tile((1.0, 1.0, 2.0, 2.0), 10) == (10, 512, 511)
    # 5 cm on the ground at 46.8 N is zoom 21 (5.1 cm there), not 22.
    assert native_zoom(0.05, 46.8) == 21
    assert native_zoom(0.30, 0.0) == 19


def test_downsampling_weighs_colours_by_their_opacity() -> None:
    rgba = np.zeros((2, 2, 4), dtype=np.uint8)
    rgba[0, 0] = (200, 100, 50, 255)  # one opaque pixel among three transparent ones
    assert downsample(rgba)[0, 0].tolist() == [200, 100, 50, 64]


def write_raster(path: Path, crs: str, transform, data: np.ndarray, nodata: float | None = None) -> None:
    with rasterio.open(path, "w", driver="GTiff", width=data.shape[-1], height=data.shape[-2], count=data.shape[0],
                       dtype=data.dtype, crs=crs, transform=transform, nodata=nodata) as out:
        out.write(data)


def read_mbtiles(path: Path) -> tuple[dict[str, str], dict[tuple[int, int, int], np.ndarray]]:
    with sqlite3.connect(path) as db:
        metadata = dict(db.execute("SELECT name, value FROM metadata"))
        tiles = {
            (z, x, 2**z - 1 - row): np.asarray(Image.open(io.BytesIO(data)))
            for z, x, row, data in db.execute("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")
        }
    return metadata, tiles


def test_orthophoto_in_another_crs_lands_where_it_belongs(tmp_path: Path) -> None:
    # A 200 m square in ETRS89 / LAEA Europe at 10 cm, grey with a red 1 m square 50 m east and 50 m south of
    # its north-west corner, and transparent outside a disc.
    size = 2000
    origin = (4321000.0, 3210000.0)
    rgba = np.full((4, size, size), 128, dtype=np.uint8)
    rgba[3] = 255
    rgba[:, 500:510, 500:510] = np.array([255, 0, 0, 255], dtype=np.uint8)[:, None, None]
    raster = tmp_path / "ortho.tif"
    write_raster(raster, "EPSG:3035", from_origin(*origin, 0.1, 0.1), rgba)

    result = run_tiles(str(raster), str(tmp_path / "ortho.mbtiles"), "--name", "laea")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    metadata, tiles = read_mbtiles(tmp_path / "ortho.mbtiles")
    assert metadata["format"] == "png" and metadata["name"] == "laea"
    # MBTiles 1.3 rows are counted from the south (TMS): no "scheme" row that some readers would take to flip them.
    assert "scheme" not in metadata
    # GDAL's MBTiles driver, a standard reader, opens it at the native zoom with the colours and transparency.
    with rasterio.open(tmp_path / "ortho.mbtiles") as opened:
        assert opened.driver == "MBTiles" and opened.count == 4 and opened.crs.to_epsg() == 3857
        assert opened.tags()["ZOOM_LEVEL"] == str(summary["max_zoom"])
    assert int(metadata["maxzoom"]) == summary["max_zoom"] and int(metadata["minzoom"]) == summary["min_zoom"]
    assert len(tiles) == summary["tiles"]

    # The bounds are the raster's, in degrees.
    west, south, east, north = map(float, metadata["bounds"].split(","))
    to_lonlat = Transformer.from_crs("EPSG:3035", "EPSG:4326", always_xy=True)
    corners = [to_lonlat.transform(origin[0] + dx, origin[1] - dy) for dx in (0, 200) for dy in (0, 200)]
    assert west == pytest.approx(min(c[0] for c in corners), abs=1e-6)
    assert north == pytest.approx(max(c[1] for c in corners), abs=1e-6)

    # The red square's centre, placed independently with pyproj, falls on red pixels of its tile at the
    # native zoom, and the pixel one metre further east is grey again (within a pixel of where it should be).
    z = summary["max_zoom"]
    to_mercator = Transformer.from_crs("EPSG:3035", "EPSG:3857", always_xy=True)
    mx, my = to_mercator.transform(origin[0] + 50.5, origin[1] - 50.5)
    span = 2 * HALF / 2**z
    x, y = int((mx + HALF) // span), int((HALF - my) // span)
    col = int(((mx + HALF) / span - x) * 256)
    row = int(((HALF - my) / span - y) * 256)
    tile = tiles[(z, x, y)]
    assert tile[row, col].tolist() == [255, 0, 0, 255]
    metres_per_pixel = span / 256 * math.cos(math.radians((south + north) / 2))
    assert tile.shape == (256, 256, 4)
    beside = int(round(1.0 / metres_per_pixel)) + 1
    if col + beside < 256:
        assert tile[row, col + beside, 0] < 200

    # Every zoom down to one tile holding it all, each level a quarter of the one above.
    zooms = sorted({key[0] for key in tiles})
    assert zooms == list(range(summary["min_zoom"], z + 1))
    assert sum(1 for key in tiles if key[0] == zooms[0]) == 1


def test_elevation_with_holes_is_ramped_over_its_valid_range_and_transparent_in_the_holes(tmp_path: Path) -> None:
    size = 400
    heights = np.tile(np.linspace(100.0, 140.0, size, dtype=np.float32), (size, 1))
    heights[150:250, 150:250] = -9999.0  # a hole
    raster = tmp_path / "dsm.tif"
    write_raster(raster, "EPSG:32633", from_origin(500000.0, 5200000.0, 0.25, 0.25), heights[None], nodata=-9999.0)

    result = run_tiles(str(raster), str(tmp_path / "dsm.mbtiles"), "--elevation")
    assert result.returncode == 0, result.stderr
    low, high = json.loads(result.stdout)["value_range"]
    assert 100.0 <= low < 102.0 and 138.0 < high <= 140.0
    metadata, tiles = read_mbtiles(tmp_path / "dsm.mbtiles")
    assert metadata["value_range"] == f"{low:.3f},{high:.3f}" and metadata["color_map"] == "viridis"

    z = int(metadata["maxzoom"])
    native = {key: tile for key, tile in tiles.items() if key[0] == z}
    mosaic_alpha = np.concatenate([tile[..., 3].ravel() for tile in native.values()])
    assert (mosaic_alpha == 0).any() and (mosaic_alpha == 255).any()
    # Low ground is drawn dark blue-violet, high ground yellow (the ramp's ends).
    opaque = np.concatenate([tile[tile[..., 3] == 255][:, :3] for tile in native.values()])
    assert opaque[:, 2].max() > 100 and opaque[:, 0].max() > 150


def test_blocks_cut_in_several_processes_make_the_same_pyramid(tmp_path: Path) -> None:
    rows, cols = np.indices((1000, 4000))
    rgba = np.stack([rows % 256, cols % 256, (rows * cols) % 251, np.full_like(rows, 255)]).astype(np.uint8)
    rgba[3, :, :400] = 0  # a transparent strip: its tiles are left out either way
    raster = tmp_path / "ortho.tif"
    write_raster(raster, "EPSG:32633", from_origin(500000.0, 5200000.0, 0.1, 0.1), rgba)
    with rasterio.open(raster) as src:
        pyramid = Pyramid(raster, src, False)
    assert len(list(pyramid.blocks(*pyramid.top))) >= 1 + BLOCK_CHUNK  # work for both processes
    pyramids = []
    for workers in (1, 2):
        target = tmp_path / f"{workers}.mbtiles"
        info = build_pyramid(raster, target, False, "ortho", workers)
        with sqlite3.connect(target) as db:
            stored = {(z, x, y): data for z, x, y, data in
                      db.execute("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")}
        assert info.tiles == len(stored) > 0
        pyramids.append(stored)
    assert pyramids[0] == pyramids[1]


def test_a_file_that_is_not_a_raster_is_refused_clearly(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.tif"
    bogus.write_text("not a raster")
    result = run_tiles(str(bogus), str(tmp_path / "out.mbtiles"))
    assert result.returncode == 3
    assert "is not a raster that can be read" in result.stdout + result.stderr
    assert not (tmp_path / "out.mbtiles").exists()


def test_colour_maps_span_their_anchors_and_reverse() -> None:
    values = np.array([[0.0, 0.5, 1.0]])
    jet = colour(values, 0.0, 1.0, ramp("jet"))[0]
    assert jet[0].tolist() == [0, 0, 128] and jet[2].tolist() == [128, 0, 0]
    reversed_jet = colour(values, 0.0, 1.0, ramp("JET_r"))[0]
    assert reversed_jet[0].tolist() == [128, 0, 0] and reversed_jet[1] == pytest.approx(jet[1])
    # Anchors at uneven positions: terrain is green at a quarter.
    assert colour(np.array([[0.25]]), 0.0, 1.0, ramp("terrain"))[0, 0].tolist() == [0, 204, 102]
    with pytest.raises(KeyError):
        ramp("nope")


def ask(worker: subprocess.Popen, request: dict) -> dict:
    assert worker.stdin and worker.stdout
    worker.stdin.write(json.dumps(request) + "\n")
    worker.stdin.flush()
    return json.loads(worker.stdout.readline())


def test_tile_worker_draws_single_tiles_in_the_requested_style(tmp_path: Path) -> None:
    # A 400 m ramp from 100 m (west) to 140 m (east) in UTM at 0.5 m, with overviews, as the engine writes DEMs.
    size = 800
    heights = np.tile(np.linspace(100.0, 140.0, size, dtype=np.float32), (size, 1))
    raster = tmp_path / "dsm.tif"
    write_raster(raster, "EPSG:32633", from_origin(500000.0, 5200000.0, 0.5, 0.5), heights[None], nodata=-9999.0)
    with rasterio.open(raster, "r+") as dataset:
        dataset.build_overviews([2, 4, 8])
    to_mercator = Transformer.from_crs("EPSG:32633", "EPSG:3857", always_xy=True)
    mx, my = to_mercator.transform(500200.0, 5199800.0)  # the centre
    worker = subprocess.Popen(ENGINE + ["tile-worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        for z, size_px in ((14, 256), (18, 512)):
            span = 2 * HALF / 2**z
            x, y = int((mx + HALF) // span), int((HALF - my) // span)
            out = tmp_path / f"{z}.png"
            answer = ask(worker, {"id": z, "raster": str(raster), "elevation": True, "z": z, "x": x, "y": y,
                                  "size": size_px, "rescale": [100, 140], "color_map": "gray", "hillshade": None,
                                  "out": str(out)})
            assert answer == {"id": z, "written": True}
            tile = np.asarray(Image.open(out))
            assert tile.shape == (size_px, size_px, 4)
            # Grey over 100..140 m without shading: each column's grey is its height, west darker than east.
            opaque = tile[..., 3] == 255
            rows, cols = np.nonzero(opaque)
            west, east = tile[rows[cols.argmin()], cols.min()], tile[rows[cols.argmax()], cols.max()]
            assert west[0] < east[0] and west[0] == west[1] == west[2]
        # The centre column's grey is that of 120 m, halfway up the ramp (to within the tile's width in height).
        assert abs(int(tile[size_px // 2, (int(((mx + HALF) / span - x) * size_px))][0]) - 128) < 4

        far = ask(worker, {"id": 3, "raster": str(raster), "elevation": True, "z": 18, "x": 0, "y": 0, "size": 256,
                           "rescale": None, "color_map": None, "hillshade": 1, "out": str(tmp_path / "far.png")})
        assert far == {"id": 3, "written": False} and not (tmp_path / "far.png").exists()
        bad = ask(worker, {"id": 4, "raster": str(raster), "elevation": True, "z": 14, "x": 0, "y": 0, "size": 256,
                           "color_map": "nope", "out": str(tmp_path / "bad.png")})
        assert bad == {"id": 4, "error": "unknown color_map nope", "input": True}
        missing = ask(worker, {"id": 5, "raster": str(tmp_path / "gone.tif"), "elevation": True, "z": 1, "x": 0,
                               "y": 0, "size": 256, "out": str(tmp_path / "x.png")})
        assert missing["id"] == 5 and "gone.tif" in missing["error"] and "input" not in missing
        # A line that is not JSON is answered too, and the worker goes on.
        assert worker.stdin and worker.stdout
        worker.stdin.write("garbage\n")
        worker.stdin.flush()
        assert "error" in json.loads(worker.stdout.readline())
        assert ask(worker, {**bad, "id": 6, "color_map": "viridis_r", "raster": str(raster), "elevation": True,
                            "z": 14, "x": 0, "y": 0, "size": 256, "out": str(tmp_path / "b.png")}) == {"id": 6, "written": False}
        # The model described: its heights in metres, and the colour maps offered for elevation.
        described = ask(worker, {"id": 7, "kind": "metadata", "raster": str(raster), "elevation": True})["metadata"]
        assert described["statistics"]["1"]["min"] == pytest.approx(100.0)
        assert described["statistics"]["1"]["max"] == pytest.approx(140.0)
        assert [c["key"] for c in described["color_maps"]] == ["viridis", "jet", "terrain"]
        refused = ask(worker, {"id": 8, "kind": "metadata", "raster": str(raster), "elevation": True,
                               "formula": "VARI", "bands": "auto"})
        assert refused == {"id": 8, "input": True, "error": "formula and bands apply to orthophotos, not to elevation models"}
    finally:
        worker.stdin.close()  # type: ignore[union-attr]
        assert worker.wait(timeout=10) == 0


def test_tile_worker_draws_and_describes_a_vegetation_index_of_an_orthophoto(tmp_path: Path) -> None:
    # A 100 m square RGB orthophoto in UTM at 0.25 m with its alpha band: crop (60, 160, 60) in the west half,
    # bare grey soil in the east half, nothing surveyed along the north edge.
    size = 400
    rgba = np.full((4, size, size), 255, dtype=np.uint8)
    rgba[:3, :, : size // 2] = np.array([60, 160, 60], dtype=np.uint8)[:, None, None]
    rgba[:3, :, size // 2:] = 128
    rgba[3, :40] = 0
    raster = tmp_path / "ortho.tif"
    with rasterio.open(raster, "w", driver="GTiff", width=size, height=size, count=4, dtype="uint8",
                       crs="EPSG:32633", transform=from_origin(500000.0, 5200000.0, 0.25, 0.25), photometric="RGB",
                       alpha="YES") as out:
        out.write(rgba)
    mx, my = Transformer.from_crs("EPSG:32633", "EPSG:3857", always_xy=True).transform(500050.0, 5199950.0)
    z = 18
    span = 2 * HALF / 2**z
    x, y = int((mx + HALF) // span), int((HALF - my) // span)
    centre = int(((mx + HALF) / span - x) * 256), int(((HALF - my) / span - y) * 256)
    tile = {"raster": str(raster), "elevation": False, "z": z, "x": x, "y": y, "size": 256}
    worker = subprocess.Popen(ENGINE + ["tile-worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        out = tmp_path / "vari.png"
        answer = ask(worker, {"id": 1, **tile, "formula": "VARI", "bands": "auto", "color_map": "rdylgn",
                              "out": str(out)})
        assert answer == {"id": 1, "written": True}
        drawn = np.asarray(Image.open(out))
        # VARI is 100/160 on the crop and 0 on grey soil: over -1..1 on RdYlGn, green in the west and the
        # ramp's pale yellow middle in the east.
        west, east = drawn[centre[1], centre[0] - 20], drawn[centre[1], centre[0] + 20]
        assert west[3] == east[3] == 255
        assert west[1] > west[0] and abs(int(east[0]) - 255) < 10 and abs(int(east[1]) - 255) < 10
        expected = colour(np.array([0.625]), -1.0, 1.0, ramp("rdylgn"))[0]
        assert np.abs(west[:3].astype(int) - expected).max() <= 2

        refused = ask(worker, {"id": 2, **tile, "formula": "NDVI", "bands": "auto", "out": str(out)})
        assert refused == {"id": 2, "input": True,
                           "error": "NDVI needs the N band, which the orthophoto does not have (its bands are RGB)"}
        alone = ask(worker, {"id": 3, **tile, "formula": "VARI", "out": str(out)})
        assert alone["input"] and "formula and bands go together" in alone["error"]

        described = ask(worker, {"id": 4, "kind": "metadata", "raster": str(raster), "elevation": False,
                                 "formula": "VARI", "bands": "auto"})["metadata"]
        stats = described["statistics"]
        assert list(stats) == ["1"]
        assert (stats["1"]["min"], stats["1"]["max"]) == (-1.0, 1.0)  # the formula's range, as WebODM
        assert stats["1"]["percentiles"] == pytest.approx([0.0, 0.625], abs=1e-3)
        counts, edges = stats["1"]["histogram"]
        assert len(counts) == 255 and len(edges) == 256 and sum(counts) == size * (size - 40)
        assert described["auto_bands"] == {"filter": "RGB", "match": True}
        assert "VARI" in [a["id"] for a in described["algorithms"]]
        assert [c["key"] for c in described["color_maps"]][:4] == ["rdylgn", "spectral", "rdylgn_r", "spectral_r"]
        assert described["color_maps"][0]["color_map"][0] == [165, 0, 38, 255]

        plain = ask(worker, {"id": 5, "kind": "metadata", "raster": str(raster), "elevation": False})["metadata"]
        assert list(plain["statistics"]) == ["1", "2", "3"]
        assert plain["statistics"]["2"]["min"] == 128 and plain["statistics"]["2"]["max"] == 160
        assert plain["algorithms"] == [] and plain["color_maps"] == []
        assert plain["auto_bands"] == {"filter": "", "match": None}
        assert plain["colorinterp"] == ["red", "green", "blue", "alpha"] and plain["dtype"] == "uint8"
    finally:
        worker.stdin.close()  # type: ignore[union-attr]
        assert worker.wait(timeout=10) == 0
