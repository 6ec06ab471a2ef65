"""Merging submodels: the cutline weights, and the orthophotos, elevation models and clouds merged across them,
on small synthetic products whose answer is known.

Two submodels side by side: A's core cameras stand along x = 20 m, B's along x = 80 m (east of X0), so the
cutline runs along x = 50 m. A's products cover x in [0, 70], B's [30, 100]; A reaches further south and B
further north, so two corners of the union are covered by neither.
"""

from __future__ import annotations

from pathlib import Path

import laspy
import numpy as np
import pytest
import rasterio
from rasterio.transform import Affine

from aeromap_engine.cloud.area import SurveyArea
from aeromap_engine.cloud.classes import class_counts
from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.dem.grid import Grid
from aeromap_engine.io import pointcloud as pointcloud_io
from aeromap_engine.io.geotiff import RasterFormat
from aeromap_engine.io.pointcloud import write_las
from aeromap_engine.split import mosaic
from aeromap_engine.split.blend import Owners, cutline_weights
from aeromap_engine.options import resolve
from aeromap_engine.pipeline import all_options
from aeromap_engine.split.mosaic import merge_rasters, merged_cloud
from aeromap_engine.stages.merge import opaque_outline
from aeromap_engine.stages.split import submodel_options
from aeromap_engine.dem.surface import NODATA

CRS = "EPSG:32630"
X0, Y0 = 500000.0, 4000000.0
BAND = 10.0
STEP = 0.3  # B's heights sit this much above A's


def _cores() -> list[np.ndarray]:
    y = np.arange(-20.0, 71.0, 1.0)  # same y in both columns: the cutline is exactly x = 50
    return [np.c_[np.full_like(y, X0 + 20), Y0 + y], np.c_[np.full_like(y, X0 + 80), Y0 + y]]


def _owners() -> Owners:
    return Owners(_cores())


def _three_owners() -> Owners:
    """A, then a submodel without products (its cameras far away), then B: products are matched by index."""
    a, b = _cores()
    return Owners([a, np.array([[X0 + 1000, Y0 + 1000]]), b])


def _write(path: Path, bands: np.ndarray, west: float, north: float, res: float, nodata: float | None = None,
           alpha: bool = False, mask: np.ndarray | None = None) -> Path:
    """A GeoTIFF of (bands, h, w) at (west, north) metres from (X0, Y0); `mask`: an internal mask (as a JPEG COG
    keeps its transparency) instead of an alpha band."""
    profile = {"driver": "GTiff", "width": bands.shape[2], "height": bands.shape[1], "count": bands.shape[0],
               "dtype": bands.dtype.name, "crs": CRS, "transform": Affine(res, 0, X0 + west, 0, -res, Y0 + north),
               "nodata": nodata}
    if alpha:
        profile.update({"photometric": "RGB", "alpha": "YES"})
    with rasterio.Env(GDAL_TIFF_INTERNAL_MASK=True), rasterio.open(path, "w", **profile) as out:
        out.write(bands)
        if mask is not None:
            out.write_mask(mask)
    return path


def _centres(west: float, north: float, res: float, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Local x (1, w) and y (h, 1) of cell centres."""
    return (west + (np.arange(shape[1]) + 0.5) * res)[None, :], (north - (np.arange(shape[0]) + 0.5) * res)[:, None]


# --- weights -------------------------------------------------------------------------------------------------


def test_weights_are_even_on_the_cutline_and_the_owners_alone_beyond_the_band() -> None:
    # Columns: on the cutline, A just inside the band, A beyond it, B beyond it.
    d = np.array([[[30.0, 28.0, 20.0, 45.0]], [[30.0, 32.0, 31.0, 20.0]]])
    w = cutline_weights(d, np.ones(d.shape, bool), BAND)
    assert w.dtype == np.float32 and w.shape == d.shape
    assert np.allclose(w[:, 0, 0], [0.5, 0.5])
    assert np.allclose(w[:, 0, 1], [1 / 1.6, 0.6 / 1.6])  # B 4 m farther: raw 0.6 against A's 1
    assert np.allclose(w[:, 0, 2], [1, 0]) and np.allclose(w[:, 0, 3], [0, 1])
    assert np.allclose(w.sum(axis=0), 1)


def test_weights_hand_over_where_the_owner_has_no_data_and_vanish_where_none_has() -> None:
    d = np.array([[[10.0, 10.0, 10.0]], [[40.0, 40.0, 40.0]]])  # A owns all three cells, by far
    valid = np.array([[[True, False, False]], [[True, True, False]]])
    w = cutline_weights(d, valid, BAND)
    assert np.allclose(w[:, 0, 0], [1, 0])
    assert np.allclose(w[:, 0, 1], [0, 1])  # A has a hole: B fully, not faded against nothing
    assert np.all(w[:, 0, 2] == 0)


def test_owners_partition_the_ground_by_the_nearest_core_camera() -> None:
    owners = _owners()
    xy = np.array([[X0 + 10, Y0 + 5], [X0 + 49.9, Y0 + 30], [X0 + 50.1, Y0 + 30], [X0 + 95, Y0 + 60]])
    assert owners.owner(xy).tolist() == [0, 0, 1, 1]
    d = owners.distances(xy[:, 0], xy[:, 1])
    assert d.shape == (2, 4) and np.allclose(d[:, 0], [10, 70])
    x, y = np.array([[X0 + 30, X0 + 60]]), np.array([[Y0], [Y0 + 10], [Y0 + 20]])
    grid = owners.distances(x, y, [1])
    assert grid.shape == (1, 3, 2) and np.allclose(grid[0], [[50, 20]] * 3)


def test_distances_on_a_coarser_grid_are_within_its_step_of_the_exact_ones() -> None:
    rng = np.random.default_rng(3)
    owners = Owners([rng.uniform(0, 60, (25, 2)), rng.uniform(40, 100, (25, 2)), np.empty((0, 2))])
    window = Grid(0.0, 90.0, 0.05, 1024, 1024)  # a raster window of 5 cm cells
    exact = owners.distances(*window.centers())
    near = owners.grid_distances(window, [0, 1, 2], step=0.5)
    assert near.shape == exact.shape == (3, 1024, 1024)
    error = np.abs(near[:2] - exact[:2])
    assert error.max() < 0.5 and error.mean() < 0.01
    assert np.isinf(near[2]).all()  # a submodel without core cameras is nowhere near
    # Where the step is no coarser than the cells, the distances are the exact ones.
    small = Grid(0.0, 90.0, 0.05, 50, 40)
    assert np.array_equal(owners.grid_distances(small, [1], step=0.05), exact[1:2, :40, :50])


# --- elevation models ----------------------------------------------------------------------------------------


def _plane(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Heights sloping north, along the cutline, over the cells (x, y) span."""
    return 100.0 + 0.02 * np.broadcast_arrays(x, y)[1]


@pytest.fixture
def dems(tmp_path: Path) -> tuple[Path, Path]:
    # A at 0.5 m over x [0, 70], y [0, 40], with a hole in its own territory; B at 1 m over x [30, 100], y [10, 50].
    xa, ya = _centres(0, 40, 0.5, (80, 140))
    a = _plane(xa, ya).astype(np.float32)
    a[(ya > 24) & (ya < 26) & (xa > 36) & (xa < 44)] = NODATA
    xb, yb = _centres(30, 50, 1.0, (40, 70))
    b = (_plane(xb, yb) + STEP).astype(np.float32)
    return (_write(tmp_path / "a.tif", a[None], 0, 40, 0.5, NODATA),
            _write(tmp_path / "b.tif", b[None], 30, 50, 1.0, NODATA))


def test_merged_dem_keeps_the_owners_heights_and_ramps_across_the_cutline(
        dems: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mosaic, "WINDOW", 64)  # several windows, some of them partly uncovered
    out = tmp_path / "merged.tif"
    merge_rasters([dems[0], None, dems[1]], _three_owners(), out, "dem", RasterFormat(), BAND)
    with rasterio.open(out) as merged:
        assert merged.crs == rasterio.crs.CRS.from_string(CRS)
        assert merged.res == (0.5, 0.5) and merged.nodata == NODATA
        assert tuple(merged.bounds) == (X0, Y0, X0 + 100, Y0 + 50)  # the union of both
        z = merged.read(1)
    x, y = _centres(0, 50, 0.5, z.shape)
    expected = _plane(x, y)  # A's; B's are STEP higher
    # Rows both cover, away from their north and south edges and from A's hole by more than the edge fade.
    fade = mosaic.EDGE_BAND_M
    overlap = (y > 10 + fade) & (y < 40 - fade) & ~((y > 24 - fade) & (y < 26 + fade))
    west, east = overlap & (x > 31) & (x < 45), overlap & (x > 55) & (x < 69)
    assert np.allclose(z[west], expected[west], atol=1e-3)
    assert np.allclose(z[east], expected[east] + STEP, atol=1e-3)
    # Across the cutline the step becomes a ramp. The distance difference grows 2 m per metre across it (A's
    # cameras recede as B's approach), so the blend spans BAND metres and a cell moves by at most twice
    # STEP * cell / BAND (at the band's edges, where the normalised weight is steepest).
    rows = np.flatnonzero(overlap[:, 0])
    steps = np.abs(np.diff(z[rows] - expected[rows], axis=1))
    assert steps.max() <= 2 * STEP * 0.5 / BAND + 1e-4
    assert steps.max() > 0.5 * STEP * 0.5 / BAND  # it does ramp, and not only by the slope's rounding
    at_cutline = (z[rows][:, [99, 100]] - expected[rows][:, [99, 100]]).mean()
    assert at_cutline == pytest.approx(STEP / 2, abs=0.005)
    # A's hole, deep in its own territory, is filled by B at B's height.
    hole = (y > 24) & (y < 26) & (x > 37) & (x < 43)
    assert np.allclose(z[hole], expected[hole] + STEP, atol=1e-3)
    # Around it A fades out over the edge band instead of stepping down to B at the hole's rim.
    around = np.abs(np.diff((z - expected)[(y[:, 0] > 24) & (y[:, 0] < 26)][:, 40:100], axis=1))
    assert 0 < around.max() < STEP / 3
    # Neither covers the north-west corner (A stops at y = 40, B at x = 30) nor the south-east one.
    assert np.all(z[:, :60][(y[:, 0] > 40)] == NODATA)
    assert np.all(z[:, 140:][(y[:, 0] < 10)] == NODATA)


# --- orthophotos ---------------------------------------------------------------------------------------------

RED, BLUE = (200, 0, 0), (0, 0, 200)


def _coloured(colour: tuple[int, int, int], shape: tuple[int, int]) -> np.ndarray:
    return np.broadcast_to(np.array(colour, np.uint8)[:, None, None], (3, *shape)).copy()


def test_merged_orthophoto_keeps_owner_colours_and_blends_at_the_cutline(tmp_path: Path) -> None:
    # A: red RGBA, transparent (and black) over a patch of its own territory. B: blue, its transparency kept
    # as an internal mask, as a JPEG-compressed COG keeps it, likewise over a patch of its own.
    xa, ya = _centres(0, 40, 0.5, (80, 140))
    alpha = np.where((ya > 22) & (ya < 28) & (xa > 36) & (xa < 44), 0, 255).astype(np.uint8)
    a = np.concatenate([_coloured(RED, alpha.shape) * (alpha > 0), alpha[None]])
    xb, yb = _centres(30, 50, 0.5, (80, 140))
    mask = np.where((yb > 22) & (yb < 28) & (xb > 56) & (xb < 64), 0, 255).astype(np.uint8)
    b = _coloured(BLUE, mask.shape) * (mask > 0)
    sources = [_write(tmp_path / "a.tif", a, 0, 40, 0.5, alpha=True),
               _write(tmp_path / "b.tif", b, 30, 50, 0.5, mask=mask)]
    out, png = tmp_path / "merged.tif", tmp_path / "merged.png"
    merge_rasters(sources, _owners(), out, "orthophoto", RasterFormat(), BAND, png=png)
    assert png.exists()
    with rasterio.open(out) as merged:
        assert merged.count == 4 and merged.dtypes[0] == "uint8" and merged.crs == rasterio.crs.CRS.from_string(CRS)
        assert tuple(merged.bounds) == (X0, Y0, X0 + 100, Y0 + 50)
        rgba = merged.read().astype(int)
    x, y = _centres(0, 50, 0.5, rgba.shape[1:])
    covered = rgba[3] == 255
    assert np.all((rgba[3] == 0) | covered)
    # Transparent where neither covers, opaque wherever one does.
    assert np.all(rgba[3][(y[:, 0] > 40)][:, :60] == 0) and np.all(rgba[3][(y[:, 0] < 10)][:, 140:] == 0)
    assert np.all(covered[(y[:, 0] < 39) & (y[:, 0] > 1)][:, 2:138])
    # Red and blue always add up to the full 200: no transparent (black) cell of A darkens anything.
    assert np.all(np.abs(rgba[0] + rgba[2] - 200)[covered] <= 1) and np.all(rgba[1] == 0)
    fade = mosaic.EDGE_BAND_M  # each fades in from the edges of its data (and of its patch) over this
    overlap = (y > 10 + fade) & (y < 40 - fade)
    west, east = overlap & (x < 45), overlap & (x > 55)
    patches = (y > 22 - fade) & (y < 28 + fade)
    assert np.all(rgba[0][west & ~patches] == 200) and np.all(rgba[2][east & ~patches] == 200)
    # Each fills the other's transparent patch entirely.
    assert np.all(rgba[2][(y > 23) & (y < 27) & (x > 37) & (x < 43)] == 200)
    assert np.all(rgba[0][(y > 23) & (y < 27) & (x > 57) & (x < 63)] == 200)
    at_cutline = rgba[:, 30:70, 99:101]
    assert np.all((at_cutline[0] > 90) & (at_cutline[0] < 110) & (at_cutline[2] > 90) & (at_cutline[2] < 110))


# --- point clouds ----------------------------------------------------------------------------------------------


def _cloud(rng: np.random.Generator, west: float, east: float, colour: tuple[int, int, int], views: int,
           count: int) -> PointCloud:
    """Points on whole millimetres (the LAS scale), none within a millimetre of the cutline (a tie)."""
    xy = np.round(rng.uniform([west, 0], [east, 40], (count, 2)), 3)
    xy = xy[np.abs(xy[:, 0] - 50) > 0.002]
    z = np.round(rng.uniform(100, 110, len(xy)), 3)
    return PointCloud(np.c_[xy + [X0, Y0], z], np.tile(np.array(colour, np.uint8), (len(xy), 1)),
                      np.full(len(xy), views, np.uint8))


def _sorted(cloud: PointCloud) -> np.ndarray:
    table = np.c_[np.round(cloud.xyz * 1000), cloud.rgb, cloud.views]
    return table[np.lexsort(table.T[::-1])]


def test_merged_cloud_keeps_each_location_from_its_owner_only(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pointcloud_io, "CHUNK", 700)  # several chunks per file
    rng = np.random.default_rng(0)
    a, b = _cloud(rng, 0, 70, RED, 3, 3000), _cloud(rng, 30, 100, BLUE, 5, 3000)
    for name, cloud in (("a", a), ("b", b)):
        write_las(tmp_path / f"{name}.laz", [cloud], cloud.xyz.min(axis=0), CRS, compress=True)
    tiled = merged_cloud([tmp_path / "a.laz", None, tmp_path / "b.laz"], _three_owners(), (X0, Y0),
                         tmp_path / "merged.ply", tmp_path)
    assert tiled.box[0][0] >= 0 and tiled.box[1][0] <= 100  # in the world frame: the CRS less the offset
    merged = PointCloud.concatenate(list(tiled.parts((X0, Y0))))
    assert merged.xyz.dtype == np.float64 and merged.rgb.dtype == np.uint8 and merged.views.dtype == np.uint8
    expected = PointCloud.concatenate([a.subset(a.xyz[:, 0] < X0 + 50), b.subset(b.xyz[:, 0] > X0 + 50)])
    assert len(merged) == len(expected) < len(a) + len(b)
    assert np.array_equal(_sorted(merged), _sorted(expected))  # coordinates, colours and view counts
    assert np.all(merged.rgb[merged.xyz[:, 0] < X0 + 50] == RED)
    # The merged cloud is in the CRS as odm_georeferencing writes it: it goes straight back to LAZ.
    write_las(tmp_path / "merged.laz", tiled.parts((X0, Y0)), merged.xyz.min(axis=0), CRS, compress=True)
    with laspy.open(tmp_path / "merged.laz") as reader:
        assert reader.header.point_count == len(expected) and reader.header.parse_crs().to_epsg() == 32630


def test_merged_cloud_keeps_the_submodels_classes(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    a, b = _cloud(rng, 0, 70, RED, 3, 2000), _cloud(rng, 30, 100, BLUE, 5, 2000)
    a.classes, b.classes = np.full(len(a), 2, np.uint8), np.full(len(b), 6, np.uint8)  # ground, building
    for name, cloud in (("a", a), ("b", b)):
        write_las(tmp_path / f"{name}.laz", [cloud], cloud.xyz.min(axis=0), CRS, compress=True)
    tiled = merged_cloud([tmp_path / "a.laz", None, tmp_path / "b.laz"], _three_owners(), (X0, Y0),
                         tmp_path / "merged.ply", tmp_path, classified=True)
    merged = PointCloud.concatenate(list(tiled.parts((X0, Y0))))
    west = merged.xyz[:, 0] < X0 + 50
    assert tiled.classified and np.all(merged.classes[west] == 2) and np.all(merged.classes[~west] == 6)
    assert class_counts(tiled.parts()) == {"ground": int(west.sum()), "building": int((~west).sum())}


def test_submodels_keep_the_surveys_processing_options_but_make_only_what_the_merge_reads() -> None:
    given = [{"name": "dsm", "value": True}, {"name": "pc-quality", "value": "high"}, {"name": "pc-las", "value": True},
             {"name": "cog", "value": True}, {"name": "split", "value": 80}, {"name": "sm-cluster", "value": "http://a"},
             {"name": "end-with", "value": "odm_report"}]
    options, _ = resolve(all_options(), given)
    submodel, dropped = resolve(all_options(), submodel_options(options))
    assert dropped == []
    assert submodel.dsm and submodel.pc_quality == "high"  # processed as the survey asked
    assert submodel.split == 999999 and submodel.sm_cluster == ""  # a submodel is not split again
    assert submodel.end_with == "odm_orthophoto" and submodel.skip_3dmodel
    # The merge writes the survey's own LAS, COPC and COG from the joined products.
    assert not (submodel.pc_las or submodel.pc_copc or submodel.pc_csv or submodel.cog or submodel.orthophoto_png)


def test_merge_skip_blending_cuts_along_the_cutline(tmp_path: Path) -> None:
    """Band 0 (merge-skip-blending): every cell wholly from the nearest submodel with data, so red and blue meet
    at x = 50 without a ramp, and each still fills the other's transparent patch."""
    xa, ya = _centres(0, 40, 0.5, (80, 140))
    alpha = np.where((ya > 22) & (ya < 28) & (xa > 36) & (xa < 44), 0, 255).astype(np.uint8)
    a = np.concatenate([_coloured(RED, alpha.shape) * (alpha > 0), alpha[None]])
    b = np.concatenate([_coloured(BLUE, (80, 140)), np.full((1, 80, 140), 255, np.uint8)])
    sources = [_write(tmp_path / "a.tif", a, 0, 40, 0.5, alpha=True),
               _write(tmp_path / "b.tif", b, 30, 50, 0.5, alpha=True)]
    out = tmp_path / "merged.tif"
    merge_rasters(sources, _owners(), out, "orthophoto", RasterFormat(), 0.0)
    with rasterio.open(out) as merged:
        rgba = merged.read().astype(int)
    x, y = _centres(0, 50, 0.5, rgba.shape[1:])
    covered = rgba[3] == 255
    assert set(map(tuple, rgba[:3][:, covered].T)) == {RED, BLUE}  # no blended colour anywhere
    both = (y > 10) & (y < 40) & ~((y > 22) & (y < 28))
    assert np.all(rgba[0][both & (x < 50)] == 200) and np.all(rgba[2][both & (x > 50)] == 200)
    assert np.all(rgba[2][(y > 23) & (y < 27) & (x > 37) & (x < 43)] == 200)  # A's patch from B


def test_weights_without_a_band_pick_the_nearest_with_data() -> None:
    d = np.array([[[1.0, 5.0, 2.0]], [[3.0, 4.0, 9.0]]])
    valid = np.array([[[True, True, False]], [[True, True, True]]])
    w = cutline_weights(d, valid, 0.0)
    assert w.tolist() == [[[1.0, 0.0, 0.0]], [[0.0, 1.0, 1.0]]]


def test_merged_orthophotos_cutline_is_the_outline_of_its_opaque_pixels(tmp_path: Path) -> None:
    """An L of opaque pixels (a 40 x 10 m bar and a 10 x 30 m one at 0.5 m) with a transparent 4 x 4 m hole: one
    polygon with one hole, of the opaque area, in the raster's CRS coordinates."""
    alpha = np.zeros((80, 80), np.uint8)
    alpha[:20, :] = 255  # north bar
    alpha[20:, :20] = 255  # west bar
    alpha[4:12, 40:48] = 0  # the hole
    rgba = np.concatenate([_coloured(RED, alpha.shape), alpha[None]])
    geometry = opaque_outline(_write(tmp_path / "o.tif", rgba, 0, 40, 0.5, alpha=True))
    area = SurveyArea.from_geometry(geometry, (X0, Y0))
    assert len(area.polygons) == 1 and len(area.polygons[0].holes) == 1
    assert area.area == pytest.approx(40 * 10 + 10 * 30 - 4 * 4)
    assert area.bounds == pytest.approx((0.0, 0.0, 40.0, 40.0))
