"""The geometry behind the map products, on synthetic scenes whose answer is known exactly."""

from __future__ import annotations

import cv2
import numpy as np
import pycolmap
import pytest
from scipy.spatial import cKDTree

from aeromap_engine.cloud.boundary import Boundary
from aeromap_engine.cloud.filters import thin
from aeromap_engine.dem.grid import Grid, Window, bin_points
from aeromap_engine.dem.smrf import SmrfSettings, is_ground, terrain
from aeromap_engine.dem.surface import fill_all, grow
from aeromap_engine.dense.camera import working_pinhole
from aeromap_engine.dense.rectify import RectifiedPair, UnmatchablePair, rectify_pair
from aeromap_engine.dense.stereo import SgbmSettings, depth_range, match, matching_plan, rectified_images
from aeromap_engine.dense.pairs import shared_counts
from aeromap_engine.dense.views import SparseModel, View
from aeromap_engine.stages.odm_orthophoto import TILE, serpentine
from aeromap_engine.crs_offset import Georef


def _view(name: str, center: np.ndarray, yaw: float, tilt: float) -> View:
    """A 1000x750 pinhole camera looking down (tilted about x, turned about the vertical)."""
    camera = pycolmap.Camera.create_from_model_id(1, pycolmap.CameraModelId.PINHOLE, 800.0, 1000, 750)
    down = np.diag([1.0, -1.0, -1.0])  # camera z towards the ground
    c, s = np.cos(yaw), np.sin(yaw)
    turn = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    ct, st = np.cos(tilt), np.sin(tilt)
    lean = np.array([[1, 0, 0], [0, ct, -st], [0, st, ct]])
    rotation = lean @ down @ turn.T
    return View(name, camera, rotation, -rotation @ center, np.array([], dtype=np.int64))


def _rectified_x(view: View, pinhole, h: np.ndarray, world: np.ndarray) -> np.ndarray:
    """Rectified pixel coordinates (N, 2) of world points seen by a view through its rectifying homography."""
    cam = view.to_camera(world)
    pixel = cam[:, :2] / cam[:, 2:] @ np.diag(pinhole.K[[0, 1], [0, 1]]) + pinhole.K[:2, 2]
    mapped = np.c_[pixel, np.ones(len(pixel))] @ h.T
    return mapped[:, :2] / mapped[:, 2:]


@pytest.mark.parametrize("yaw", [0.0, 0.7, 2.0])
def test_rectified_pairs_put_matches_on_one_row(yaw: float) -> None:
    ref = _view("a", np.array([0.0, 0.0, 40.0]), yaw, 0.05)
    other = _view("b", np.array([9.0, 6.0, 41.0]), yaw + 0.1, -0.03)  # baseline at an angle to the image axes
    pin_ref, pin_other = working_pinhole(ref.camera, 0.5), working_pinhole(other.camera, 0.5)
    pair = rectify_pair(ref, pin_ref, other, pin_other)
    world = np.random.default_rng(0).uniform([-5, -5, 0], [10, 8, 12], (200, 3))
    rect = [_rectified_x(ref, pin_ref, pair.h_ref, world), _rectified_x(other, pin_other, pair.h_other, world)]
    assert np.allclose(rect[0][:, 1], rect[1][:, 1], atol=1e-6)  # same row in both
    disparity = rect[0][:, 0] - rect[1][:, 0]
    assert np.allclose(disparity, pair.disparity(ref.center, world), atol=1e-6)
    assert disparity.min() > 0  # the partner always sits to the right
    moved = pair.partner_moved(37)
    moved_x = _rectified_x(other, pin_other, moved.h_other, world)[:, 0]
    assert np.allclose(rect[0][:, 0] - moved_x, disparity - 37, atol=1e-6)
    assert np.allclose(moved.disparity(ref.center, world), disparity - 37, atol=1e-6)


def test_coincident_cameras_are_unmatchable() -> None:
    ref = _view("a", np.array([0.0, 0.0, 40.0]), 0.0, 0.0)
    pinhole = working_pinhole(ref.camera, 0.5)
    with pytest.raises(UnmatchablePair, match="no baseline"):
        rectify_pair(ref, pinhole, ref, pinhole)


def _shifted_texture(width: int, height: int, disparity: int) -> tuple[np.ndarray, np.ndarray]:
    """A rectified reference image of random texture and its partner, which sees every pixel `disparity` px to
    the left (a plane parallel to the baseline)."""
    rng = np.random.default_rng(1)
    ref = cv2.GaussianBlur(rng.integers(0, 256, (height, width), dtype=np.uint8), (3, 3), 0)
    other = cv2.GaussianBlur(rng.integers(0, 256, (height, width), dtype=np.uint8), (3, 3), 0)
    other[:, : width - disparity] = ref[:, disparity:]
    return ref, other


def _identity_pair(width: int, height: int) -> RectifiedPair:
    """A pair whose images are already rectified."""
    return RectifiedPair(rotation=np.eye(3), focal=100.0, cx_ref=0.0, cx_other=0.0, cy=0.0, width=width,
                         height=height, baseline=1.0, h_ref=np.eye(3), h_other=np.eye(3))


def test_a_search_far_from_zero_is_matched_on_the_moved_partner() -> None:
    """Sparse disparities of 120 to 240 px on a 255 px canvas (a long baseline over uneven ground, as in the
    18-photograph Brighton survey at its lowest quality): searched where they lie, from 91 px over 192 px, no
    column could be matched and OpenCV failed to allocate a negative size. On the partner moved 91 px right the
    search starts at 0 and the 63 columns it leaves find the true 150 px."""
    width, height, truth = 255, 60, 150
    ref, other = _shifted_texture(width, height, truth)
    pair = _identity_pair(width, height)
    sparse = np.linspace(120.0, 240.0, 50)
    settings = SgbmSettings()
    moved, search = matching_plan(pair, sparse, settings)
    disparity = match(*rectified_images(moved, ref, other), search, settings)
    assert search.minimum == 0 and search.count == 192 and moved.cx_other == 91
    found = disparity[np.isfinite(disparity)] + moved.cx_other - moved.cx_ref
    assert found.size > 0.5 * height * (width - search.count)
    assert np.median(np.abs(found - truth)) < 0.5


def test_disparities_wider_than_the_canvas_are_unmatchable() -> None:
    pair, settings = _identity_pair(255, 60), SgbmSettings()
    with pytest.raises(UnmatchablePair, match="search spans 432 px, which leaves 0 of its 255 rectified columns"):
        matching_plan(pair, np.linspace(10.0, 300.0, 50), settings)
    with pytest.raises(UnmatchablePair, match="only 3 sparse points"):
        matching_plan(pair, np.array([20.0, 30.0, 40.0, np.nan]), settings)


def test_dense_depths_stay_near_the_sparse_points_the_view_sees() -> None:
    settings = SgbmSettings()
    # A view of ground 40 to 60 m away and a few sparse points on haze kilometres off.
    sparse = np.r_[np.linspace(40.0, 60.0, 500), [5000.0, 9000.0], [np.nan, -3.0]]
    nearest, farthest = depth_range(sparse, settings)
    assert nearest == pytest.approx(40.2 / settings.depth_factor, rel=0.01)
    assert farthest == pytest.approx(59.8 * settings.depth_factor, rel=0.01)
    assert depth_range(np.array([10.0, 20.0, np.nan]), settings) == (0.0, float("inf"))


def test_smrf_separates_a_building_from_sloping_ground() -> None:
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 60, (60_000, 2))
    ground = 100 + 0.05 * xy[:, 0] + rng.normal(0, 0.03, len(xy))
    on_roof = (np.abs(xy[:, 0] - 30) < 6) & (np.abs(xy[:, 1] - 30) < 6)
    z = np.where(on_roof, ground + 6.0, ground)
    xyz = np.c_[xy, z]
    settings = SmrfSettings()
    ground_found = is_ground(xyz, terrain(xyz, (0, 0, 60, 60), settings), settings)
    assert not ground_found[on_roof].any()
    assert ground_found[~on_roof].mean() > 0.99


def test_gaps_are_filled_smoothly_within_the_data_range() -> None:
    grid = Grid(0, 50, 1.0, 50, 50)
    x, y = np.meshgrid(np.arange(50) + 0.5, 50 - np.arange(50) - 0.5)
    xyz = np.c_[x.ravel(), y.ravel(), 2 * x.ravel()]
    values = bin_points(grid, xyz, "mean")
    values[10:40, 10:40] = np.nan
    filled = fill_all(values)
    hole = filled[10:40, 10:40]
    assert np.isfinite(filled).all() and hole.min() > 19 - 5 and hole.max() < 81 + 5  # the edges' range, +-5 %
    assert np.all(np.diff(hole[15]) > 0)  # still rising across the gap, no steps back


@pytest.mark.parametrize("statistic", ["max", "mean"])
def test_growing_takes_heights_only_from_cells_that_have_them(statistic: str) -> None:
    """Empty cells at the raster's edge see beyond it: nothing there may pass for a height."""
    values = np.full((6, 6), np.nan, np.float32)
    values[0, 0], values[5, 5] = 3.0, 5.0
    grown = grow(values, 2, statistic)
    assert np.nanmin(grown) == 3.0 and np.nanmax(grown) == 5.0
    assert np.isfinite(grown[2, 2]) and np.isnan(grown[0, 5])


def test_boundary_shrinks_and_contains() -> None:
    square = Boundary.around(np.array([[0, 0], [10, 0], [10, 10], [0, 10], [5, 5]], dtype=float))
    inner = square.shrunk(1.0)
    assert inner.area == pytest.approx(64.0)
    assert list(inner.contains(np.array([[1.5, 1.5], [0.5, 5.0]]))) == [True, False]
    assert square.shrunk(6.0) is None
    assert square.grown(1.0).area == pytest.approx(100 + 40 + np.pi, rel=0.01)


def test_thinning_keeps_points_at_least_a_radius_apart_and_covers_the_rest() -> None:
    xyz = np.random.default_rng(2).uniform(0, 5, (20_000, 3))
    kept = thin(xyz, 0.4)
    spacing = cKDTree(xyz[kept]).query(xyz[kept], k=2)[0][:, 1]
    assert spacing.min() >= 0.4
    assert cKDTree(xyz[kept]).query(xyz)[0].max() < 0.4 * 1.01  # every dropped point has a kept neighbour


def test_wgs84_bounds_enclose_the_area_and_are_none_in_a_local_frame() -> None:
    # A 100 m square whose south-west corner is easting 500000 (the central meridian of UTM 31N, 3 E) on the equator.
    georef = Georef("EPSG:32631", (499000.0, 0.0), "gps")
    west, south, east, north = georef.wgs84_bounds((1000.0, 0.0, 1100.0, 100.0))
    assert west == pytest.approx(3.0, abs=1e-6) and south == pytest.approx(0.0, abs=1e-6)
    # 100 m is about 0.000898 degrees of longitude and 0.000904 of latitude at the equator.
    assert east - west == pytest.approx(0.000898, abs=2e-6) and north - south == pytest.approx(0.000904, abs=2e-6)
    assert Georef(None, (0.0, 0.0), "none").wgs84_bounds((0.0, 0.0, 1.0, 1.0)) is None



def test_shared_point_counts_match_pairwise_intersections() -> None:
    rng = np.random.default_rng(3)
    point_ids = np.sort(rng.choice(10_000, 2_000, replace=False))
    views = [View(f"{i}", None, np.eye(3), np.zeros(3), np.sort(rng.choice(point_ids, rng.integers(0, 400),
                                                                           replace=False)))
             for i in range(30)]
    counts = shared_counts(SparseModel(views, point_ids, np.zeros((len(point_ids), 3)))).toarray()
    for i, a in enumerate(views):
        for j, b in enumerate(views):
            assert counts[i, j] == len(np.intersect1d(a.point_ids, b.point_ids))


def test_orthophoto_tiles_turn_back_at_the_end_of_each_row() -> None:
    rng = np.random.default_rng(2)
    # Tiles cut down to the area start inside their tile's square, not on its corner.
    tiles = [(Window(r * TILE + int(rng.integers(0, 50)), c * TILE + int(rng.integers(0, 50)), 900, 900),) * 2
             for r in range(3) for c in range(4)]
    order = [(t[0].row // TILE, t[0].col // TILE) for t in serpentine(list(reversed(tiles)))]
    assert order == [(0, c) for c in range(4)] + [(1, c) for c in reversed(range(4))] + [(2, c) for c in range(4)]
