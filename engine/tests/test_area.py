"""The surveyed area and what follows it (cloud/area.py and area_tracing.py, dem/smrf.py, cloud/filters.py,
ortho/footprint.py, the elevation models' tiles), on synthetic surveys unlike Brighton Beach: far-apart fields,
an L, a pond, low noise, a sparse region, a photograph that is mostly water. Each test also checks that the old
way (convex hull, one grid, global statistic, tie-point box) fails the same check, so that it cannot pass by
accident."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pycolmap
import pytest
import rasterio

from aeromap_engine.cloud.area import SurveyArea
from aeromap_engine.cloud.area_tracing import AreaSettings, area_of_points
from aeromap_engine.cloud.boundary import Boundary
from aeromap_engine.cloud.filters import mean_neighbour_distance, statistical_inliers
from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.cloud.tiled import TiledCloud, Tiling, tile_sorted
from aeromap_engine.dem import smrf
from aeromap_engine.dem.grid import Grid, bin_points
from aeromap_engine.dem.smrf import SmrfSettings, classify, is_ground, terrain
from aeromap_engine.dem.surface import SurfaceSettings
from aeromap_engine.dense.views import SparseModel, View
from aeromap_engine.crs_offset import Georef
from aeromap_engine.io.geojson import read_geometry, write_geometry
from aeromap_engine.io.geotiff import RasterFormat
from aeromap_engine.errors import EngineError
from aeromap_engine.ortho.coverage import check_coverage, measure_coverage
from aeromap_engine.ortho.footprint import cast_frames, footprints, ground_outlines
from aeromap_engine.sfm.cameras import lens_coverage
from aeromap_engine.sfm.record import model_checks
from aeromap_engine.stages import odm_dem

SETTINGS = AreaSettings(cell=1.0, closing=10.0, max_hole=5000.0, min_part=math.pi * 10.0**2)


def field(rng: np.random.Generator, x0: float, y0: float, width: float, height: float,
          density: float = 4.0) -> np.ndarray:
    """Points (N, 2) scattered over a rectangle, `density` per m2."""
    count = int(width * height * density)
    return np.c_[rng.uniform(x0, x0 + width, count), rng.uniform(y0, y0 + height, count)]


def segments_cross(rings: list[np.ndarray]) -> bool:
    """Whether any two edges of the rings cross (brute force, for the test)."""
    edges = [(ring[i], ring[(i + 1) % len(ring)]) for ring in rings for i in range(len(ring))]
    a = np.array([e[0] for e in edges])
    b = np.array([e[1] for e in edges])

    def side(p, q, r):
        return np.sign((q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0]))

    p, q = a[:, None], b[:, None]
    r, s = a[None], b[None]
    return bool(((side(p, q, r) * side(p, q, s) < 0) & (side(r, s, p) * side(r, s, q) < 0)).any())


def signed_area(ring: np.ndarray) -> float:
    x, y = ring[:, 0], ring[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def tiled(xyz: np.ndarray, folder: Path) -> TiledCloud:
    """The points as the tiled cloud the stages after odm_filterpoints read."""
    cloud = PointCloud(xyz.astype(np.float32), np.zeros((len(xyz), 3), np.uint8), np.ones(len(xyz), np.uint8))
    return tile_sorted([cloud], Tiling.fitting([cloud]), folder / "cloud.ply", folder)


# --- the area ---------------------------------------------------------------------------------------------------

def test_two_far_fields_are_two_parts_and_nothing_between() -> None:
    rng = np.random.default_rng(0)
    xy = np.concatenate([field(rng, 0, 0, 100, 80), field(rng, 3000, 1500, 120, 60)])
    area = area_of_points(xy, SETTINGS)
    assert area is not None and len(area.polygons) == 2
    assert area.area == pytest.approx(100 * 80 + 120 * 60, rel=0.03)  # its true area, the fields' sum
    between = np.array([[1500.0, 750.0], [200.0, 100.0], [2900.0, 1400.0]])
    assert not area.contains(between).any()
    assert area.contains(np.array([[50.0, 40.0], [3060.0, 1530.0]])).all()
    assert area.geometry()["type"] == "MultiPolygon"
    # The convex hull of the same points (the old area) takes in the land between the fields.
    hull = Boundary.around(xy)
    assert hull.area > 10 * area.area and hull.contains(between[:1]).all()


def test_an_l_keeps_its_shape_and_a_pond_inside_is_filled() -> None:
    rng = np.random.default_rng(1)
    xy = np.concatenate([field(rng, 0, 0, 200, 40), field(rng, 0, 40, 40, 160)])
    pond = np.hypot(xy[:, 0] - 100, xy[:, 1] - 20) < 12  # water: no dense points
    area = area_of_points(xy[~pond], SETTINGS)
    assert area is not None and len(area.polygons) == 1
    assert area.area == pytest.approx(200 * 40 + 40 * 160, rel=0.03)
    assert area.contains(np.array([[100.0, 20.0]])).all()  # the pond is part of the survey
    assert not area.contains(np.array([[100.0, 100.0], [60.0, 60.0]])).any()  # the L's inner corner is not
    assert Boundary.around(xy).contains(np.array([[100.0, 100.0]])).all()  # the hull's is


def test_small_islands_go_large_holes_stay_and_crop_shrinks() -> None:
    rng = np.random.default_rng(2)
    square = field(rng, 0, 0, 300, 300)
    lake = np.hypot(square[:, 0] - 150, square[:, 1] - 150) < 60  # 11,300 m2: more than max_hole
    strays = field(rng, 700, 700, 6, 6)  # a tiny island of stray points far off
    xy = np.concatenate([square[~lake], strays])
    area = area_of_points(xy, SETTINGS)
    assert len(area.polygons) == 1 and len(area.polygons[0].holes) == 1
    assert area.area == pytest.approx(300 * 300 - math.pi * 60**2, rel=0.03)
    assert not area.contains(np.array([[150.0, 150.0], [703.0, 703.0]])).any()
    cropped = area_of_points(xy, AreaSettings(**{**SETTINGS.__dict__, "crop": 3.0}))
    perimeter = 4 * 300 + 2 * math.pi * 60
    assert area.area - cropped.area == pytest.approx(3.0 * perimeter, rel=0.15)
    assert not cropped.contains(np.array([[1.5, 150.0]])).any() and cropped.contains(np.array([[4.5, 150.0]])).all()


def test_the_area_is_valid_geojson_and_its_masks_agree_with_contains(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    xy = np.concatenate([field(rng, 0, 0, 150, 150), field(rng, 400, 0, 80, 200)])
    ring = np.hypot(xy[:, 0] - 75, xy[:, 1] - 75)
    xy = xy[(ring < 30) | (ring > 55)]  # a moat round an island: a hole with the island as another part
    xy = xy[~((np.abs(xy[:, 0] - 440) < 15) & (xy[:, 1] > 60))]  # a slot: a deep notch
    area = area_of_points(xy, AreaSettings(**{**SETTINGS.__dict__, "crop": 2.0}))
    offset = (500000.0, 5000000.0)
    write_geometry(tmp_path / "bounds.geojson", area.geometry(offset), "EPSG:32615")
    geometry = read_geometry(tmp_path / "bounds.geojson")
    assert geometry["type"] == "MultiPolygon" and len(geometry["coordinates"]) == 3
    for polygon in geometry["coordinates"]:
        rings = [np.asarray(r) for r in polygon]
        assert all(len(r) >= 4 and np.array_equal(r[0], r[-1]) for r in rings)  # closed, at least a triangle
        assert signed_area(rings[0][:-1]) > 0 and all(signed_area(r[:-1]) < 0 for r in rings[1:])  # RFC 7946
        assert not segments_cross([r[:-1] for r in rings])
    again = SurveyArea.from_geometry(geometry, offset)
    assert again.area == pytest.approx(area.area)
    grid = Grid.covering(area.bounds, 0.7)
    x, y = grid.centers()
    centres = np.c_[np.broadcast_to(x, (grid.height, grid.width)).ravel(),
                    np.broadcast_to(y, (grid.height, grid.width)).ravel()]
    inside = again.contains(centres).reshape(grid.height, grid.width)
    assert np.mean(again.mask(grid) != inside) < 1e-3  # only cells whose centre lies on an edge may differ
    assert again.mask(grid, all_touched=True)[inside].all()
    assert inside.sum() * 0.49 == pytest.approx(area.area, rel=0.01)


# --- work follows the area --------------------------------------------------------------------------------------

def far_fields(rng: np.random.Generator) -> tuple[np.ndarray, SurveyArea]:
    """Two fields 4 km apart on gently sloping ground, with a few trees."""
    xy = np.concatenate([field(rng, 0, 0, 120, 100, 3.0), field(rng, 4000, 2000, 100, 120, 3.0)])
    z = 200 + 0.02 * xy[:, 0] + 0.01 * xy[:, 1] + rng.normal(0, 0.03, len(xy))
    tree = (np.hypot(xy[:, 0] - 60, xy[:, 1] - 50) < 5) | (np.hypot(xy[:, 0] - 4050, xy[:, 1] - 2060) < 5)
    z[tree] += 8
    return np.c_[xy, z], area_of_points(xy, SETTINGS)


def test_smrf_and_the_elevation_models_only_work_on_the_area(tmp_path: Path, monkeypatch) -> None:
    rng = np.random.default_rng(4)
    xyz, area = far_fields(rng)
    assert len(area.polygons) == 2
    cells = []
    real_terrain = smrf.terrain

    def counting_terrain(points, bounds, settings):
        result = real_terrain(points, bounds, settings)
        cells.append(result.height.size)
        return result

    monkeypatch.setattr(smrf, "terrain", counting_terrain)
    settings = SmrfSettings()
    cloud = tiled(xyz, tmp_path)
    # One worker: the counting patches only see calls in this process.
    ground = odm_dem.find_ground(cloud, settings, tmp_path / "ground.ply", tmp_path, workers=1)
    # Every tile of the terrain grid holds points: about the fields' area in 1 m cells, plus margins, not the
    # 4 km x 2 km box (8 M cells) between them.
    assert sum(cells) < 20 * area.area and sum(cells) < 0.05 * 4100 * 2120

    def is_tree(points: np.ndarray) -> np.ndarray:
        return points[:, 2] - (200 + 0.02 * points[:, 0] + 0.01 * points[:, 1]) > 4

    found = np.concatenate(list(ground.xyz_by_tile())).astype(np.float64)
    assert not is_tree(found).any() and len(found) > 0.98 * (~is_tree(xyz)).sum()

    surfaces = []
    real_surface = odm_dem.surface
    monkeypatch.setattr(odm_dem, "surface", lambda *a, **k: surfaces.append(1) or real_surface(*a, **k))
    georef = Georef("EPSG:32615", (500000.0, 5000000.0), "gps")
    grid = odm_dem.write_model(tmp_path / "dsm.tif", cloud, area, 0.5, SurfaceSettings("max"), georef,
                               RasterFormat(cog=False), workers=1)
    tiles = math.ceil(grid.width / odm_dem.TILE) * math.ceil(grid.height / odm_dem.TILE)
    assert len(surfaces) <= 4 and tiles >= 15  # tiles without any of the area were skipped
    with rasterio.open(tmp_path / "dsm.tif") as dataset:
        values = dataset.read(1, masked=True)
        transform = dataset.transform
    col, row = ~transform @ (500000 + 2000, 5000000 + 1000)  # halfway between the fields: nothing invented
    assert values.mask[int(row), int(col)]
    col, row = ~transform @ (500000 + 30, 5000000 + 30)
    assert abs(values[int(row), int(col)] - (200 + 0.6 + 0.3)) < 0.2
    assert values.count() * 0.25 == pytest.approx(area.area, rel=0.02)


# --- SMRF: low outliers ----------------------------------------------------------------------------------------

def sloping_ground(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    xy = rng.uniform(0, 80, (80_000, 2))
    true = 50 + 0.08 * xy[:, 0] + 0.03 * xy[:, 1]
    return xy, true


def test_low_noise_does_not_pull_the_terrain_down() -> None:
    rng = np.random.default_rng(5)
    xy, true = sloping_ground(rng)
    z = true + rng.normal(0, 0.03, len(xy))
    # Matching noise and glints on water: small clusters of points metres below (up to 2 x 2 cells), and single
    # points away from them (each is judged against the cells around it: five low cells close together would be
    # a hollow).
    centres = np.array([[15.0, 15.0], [15.0, 60.0], [40.0, 40.0], [65.0, 20.0], [62.0, 65.0]])
    clusters = np.zeros(len(xy), bool)
    for cx, cy in centres:
        clusters |= (np.abs(xy[:, 0] - cx) < 1) & (np.abs(xy[:, 1] - cy) < 1) & (rng.random(len(xy)) < 0.3)
    z[clusters] -= 6
    apart = np.min(np.hypot(*(xy[:, None, :] - centres[None]).transpose(2, 0, 1)), axis=1) > 8
    singles = rng.choice(np.flatnonzero(apart), 25, replace=False)
    z[singles] -= rng.uniform(3, 15, len(singles))
    low = clusters.copy()
    low[singles] = True
    xyz = np.c_[xy, z]
    settings = SmrfSettings()
    ground = classify(xyz, (0, 0, 80, 80), settings)
    assert not ground[low].any()
    assert ground[~low].mean() > 0.99
    # The DTM's cells (mean of ground points) stay on the true ground.
    grid = Grid.covering((0, 0, 80, 80), 1.0)
    error = bin_points(grid, xyz[ground], "mean") - bin_points(grid, np.c_[xy, true][ground], "mean")
    assert np.nanmax(np.abs(error)) < 0.15
    # Without the low-noise step (as before), the pits stay in the provisional terrain: the points in them
    # pass as ground and the DTM's cells there dip by metres.
    old = is_ground(xyz, terrain(xyz, (0, 0, 80, 80), settings), settings)
    old_error = bin_points(grid, xyz[old], "mean") - bin_points(grid, np.c_[xy, true][old], "mean")
    assert old[low].sum() > 10 and np.nanmax(np.abs(old_error)) > 2


def test_a_ditch_and_ground_seen_through_a_canopy_are_not_low_noise() -> None:
    rng = np.random.default_rng(6)
    xy, true = sloping_ground(rng)
    ditch = (np.abs(xy[:, 1] - 30) < 0.5) & (xy[:, 0] < 50)  # 1 m wide, 1.5 m deep, across the open ground
    true = np.where(ditch, true - 1.5, true)
    # A wood over the east: the canopy 12 m up hides the ground but for gaps of 2 x 3 m, 6 m apart, where
    # dense matching reaches it; elsewhere under the trees it finds nothing. (A pit seen through a single gap
    # would look like noise: too few cells say otherwise.)
    wood = xy[:, 0] > 50
    gaps = (np.mod(xy[:, 0], 6) < 2) & (np.mod(xy[:, 1], 6) < 3)
    canopy = wood & ~gaps & (rng.random(len(xy)) < 0.5)
    keep = ~wood | gaps | canopy
    z = np.where(canopy, true + 12 + rng.normal(0, 1.0, len(xy)), true + rng.normal(0, 0.03, len(xy)))
    xyz, true, ditch, seen = np.c_[xy, z][keep], true[keep], ditch[keep], (wood & gaps & ~ditch)[keep]
    settings = SmrfSettings()
    grid = Grid.covering((0, 0, 80, 80), 1.0)
    assert not smrf.low_outliers(xyz, grid, settings)[ditch | seen].any()
    ground = classify(xyz, (0, 0, 80, 80), settings)
    assert ground[ditch].mean() > 0.95 and ground[seen].mean() > 0.95
    assert not ground[canopy[keep]].any()


# --- the outlier filter ------------------------------------------------------------------------------------------

def test_outlier_filter_keeps_a_sparse_region_and_removes_isolated_points() -> None:
    rng = np.random.default_rng(7)
    dense = np.c_[field(rng, 0, 0, 60, 60, 40.0), rng.normal(0, 0.02, 144_000)]
    # Far from the cameras (high GSD, obliques' far edge): an eighth of the spacing, 1/160 of the density.
    sparse = np.c_[field(rng, 60, 0, 60, 60, 0.25), rng.normal(0, 0.1, 900)]
    strays = np.c_[rng.uniform(0, 120, (20, 2)), rng.uniform(5, 15, 20)]  # in the air over both
    far = np.c_[rng.uniform(135, 150, (5, 2)), rng.uniform(-2, 2, 5)]  # alone, far off on the ground
    xyz = np.concatenate([dense, sparse, strays, far]).astype(np.float32)
    parts = np.repeat([0, 1, 2, 2], [len(dense), len(sparse), len(strays), len(far)])
    keep = statistical_inliers(xyz, sigma=5.0)
    assert keep[parts == 0].mean() > 0.99
    # The sparse region survives; only a band along the abrupt hundredfold step in density, where its points'
    # regions still take in the dense side, may go (real density falls off gradually).
    away = (parts == 1) & (xyz[:, 0] > 80)
    assert keep[away].mean() > 0.98 and keep[parts == 1].mean() > 0.8
    assert keep[parts == 2].mean() < 0.05
    # The old global statistic cuts the sparse region away whole.
    distances = mean_neighbour_distance(xyz, 16)
    old = distances <= distances.mean() + 5.0 * distances.std()
    assert old[parts == 1].mean() < 0.5


# --- the orthophoto's views ------------------------------------------------------------------------------------

def nadir_view(name: str, x: float, y: float, height: float, point_ids: np.ndarray,
               camera: pycolmap.Camera | None = None) -> View:
    camera = camera or pycolmap.Camera.create_from_model_name(1, "SIMPLE_RADIAL", 1000.0, 1000, 750)
    rotation = np.diag([1.0, -1.0, -1.0])  # looking straight down, image x east, image y south
    centre = np.array([x, y, height])
    return View(name, camera, rotation, -rotation @ centre, point_ids)


def test_a_view_that_is_mostly_water_is_asked_for_the_water() -> None:
    """The view's tie points lie in one corner of its frame (the rest is water): the footprint must still be
    its whole frame on the ground, else tiles over the water never ask it."""
    # 100 m above the ground: the frame covers 100 m x 75 m around (0, 0).
    corner = np.array([[40.0, 30.0, 0.0], [45.0, 35.0, 0.0], [48.0, 28.0, 0.1], [42.0, 36.0, -0.1]])
    view = nadir_view("water.jpg", 0.0, 0.0, 100.0, np.arange(4))
    model = SparseModel([view], np.arange(4), corner)
    xmin, ymin, xmax, ymax = footprints(cast_frames(model))[0]
    assert xmin <= -50 and xmax >= 50 and ymin <= -37.5 and ymax >= 37.5  # the whole frame
    assert xmax - xmin < 130 and ymax - ymin < 100  # and not much more
    # The old extent (the tie points' box grown by half its size) misses the water under the frame.
    low, high = corner[:, :2].min(axis=0), corner[:, :2].max(axis=0)
    pad = 0.5 * (high - low)
    assert (low - pad)[0] > -20 and (low - pad)[1] > -20


# The lens bundle adjustment fitted on 196 tie points of 6 of the first 8 Brighton photographs stretched from
# 4000x2250 to 1000x750 (fx, fy, cx, cy, k1, k2, p1, p2; the focal length held at the metadata's, the distortion
# absorbed the stretch): its tangential term folds the frame's left edge back inward, so that no ray of the lens
# model reaches the frame's left edge. The frames cast on the ground were NaN, no view reached
# any tile and the orthophoto was transparent in every pixel.
FOLDED_LENS = [555.6, 555.6, 500.0, 375.0, -0.0549, 0.00544, 0.00146, 0.0911]


def border_pixels(width: int, height: int, count: int = 50) -> np.ndarray:
    t = np.linspace(0.0, 1.0, count)
    return np.concatenate([np.c_[t * width, np.zeros(count)], np.c_[t * width, np.full(count, height)],
                           np.c_[np.zeros(count), t * height], np.c_[np.full(count, width), t * height]])


def folded_camera(camera_id: int = 1) -> pycolmap.Camera:
    camera = pycolmap.Camera.create_from_model_name(camera_id, "OPENCV", 555.6, 1000, 750)
    camera.params = FOLDED_LENS
    return camera


def test_a_lens_folded_at_the_frame_edge_still_casts_the_whole_frame() -> None:
    camera = folded_camera()
    border = border_pixels(1000, 750)
    rays = np.asarray(camera.cam_from_img(border))
    lost = np.isnan(rays).any(axis=1)
    assert lost.any() and (border[lost, 0] < 200).all()  # the fold: no ray leaves the left of the frame
    ground = np.array([[0.0, 0.0, 0.0], [10.0, 5.0, 0.0], [-8.0, 3.0, 0.1]])
    model = SparseModel([nadir_view("folded.jpg", 0.0, 0.0, 100.0, np.arange(3), camera)], np.arange(3), ground)
    box = footprints(cast_frames(model))[0]
    assert np.isfinite(box).all()
    # The box holds the ground of every ray the lens has at the border (100 m below; image y runs south)...
    xmin, ymin, xmax, ymax = box
    seen = 100.0 * rays[~lost, :2] * (1.0, -1.0)
    assert ((seen >= (xmin, ymin)) & (seen <= (xmax, ymax))).all()
    # ... and reaches past the fold to the left edge's distortion-free ray (500 px left of the centre: 90 m).
    assert xmin <= -90
    assert len(ground_outlines(model)) == 1


def test_a_folded_lens_is_a_quality_warning_naming_the_camera() -> None:
    model = pycolmap.Reconstruction()
    model.add_camera(pycolmap.Camera.create_from_model_name(1, "OPENCV", 555.6, 1000, 750))
    assert lens_coverage(model.cameras[1]) == 1.0
    model.add_camera(folded_camera(2))
    check = next(c for c in model_checks(model, 8, "") if c.name == "lens_frame")
    assert not check.passed and not check.fatal
    assert check.value == pytest.approx(0.67, abs=0.01)  # the left edge and the corners beside it
    assert "camera 2 (OPENCV:" in check.message and "p2 0.0911" in check.message


def test_a_frame_without_a_finite_outline_is_named_and_left_out(engine_log) -> None:
    """A view whose frame has no finite figure on the ground is asked everywhere, named in a warning and left out
    of the ground the photographs show: the orthophoto's guard measures the others."""
    ground = np.array([[0.0, 0.0, 0.0], [10.0, 5.0, 0.0], [-8.0, 3.0, 0.1]])
    good = nadir_view("good.jpg", 0.0, 0.0, 100.0, np.arange(3))
    lost = View("lost.jpg", good.camera, good.rotation, np.full(3, np.nan), np.arange(3))
    model = SparseModel([good, lost], np.arange(3), ground)
    with engine_log() as captured:
        frames = cast_frames(model)
        assert "lost.jpg" in captured.text and "good.jpg" not in captured.text
    assert footprints(frames)[1] == (-np.inf, -np.inf, np.inf, np.inf)
    rings = ground_outlines(model, frames)
    assert len(rings) == 1
    area = SurveyArea.of_ring(np.array([(-20, -20), (20, -20), (20, 20), (-20, 20)], float))
    coverage = measure_coverage(0.0, area, rings, 0.5)
    assert coverage.ground_m2 == pytest.approx(100 * 75, rel=0.02)  # the good view's frame, 100 m x 75 m
    with pytest.raises(EngineError, match="colours 0 m2"):
        check_coverage(coverage)
