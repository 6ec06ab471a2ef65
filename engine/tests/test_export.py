"""`aeromap-engine export` on ODM's products of Brighton Beach (its point cloud, and an orthophoto and DSM gridded
from it): reprojected rasters checked against pyproj at marked pixels, the point cloud checked point by point,
the KMZ opened with GDAL, and the requests that cannot be met refused with the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import laspy
import numpy as np
import pyproj
import pytest
import rasterio

from aeromap_engine.errors import InputError
from aeromap_engine.export.check import check_export
from aeromap_engine.export.pointcloud import colours_8bit
from aeromap_engine.export.target import coordinate_step, target_crs
from aeromap_engine.tiles.render import TileStyle
from aeromap_engine.tiles.worker import Rasters, handle

from brighton_products import write_products

ENGINE = [sys.executable, "-m", "aeromap_engine.cli"]
# A transverse Mercator on the survey's meridian, given as a PROJ string rather than a code.
LOCAL_TM = "+proj=tmerc +lat_0=46 +lon_0=-92 +k=1 +x_0=100000 +y_0=0 +ellps=GRS80 +units=m +no_defs"
MARKERS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 0, 255)]


def export(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(ENGINE + ["export", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def brighton(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_products(tmp_path_factory.mktemp("brighton"))


@pytest.fixture(scope="module")
def marked(brighton: dict[str, Path],
           tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[float, float]]]:
    """The orthophoto with four 3x3 blocks of pure colours (opaque), and the CRS coordinates of their centres."""
    path = tmp_path_factory.mktemp("marked") / "odm_orthophoto.tif"
    with rasterio.open(brighton["orthophoto"]) as src:
        profile, data, transform = src.profile, src.read(), src.transform
    h, w = data.shape[1:]
    centres = []
    for (r, c), colour in zip([(h // 4, w // 4), (h // 4, 3 * w // 4), (3 * h // 4, w // 4), (3 * h // 4, 3 * w // 4)],
                              MARKERS):
        data[:3, r - 1:r + 2, c - 1:c + 2] = np.array(colour, np.uint8)[:, None, None]
        data[3, r - 1:r + 2, c - 1:c + 2] = 255
        centres.append(transform @ (c + 0.5, r + 0.5))
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data)
    return path, centres


def marker_centre(data: np.ndarray, colour: tuple[int, int, int]) -> tuple[float, float]:
    """(col, row) centre of the pixels nearest the marker's colour, weighted by closeness."""
    distance = np.abs(data[:3].astype(np.float32) - np.array(colour, np.float32)[:, None, None]).sum(axis=0)
    weight = np.clip(1.0 - distance / 200.0, 0.0, None) * (data[3] > 0)
    rows, cols = np.nonzero(weight)
    assert rows.size, f"marker {colour} not found"
    w = weight[rows, cols]
    return float((cols * w).sum() / w.sum() + 0.5), float((rows * w).sum() / w.sum() + 0.5)


@pytest.mark.parametrize("crs_args,expected", [
    (["--epsg", "27700"], pyproj.CRS.from_epsg(27700)),
    (["--proj", LOCAL_TM], pyproj.CRS.from_proj4(LOCAL_TM)),
])
def test_orthophoto_lands_where_pyproj_puts_it(marked, tmp_path: Path, crs_args: list[str],
                                               expected: pyproj.CRS) -> None:
    source, centres = marked
    out = tmp_path / "ortho.tif"
    run = export(str(source), str(out), "--kind", "orthophoto", "--format", "gtiff", *crs_args)
    assert run.returncode == 0, run.stdout + run.stderr
    to_target = pyproj.Transformer.from_crs("EPSG:32615", expected, always_xy=True)
    with rasterio.open(out) as dst:
        assert pyproj.CRS.from_wkt(dst.crs.to_wkt()).equals(expected, ignore_axis_order=True)
        assert dst.count == 4 and dst.colorinterp[3].name == "alpha"
        data, inverse = dst.read(), ~dst.transform
        for (x, y), colour in zip(centres, MARKERS):
            col, row = inverse @ to_target.transform(x, y)
            found = marker_centre(data, colour)
            assert np.hypot(found[0] - col, found[1] - row) <= 1.0, (colour, found, (col, row))


def test_pointcloud_in_epsg_2056_matches_pyproj_to_a_millimetre(brighton: dict[str, Path], tmp_path: Path) -> None:
    for fmt in ("laz", "las"):
        out = tmp_path / f"cloud.{fmt}"
        run = export(str(brighton["laz"]), str(out), "--kind", "pointcloud", "--format", fmt, "--epsg", "2056")
        assert run.returncode == 0, run.stdout + run.stderr
        original, exported = laspy.read(brighton["laz"]), laspy.read(out)
        assert exported.header.parse_crs().to_epsg() == 2056
        assert any(isinstance(v, laspy.vlrs.known.WktCoordinateSystemVlr) for v in exported.header.vlrs)
        assert len(exported.points) == len(original.points) > 40_000
        # With heights, as the datum shift to CH1903+ moves points by their height too.
        x, y, z = pyproj.Transformer.from_crs("EPSG:32615", "EPSG:2056", always_xy=True).transform(
            np.asarray(original.x), np.asarray(original.y), np.asarray(original.z))
        error = np.linalg.norm(np.column_stack([exported.x - x, exported.y - y, exported.z - z]), axis=1)
        assert error.max() <= 0.001
        for name in ("red", "green", "blue", "classification", "gps_time"):
            assert np.array_equal(exported[name], original[name])


def test_pointcloud_as_ply_and_csv(brighton: dict[str, Path], tmp_path: Path) -> None:
    original = laspy.read(brighton["laz"])
    csv = tmp_path / "cloud.csv"
    assert export(str(brighton["laz"]), str(csv), "--kind", "pointcloud", "--format", "csv", "--epsg", "4326"
                  ).returncode == 0
    table = np.loadtxt(csv, delimiter=",", skiprows=1)
    lon, lat = pyproj.Transformer.from_crs("EPSG:32615", "EPSG:4326", always_xy=True).transform(
        np.asarray(original.x), np.asarray(original.y))
    assert len(table) == len(original.points)
    assert np.abs(table[:, 0] - lon).max() < 1e-7 and np.abs(table[:, 1] - lat).max() < 1e-7
    assert np.array_equal(table[:, 3], np.asarray(original.red))  # ODM's 8-bit colours kept as they are
    ply = tmp_path / "cloud.ply"
    assert export(str(brighton["laz"]), str(ply), "--kind", "pointcloud", "--format", "ply").returncode == 0
    assert f"element vertex {len(original.points)}".encode() in ply.read_bytes()[:300]


def test_kmz_opens_with_gdal(brighton: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "ortho.kmz"
    run = export(str(brighton["orthophoto"]), str(out), "--kind", "orthophoto", "--format", "kmz")
    assert run.returncode == 0, run.stdout + run.stderr
    with rasterio.open(brighton["orthophoto"]) as src:
        west, south, east, north = rasterio.warp.transform_bounds(src.crs, "EPSG:4326", *src.bounds)
    with rasterio.open(out) as kmz:
        assert kmz.driver == "KMLSUPEROVERLAY" and kmz.crs.to_epsg() == 4326
        assert kmz.bounds.left == pytest.approx(west, abs=1e-5) and kmz.bounds.top == pytest.approx(north, abs=1e-5)
        assert kmz.read(1).any()


def test_dem_drawn_in_colour_with_webodm_defaults(brighton: dict[str, Path], tmp_path: Path) -> None:
    shaded, flat = tmp_path / "shaded.tif", tmp_path / "flat.tif"
    base = [str(brighton["dsm"]), "--kind", "elevation", "--format", "gtiff-rgb"]
    assert export(base[0], str(shaded), *base[1:]).returncode == 0
    assert export(base[0], str(flat), *base[1:], "--hillshade", "0").returncode == 0
    with rasterio.open(shaded) as a, rasterio.open(flat) as b, rasterio.open(brighton["dsm"]) as dsm:
        assert a.count == 4 and a.crs == dsm.crs
        rgba, plain = a.read(), b.read()
        heights = dsm.read(1, masked=True)
        assert np.array_equal(rgba[3] > 0, ~heights.mask)
        # Viridis: the highest ground is yellow, the lowest purple; the hillshade darkens some cells.
        high, low = np.unravel_index(heights.argmax(), heights.shape), np.unravel_index(heights.argmin(), heights.shape)
        assert plain[0][high] > 200 and plain[2][high] < 100 and plain[2][low] > plain[1][low]
        assert (rgba[:3].astype(int).sum(axis=0) < plain[:3].astype(int).sum(axis=0) - 30).mean() > 0.05


def test_vegetation_index_as_float_band(brighton: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "vari.tif"
    run = export(str(brighton["orthophoto"]), str(out), "--kind", "orthophoto", "--format", "gtiff", "--formula",
                 "VARI", "--bands", "RGB")
    assert run.returncode == 0, run.stdout + run.stderr
    with rasterio.open(out) as dst, rasterio.open(brighton["orthophoto"]) as src:
        assert dst.count == 1 and dst.dtypes[0] == "float32"
        r, g, b = (src.read(i).astype(np.float64) / 255 for i in (1, 2, 3))
        with np.errstate(divide="ignore", invalid="ignore"):
            vari = (g - r) / (g + r - b)
        values = dst.read(1)
        ok = np.isfinite(values) & (np.abs(g + r - b) > 0.01)  # float32 makes a ratio of near zeros anything
        assert ok.sum() > 1000 and np.allclose(values[ok], vari[ok], atol=1e-4)


def test_requests_that_cannot_be_met(brighton: dict[str, Path], tmp_path: Path) -> None:
    ortho = str(brighton["orthophoto"])
    cases = [
        (["--format", "gtiff", "--epsg", "999999"], "Invalid EPSG code: 999999"),
        (["--format", "gtiff", "--proj", "+proj=nonsense"], "Invalid PROJ string"),
        (["--format", "gtiff", "--formula", "VARI"], "formula and bands go together"),
        (["--format", "png", "--color-map", "nope"], "unknown color_map nope"),
        (["--format", "laz"], "Unsupported format: laz"),
        (["--format", "gtiff", "--proj", "+proj=ortho +lat_0=-46 +lon_0=88 +ellps=WGS84"], "cannot be drawn in"),
    ]
    for args, message in cases:
        run = export(ortho, str(tmp_path / "x"), "--kind", "orthophoto", *args)
        assert run.returncode == 3 and message in run.stdout.splitlines()[-1], (args, run.stdout)
    assert not list(tmp_path.iterdir())


def test_check_answers_the_products_crs_and_refuses_epsg_without_one(brighton: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    assert check_export(brighton["laz"], True, None, None, TileStyle()) == {"epsg": 32615}
    assert check_export(brighton["dsm"], False, 27700, None, TileStyle()) == {"epsg": 32615}
    bare = tmp_path / "bare.tif"
    with rasterio.open(bare, "w", driver="GTiff", width=4, height=4, count=1, dtype="uint8") as dst:
        dst.write(np.zeros((1, 4, 4), np.uint8))
    assert check_export(bare, False, None, None, TileStyle()) == {"epsg": None}
    with pytest.raises(InputError, match="non-georeferenced"):
        check_export(bare, False, 4326, None, TileStyle())
    with pytest.raises(InputError, match="needs the N band"):
        check_export(brighton["orthophoto"], False, None, None, TileStyle(formula="NDVI", bands="RGB"))


def test_target_crs_and_steps() -> None:
    assert target_crs(None, None) is None
    assert target_crs(2056, None).to_epsg() == 2056
    assert target_crs(None, "EPSG:3857").to_epsg() == 3857
    with pytest.raises(InputError, match="not both"):
        target_crs(4326, "EPSG:4326")
    with pytest.raises(InputError, match="not a horizontal"):
        target_crs(None, "EPSG:5703")  # NAVD88 heights
    assert coordinate_step(pyproj.CRS.from_epsg(4326)) == 1e-8
    assert coordinate_step(pyproj.CRS.from_epsg(2056)) == 0.001
    assert colours_8bit(np.array([[65535, 257, 0]]), True).tolist() == [[255, 1, 0]]
    assert colours_8bit(np.array([[238, 12, 0]]), False).tolist() == [[238, 12, 0]]


def test_tile_worker_answers_export_checks(brighton: dict[str, Path]) -> None:
    request = {"kind": "export-check", "source": str(brighton["dsm"]), "product": "elevation", "epsg": 2056,
               "proj": None, "color_map": "jet", "formula": None, "bands": None}
    assert handle(Rasters(), request) == {"export": {"epsg": 32615}}
    with pytest.raises(InputError, match="unknown color_map"):
        handle(Rasters(), {**request, "color_map": "nope"})
