"""The map-product stages (openmvs, odm_filterpoints, odm_georeferencing, odm_dem, odm_orthophoto) and their
options, on a reconstruction of six Brighton Beach images downscaled to 1000 px (two flight lines over the park,
the car park and the sea), built once per test process by the engine's own dataset and opensfm stages (conftest's
`sparse`)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import laspy
import numpy as np
import pycolmap
import pytest
import rasterio
from PIL import Image
from scipy.spatial import cKDTree

from aeromap_engine import pipeline
from aeromap_engine.cloud.area import SurveyArea
from aeromap_engine.cloud.boundary import Boundary
from aeromap_engine.cloud.filters import statistical_inliers
from aeromap_engine.errors import InputError
from aeromap_engine.crs_offset import Georef
from aeromap_engine.dem.grid import Grid, Window
from aeromap_engine.io.geojson import read_geometry, read_polygon
from aeromap_engine.io.geotiff import RasterFormat, TiledRaster
from aeromap_engine.io.ply import read_ply, write_ply
from aeromap_engine.project import Project
from aeromap_engine.stages import odm_dem, odm_orthophoto
from conftest import BRIGHTON_SIX, ULTRA, clone

SUBSET = BRIGHTON_SIX
# Every run repeats the SfM options of the fixture, so that no stage before openmvs is run again.
BASE = ULTRA


def options(**values: object) -> list[dict]:
    return BASE + [{"name": name.replace("_", "-"), "value": value} for name, value in values.items()]


def products_options(**values: object) -> list[dict]:
    """The products' runs leave the textured model out: test_meshing and test_texturing run it."""
    return options(skip_3dmodel=True, **values)


@pytest.fixture()
def variant(products: Project, tmp_path: Path) -> Project:
    """A copy of the default run, to re-run with other options (only the stages they affect run again)."""
    return clone(products, tmp_path / "p")


def stats(project: Project) -> dict:
    return json.loads(project.stats_file.read_text())


def offset(project: Project) -> np.ndarray:
    return np.array([*Georef.load(project).offset, 0.0])


def sparse_points(project: Project, min_views: int = 3) -> np.ndarray:
    cloud = read_ply(project.path("opensfm", "sparse.ply"))
    return cloud.xyz[cloud.views >= min_views].astype(np.float64)


def read_raster(path: Path) -> tuple[np.ndarray, dict]:
    with rasterio.open(path) as dataset:
        return dataset.read(masked=True), {"crs": dataset.crs, "transform": dataset.transform,
                                           "res": dataset.res, "dtypes": dataset.dtypes, "nodata": dataset.nodata,
                                           "count": dataset.count, "compression": dataset.compression,
                                           "layout": dataset.tags(ns="IMAGE_STRUCTURE").get("LAYOUT"),
                                           "overviews": dataset.overviews(1), "bounds": dataset.bounds,
                                           "masks": dataset.read_masks(1)}


# --- openmvs ---------------------------------------------------------------------------------------------------

def test_dense_cloud_lies_on_the_sparse_surface_with_colours(products: Project) -> None:
    dense = read_ply(products.path("openmvs", "scene_dense.ply"))
    assert len(dense) > 100_000
    sparse = sparse_points(products)
    distance, index = cKDTree(dense.xyz).query(sparse)
    assert np.mean(distance < 0.25) > 0.9  # the dense surface passes through the tie points...
    assert abs(np.median(sparse[:, 2] - dense.xyz[index, 2])) < 0.05  # ...without a height bias
    assert dense.rgb.std() > 15 and 60 < dense.rgb.mean() < 200
    assert dense.views.min() >= 2
    assert stats(products)["dense"]["working_size"] == 640  # medium: a quarter of 1000 px, at least 640


def test_pc_quality_sets_the_working_scale(variant: Project) -> None:
    pipeline.run(variant, products_options(pc_quality="lowest", end_with="openmvs"))
    figures = stats(variant)["dense"]
    assert figures["working_size"] == 320
    assert figures["points"] < 0.5 * stats(variant)["point_cloud"]["input_points"]  # from the medium run


@pytest.mark.long
def test_dense_cloud_made_in_several_processes_is_the_same(variant: Project, engine_log) -> None:
    clouds = []
    with engine_log() as captured:
        for concurrency in (1, 2):
            pipeline.run(variant, products_options(rerun_from="openmvs", end_with="openmvs",
                                                   max_concurrency=concurrency))
            clouds.append(variant.path("openmvs", "scene_dense.ply").read_bytes())
        counts = [line.split("Dense matching in ")[1] for line in captured.lines if "Dense matching in" in line]
    assert counts == ["1 process", "2 processes"]
    assert len(read_ply(variant.path("openmvs", "scene_dense.ply"))) > 10_000
    assert clouds[0] == clouds[1]


def test_water_and_weak_texture_produce_nothing_wild(products: Project) -> None:
    """The sea fills a third of two images: matching fails there, but no points may fly off the surface."""
    dense = read_ply(products.path("openmvs", "scene_dense.ply")).xyz.astype(np.float64)
    sparse = sparse_points(products, 2)
    assert dense[:, 2].min() > sparse[:, 2].min() - 6  # the sea floor seen through clear water, at most
    assert dense[:, 2].max() < sparse[:, 2].max() + 6
    tree = cKDTree(dense[:, :2])
    probe = dense[np.random.default_rng(0).choice(len(dense), 20_000, replace=False)]
    local = np.array([np.median(dense[n, 2]) for n in tree.query_ball_point(probe[:, :2], r=1.0)])
    assert np.mean(np.abs(probe[:, 2] - local) > 2.0) < 0.01


def _keep_points(project: Project, keep) -> None:
    """Rewrite the reconstruction keeping only the 3D points for which keep(point) is true."""
    path = project.path("opensfm", "reconstruction")
    model = pycolmap.Reconstruction(str(path))
    for point_id in [i for i, p in model.points3D.items() if not keep(model, p)]:
        model.delete_point3D(point_id)
    model.write(str(path))


def test_too_little_overlap_is_a_clear_error(sparse: Project, tmp_path: Path) -> None:
    project = clone(sparse, tmp_path / "p")
    _keep_points(project, lambda model, point: point.track.length() < 2)  # no two images share a point
    with pytest.raises(InputError, match="overlap"):
        pipeline.run(project, products_options())


def test_an_isolated_image_gives_a_partial_result_that_says_so(sparse: Project, tmp_path: Path) -> None:
    project = clone(sparse, tmp_path / "p")
    lonely = "DJI_0032.JPG"
    _keep_points(project, lambda model, point: all(model.images[e.image_id].name != lonely
                                                   for e in point.track.elements))
    pipeline.run(project, products_options(end_with="openmvs"))
    figures = stats(project)["dense"]
    assert figures["images_without_partner"] == [lonely]
    assert figures["depth_maps"] == len(SUBSET) - 1 and figures["points"] > 50_000


# --- odm_filterpoints ------------------------------------------------------------------------------------------

def test_outlier_filter_removes_isolated_points(products: Project) -> None:
    xyz = read_ply(products.path("odm_filterpoints", "point_cloud.ply")).xyz
    rng = np.random.default_rng(1)
    lo, hi = xyz.min(axis=0), xyz.max(axis=0)
    strays = lo + rng.random((300, 3)) * (hi - lo)
    strays[:, 2] = hi[2] + 3 + 30 * rng.random(300)  # in the air above the survey
    strays = strays.astype(np.float32)
    keep = statistical_inliers(np.concatenate([xyz, strays]), sigma=5.0)
    assert keep[len(xyz):].mean() < 0.05 and keep[:len(xyz)].mean() > 0.99


def test_pc_filter_and_crop_change_the_cloud(variant: Project, products: Project) -> None:
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True, pc_filter=0, crop=0,
                                           end_with="odm_filterpoints"))
    before, after = stats(products)["point_cloud"], stats(variant)["point_cloud"]
    assert "after_outlier_filter" not in after  # filter off
    assert after["points"] == after["input_points"]  # nothing filtered, nothing cropped
    assert before["points"] < before["input_points"]
    assert after["area_m2"] > before["area_m2"]  # the uncropped hull is 3 m wider all round


def test_pc_sample_keeps_one_point_per_radius(variant: Project) -> None:
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True, pc_sample=0.3,
                                           end_with="odm_filterpoints"))
    xyz = read_ply(variant.path("odm_filterpoints", "point_cloud.ply")).xyz.astype(np.float64)
    spacing = cKDTree(xyz).query(xyz, k=2)[0][:, 1]
    assert spacing.min() >= 0.3 - 1e-4  # no two points closer than the radius...
    assert np.median(spacing) < 0.45  # ...yet the surface stays covered at about that spacing
    assert len(xyz) < 0.2 * stats(variant)["point_cloud"]["input_points"]


def test_auto_boundary_keeps_the_area_around_the_cameras(variant: Project) -> None:
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True, auto_boundary=True,
                                           auto_boundary_distance=5, end_with="odm_filterpoints"))
    xy = read_ply(variant.path("odm_filterpoints", "point_cloud.ply")).xyz[:, :2].astype(np.float64)
    model = pycolmap.Reconstruction(str(variant.path("opensfm", "reconstruction")))
    centres = np.array([image.projection_center()[:2] for image in model.images.values()])
    assert Boundary(centres).grown(5.01).contains(xy).all()
    assert 10_000 < len(xy) < 0.8 * stats(variant)["point_cloud"]["input_points"]


# --- odm_georeferencing ----------------------------------------------------------------------------------------

def test_georeferenced_cloud_is_in_the_crs_in_every_format(variant: Project, products: Project) -> None:
    base = products.path("odm_georeferencing", "odm_georeferenced_model")
    assert base.with_suffix(".laz").exists() and not base.with_suffix(".las").exists()
    assert not base.with_suffix(".csv").exists()
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True, pc_las=True, pc_csv=True,
                                           end_with="odm_georeferencing"))
    local = read_ply(variant.path("odm_filterpoints", "point_cloud.ply"))
    expected = local.xyz.astype(np.float64) + offset(variant)
    base = variant.path("odm_georeferencing", "odm_georeferenced_model")
    for suffix in (".laz", ".las"):
        las = laspy.read(str(base.with_suffix(suffix)))
        assert las.header.parse_crs().to_epsg() == 32615
        assert las.header.point_count == len(local)
        assert np.allclose(np.c_[las.x, las.y, las.z], expected, atol=0.002)
        assert np.array_equal(np.asarray(las.red) // 257, local.rgb[:, 0])
    # COPC, as a streaming reader sees it: every point once, the coarse levels a thinner sample of the same area.
    with laspy.open(str(base.with_suffix(".copc.laz"))) as las:
        assert las.header.parse_crs().to_epsg() == 32615
    with laspy.CopcReader.open(str(base.with_suffix(".copc.laz"))) as copc:
        assert copc.header.point_count == len(local)
        every = copc.query()
        assert cKDTree(np.c_[every.x, every.y, every.z]).query(expected)[0].max() < 0.002
        root = copc.query(level=0)
        assert 0 < len(root) < len(local) / 10
        assert np.ptp(root.x) > 0.8 * np.ptp(expected[:, 0])
    csv = np.loadtxt(base.with_suffix(".csv"), delimiter=",", skiprows=1)
    assert csv.shape == (len(local), 6) and np.allclose(csv[:, :3], expected, atol=0.002)
    ply = read_ply(base.with_suffix(".ply"))
    assert ply.xyz.dtype == np.float64 and np.allclose(ply.xyz, expected, atol=1e-3)
    assert b"comment crs EPSG:32615" in base.with_suffix(".ply").read_bytes()[:400]
    # ODM's coords.txt: the zone, then the offset the textured model's coordinates are relative to.
    zone, east_north = variant.path("odm_georeferencing", "coords.txt").read_text().splitlines()
    assert zone == "WGS84 UTM 15N"
    assert np.allclose([float(v) for v in east_north.split()], offset(variant)[:2], atol=0.001)


# --- odm_dem ---------------------------------------------------------------------------------------------------

def test_dsm_and_dtm_are_georeferenced_float_cogs(products: Project) -> None:
    gsd = stats(products)["reconstruction"]["gsd_cm"]
    bounds = read_polygon(products.path("odm_filterpoints", "bounds.geojson"))
    for kind in ("dsm", "dtm"):
        values, meta = read_raster(products.path("odm_dem", f"{kind}.tif"))
        assert meta["crs"].to_epsg() == 32615 and meta["dtypes"] == ("float32",) and meta["nodata"] == -9999
        assert meta["layout"] == "COG" and meta["overviews"]
        assert meta["res"][0] == pytest.approx(0.009 * gsd)  # 5 cm asked, finer than 0.9 x GSD: capped
        left, bottom, right, top = meta["bounds"]
        assert left <= bounds[:, 0].min() and right >= bounds[:, 0].max() - 0.1
        assert bottom <= bounds[:, 1].min() and top >= bounds[:, 1].max() - 0.1
        assert values.mask[0, 0, 0] and values.mask[0, 0, -1]  # corners lie outside the surveyed polygon
        assert values.count() > 0.5 * values.size
    assert stats(products)["dem"]["dtm"]["ground_points"] > 0


def test_dtm_removes_trees_and_cars_and_keeps_the_ground(products: Project) -> None:
    dsm = read_raster(products.path("odm_dem", "dsm.tif"))[0][0]
    dtm = read_raster(products.path("odm_dem", "dtm.tif"))[0][0]
    height = (dsm - dtm).compressed()
    assert np.percentile(height, 99.5) > 3 and height.max() > 8  # trees stand well above the terrain...
    assert np.median(np.abs(height)) < 0.15  # ...while open ground is the same in both
    assert np.percentile(height, 0.5) > -0.5  # the terrain never rises above the surface


def test_dem_resolution_and_ignore_gsd(variant: Project) -> None:
    pipeline.run(variant, products_options(dsm=True, dem_resolution=20, orthophoto_png=True, end_with="odm_dem"))
    assert read_raster(variant.path("odm_dem", "dsm.tif"))[1]["res"][0] == pytest.approx(0.2)
    assert not variant.path("odm_dem", "dtm.tif").exists()
    pipeline.run(variant, products_options(dtm=True, ignore_gsd=True, orthophoto_png=True, end_with="odm_dem"))
    assert read_raster(variant.path("odm_dem", "dtm.tif"))[1]["res"][0] == pytest.approx(0.05)


def test_gapfill_steps_and_smrf_options_change_the_models(variant: Project, products: Project) -> None:
    default_dsm = read_raster(products.path("odm_dem", "dsm.tif"))[0][0]
    default_ground = stats(products)["dem"]["dtm"]["ground_fraction"]
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True, dem_gapfill_steps=0,
                                           smrf_threshold=30, smrf_scalar=0, end_with="odm_dem"))
    dsm = read_raster(variant.path("odm_dem", "dsm.tif"))[0][0]
    assert dsm.count() == default_dsm.count()  # larger gaps are filled either way
    assert np.abs(dsm - default_dsm).max() > 0.5  # but small ones now take the coarse surface's heights
    # Everything within 30 m of the terrain is ground, but for the low noise taken out before the filter (PDAL's
    # ELM step: a few points far below the cells around them).
    assert stats(variant)["dem"]["dtm"]["ground_fraction"] >= 0.995
    assert default_ground < 0.99
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True, smrf_window=1, smrf_slope=5,
                                           end_with="odm_dem"))
    assert stats(variant)["dem"]["dtm"]["ground_fraction"] > default_ground  # small window, steep: trees stay


def test_no_elevation_models_unless_asked(sparse: Project, tmp_path: Path) -> None:
    project = clone(sparse, tmp_path / "p")
    pipeline.run(project, products_options(fast_orthophoto=True, end_with="odm_orthophoto"))
    assert not project.path("odm_dem", "dsm.tif").exists() and not project.path("odm_dem", "dtm.tif").exists()
    # fast-orthophoto: no dense matching, the sparse points make the cloud and the surface
    assert not project.path("openmvs", "scene_dense.ply").exists()
    figures = stats(project)
    assert figures["point_cloud"]["source"] == "sparse"
    assert figures["point_cloud"]["points"] <= figures["reconstruction"]["points"]
    rgba, meta = read_raster(project.path("odm_orthophoto", "odm_orthophoto.tif"))
    assert meta["count"] == 4 and np.count_nonzero(rgba[3]) > 0.4 * rgba[3].size


# --- odm_orthophoto --------------------------------------------------------------------------------------------

def test_orthophoto_is_an_rgba_cog_transparent_outside_the_survey(products: Project) -> None:
    rgba, meta = read_raster(products.path("odm_orthophoto", "odm_orthophoto.tif"))
    assert meta["crs"].to_epsg() == 32615 and meta["count"] == 4 and meta["layout"] == "COG"
    assert meta["compression"].name == "deflate"
    alpha = rgba[3].filled(0)
    assert alpha[0, 0] == 0 and alpha[-1, -1] == 0
    transform = meta["transform"]
    rows, cols = np.mgrid[0:alpha.shape[0]:7, 0:alpha.shape[1]:7]
    x, y = transform @ (cols + 0.5, rows + 0.5)
    # The surveyed area, which need not be convex, in the CRS.
    area = SurveyArea.from_geometry(read_geometry(products.path("odm_filterpoints", "bounds.geojson")))
    points = np.c_[x.ravel(), y.ravel()]
    inside = area.contains(points).reshape(rows.shape)
    pixels = Grid(transform.c, transform.f, transform.a, alpha.shape[1], alpha.shape[0])
    near = cv2.dilate(area.mask(pixels, all_touched=True).astype(np.uint8), np.ones((5, 5), np.uint8))
    outside = near[rows, cols] == 0  # farther than 2 pixels from the area
    opaque = alpha[rows, cols] == 255
    assert opaque[inside].mean() > 0.99  # no holes over the surveyed area
    assert outside.any() and not opaque[outside].any()  # nothing outside it
    png = np.asarray(Image.open(products.path("odm_orthophoto", "odm_orthophoto.png")))
    assert png.shape == (alpha.shape[0], alpha.shape[1], 4) and np.array_equal(png[:, :, 3], alpha)


@pytest.mark.long
def test_water_inside_the_survey_gets_pixels_from_the_photographs(variant: Project, products: Project) -> None:
    """A pond: water gives neither dense nor tie points, so those of a disk inside the survey are removed. The
    disk stays in the surveyed area, and the orthophoto colours it from the photographs that see it (projected
    on the filled surface) as it did when the points were there."""
    dense = read_ply(variant.path("openmvs", "scene_dense.ply"))
    centre = np.median(dense.xyz[:, :2].astype(np.float64), axis=0)
    radius = 6.0
    write_ply(variant.path("openmvs", "scene_dense.ply"),
              dense.subset(np.hypot(*(dense.xyz[:, :2] - centre).T) > radius))
    _keep_points(variant, lambda model, point: np.hypot(*(point.xyz[:2] - centre)) > radius)
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True,
                                           rerun_from="odm_filterpoints", end_with="odm_orthophoto"))
    area = SurveyArea.from_geometry(read_geometry(variant.path("odm_filterpoints", "bounds.geojson")))
    world = centre + offset(variant)[:2]
    assert area.contains(world[None]).all()
    before, meta = read_raster(products.path("odm_orthophoto", "odm_orthophoto.tif"))
    after, meta_after = read_raster(variant.path("odm_orthophoto", "odm_orthophoto.tif"))
    angles = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    rings = np.concatenate([np.c_[np.cos(angles), np.sin(angles)] * r for r in (0.5, 2.5, 4.5)])
    samples = world + np.vstack([[0.0, 0.0], rings])
    colours = []
    for rgba, transform in ((before, meta["transform"]), (after, meta_after["transform"])):
        cols, rows = ~transform @ (samples[:, 0], samples[:, 1])
        pixels = rgba.filled(0)[:, rows.astype(int), cols.astype(int)]
        assert (pixels[3] == 255).all()  # no holes over the water
        colours.append(pixels[:3].T.astype(float))
    assert np.median(np.abs(colours[0] - colours[1]).sum(axis=1)) < 40


def test_orthophoto_is_in_place(products: Project) -> None:
    """Sparse points (georeferenced through the cameras) find their own colour in the orthophoto."""
    rgba, meta = read_raster(products.path("odm_orthophoto", "odm_orthophoto.tif"))
    cloud = read_ply(products.path("opensfm", "sparse.ply"))
    xyz = cloud.xyz.astype(np.float64) + offset(products)
    cols, rows = ~meta["transform"] @ (xyz[:, 0], xyz[:, 1])
    rows, cols = rows.astype(int), cols.astype(int)
    ok = (rows >= 0) & (rows < rgba.shape[1]) & (cols >= 0) & (cols < rgba.shape[2])
    ok[ok] &= rgba[3].filled(0)[rows[ok], cols[ok]] == 255
    ortho = rgba[:3].filled(0)[:, rows[ok], cols[ok]].T.astype(float)
    assert ok.sum() > 100
    assert np.median(np.abs(ortho - cloud.rgb[ok]).sum(axis=1)) < 60


def test_orthophoto_compression_option_reaches_the_geotiff(variant: Project) -> None:
    """The option through the stage, with the one compression that changes the file's layout (each of the others
    at the writer, in test_orthophoto_compression)."""
    # Tile pyramids (odm_postprocess) do not depend on how the GeoTIFF is compressed.
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True,
                                           orthophoto_compression="JPEG", end_with="odm_orthophoto"))
    meta = read_raster(variant.path("odm_orthophoto", "odm_orthophoto.tif"))[1]
    assert meta["compression"].name.upper() == "JPEG"
    # No alpha band in JPEG: the transparency becomes the mask.
    assert meta["count"] == 3 and meta["masks"][0, 0] == 0 and meta["masks"].max() == 255


@pytest.mark.parametrize("compression", ["JPEG", "LZW", "PACKBITS", "LZMA", "NONE"])
def test_orthophoto_compression(tmp_path: Path, compression: str) -> None:
    """Each compression as the orthophoto's writer stores it: an RGBA COG transparent on its west half."""
    grid = Grid(0.0, 0.0, 0.05, 600, 400)
    rgba = np.random.default_rng(5).integers(0, 256, (4, grid.height, grid.width), dtype=np.uint8)
    rgba[3] = 255
    rgba[3, :, :grid.width // 2] = 0
    path = tmp_path / "odm_orthophoto.tif"
    with TiledRaster(path, grid, "EPSG:32615", (500_000.0, 5_000_000.0), 4, "uint8", RasterFormat(compression),
                     alpha=True) as out:
        out.write(Window(0, 0, grid.height, grid.width), rgba)
    meta = read_raster(path)[1]
    assert (meta["compression"].name if meta["compression"] else "NONE").upper() == compression
    assert meta["layout"] == "COG"
    if compression == "JPEG":  # no alpha band in JPEG: the transparency becomes the mask
        assert meta["count"] == 3 and meta["masks"][0, 0] == 0 and meta["masks"].max() == 255
    else:
        assert meta["count"] == 4
    assert np.array_equal(meta["masks"] > 0, rgba[3] > 0)


@pytest.mark.long
def test_tiles_made_in_several_processes_make_the_same_models_and_orthophoto(variant: Project,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           engine_log) -> None:
    monkeypatch.setattr(odm_orthophoto, "TILE", 256)  # several tiles on this small survey
    monkeypatch.setattr(odm_dem, "TILE", 256)
    paths = (variant.path("odm_orthophoto", "odm_orthophoto.tif"), variant.orthophoto_sources,
             variant.path("odm_dem", "dsm.tif"), variant.path("odm_dem", "dtm.tif"))
    rasters = []
    with engine_log() as captured:
        for concurrency in (1, 2):
            pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True,
                                                   end_with="odm_orthophoto", rerun_from="odm_dem",
                                                   max_concurrency=concurrency))
            rasters.append([read_raster(path)[0].filled(0) for path in paths])
        counts = [line.split(" tiles in ")[1] for line in captured.lines if " tiles in " in line]
    assert counts == ["1 process", "2 processes"]
    assert rasters[0][0][3].any() and rasters[0][2].max() > 0
    for one, two in zip(*rasters):
        assert np.array_equal(one, two)


@pytest.mark.long
def test_plain_geotiff_with_and_without_overviews(variant: Project) -> None:
    pipeline.run(variant, products_options(dsm=True, dtm=True, cog=False, end_with="odm_orthophoto"))
    meta = read_raster(variant.path("odm_orthophoto", "odm_orthophoto.tif"))[1]
    assert meta["layout"] is None and not meta["overviews"] and meta["count"] == 4
    assert read_raster(variant.path("odm_dem", "dsm.tif"))[1]["layout"] is None
    assert not variant.path("odm_orthophoto", "odm_orthophoto.png").exists()
    pipeline.run(variant, products_options(dsm=True, dtm=True, cog=False, build_overviews=True,
                                           end_with="odm_orthophoto"))
    assert read_raster(variant.path("odm_orthophoto", "odm_orthophoto.tif"))[1]["overviews"]


def test_orthophoto_resolution_is_capped_by_the_gsd(variant: Project, products: Project) -> None:
    gsd = stats(products)["reconstruction"]["gsd_cm"]
    assert stats(products)["orthophoto"]["resolution_cm"] == pytest.approx(0.9 * gsd, abs=0.01)
    pipeline.run(variant, products_options(dsm=True, dtm=True, orthophoto_png=True, orthophoto_resolution=25,
                                           end_with="odm_orthophoto"))
    meta = read_raster(variant.path("odm_orthophoto", "odm_orthophoto.tif"))[1]
    assert meta["res"][0] == pytest.approx(0.25)


def test_stats_report_the_products(products: Project) -> None:
    figures = stats(products)
    for stage in ("openmvs", "odm_filterpoints", "odm_georeferencing", "odm_dem", "odm_orthophoto"):
        assert figures["stages"][stage]["seconds"] >= 0 and figures["stages"][stage]["peak_memory_mb"] > 0
    cloud = figures["point_cloud"]
    assert cloud["density_per_m2"] == pytest.approx(cloud["points"] / cloud["area_m2"], rel=0.01)
    assert figures["orthophoto"]["covered_m2"] == pytest.approx(cloud["area_m2"], rel=0.05)
    # odm_postprocess made a tile pyramid of each raster.
    tiles = figures["tiles"]
    assert set(tiles) == {"orthophoto", "dsm", "dtm"} and all(layer["tiles"] > 0 for layer in tiles.values())
    for pyramid in ("odm_orthophoto/odm_orthophoto.mbtiles", "odm_dem/dsm.mbtiles", "odm_dem/dtm.mbtiles"):
        assert (products.root / pyramid).stat().st_size > 10_000
