"""Point classes on clouds made point by point with known classes: terrain with relief, a flat-roofed and two
pitched-roofed buildings (one with eaves a metre above the ground), crowns of trees, a car; and the classes
carried through the tiled cloud and written into LAS."""

from __future__ import annotations

from pathlib import Path

import laspy
import numpy as np

from aeromap_engine.cloud.classes import (BUILDING, GROUND, HIGH_VEGETATION, LOW_VEGETATION, MEDIUM_VEGETATION,
                                          UNCLASSIFIED, classify, greenness, roughness)
from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.cloud.tiled import TiledCloud, Tiling, tile_sorted
from aeromap_engine.dem.smrf import SmrfSettings
from aeromap_engine.io.pointcloud import write_las

SIDE, SPACING = 80.0, 0.2
GRASS, ROOF_TILES, SLATE, LEAVES, CAR = (90, 120, 60), (150, 80, 70), (120, 120, 125), (60, 110, 50), (200, 200, 210)
# (west, south, width, depth, height at the ridge, pitched)
BUILDINGS = [(10, 10, 12, 8, 6, False), (40, 15, 10, 10, 4, True), (15, 50, 20, 8, 9, True)]
TREES = [(60, 60, 3.0, 8), (65, 30, 4.0, 10), (30, 35, 2.5, 6), (70, 70, 2.0, 4), (26, 20, 3.0, 7)]  # x, y, r, h


def scene(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points (x, y, z), colours and true classes (ground, building, high vegetation, unclassified for the car)."""
    rng = np.random.default_rng(seed)
    axis = (np.arange(int(SIDE / SPACING)) + 0.5) * SPACING
    x, y = (a.ravel() for a in np.meshgrid(axis, axis))
    ground = 100 + 0.05 * x + 0.02 * y + 0.5 * np.sin(x / 15)
    z, truth = ground.copy(), np.full(len(x), GROUND, np.uint8)
    rgb = np.tile(GRASS, (len(x), 1)).astype(float)
    for west, south, width, depth, height, pitched in BUILDINGS:
        on = (x >= west) & (x < west + width) & (y >= south) & (y < south + depth)
        drop = 0.6 * np.abs(y[on] - (south + depth / 2)) if pitched else 0.0  # 0.6: a roof of 31 degrees
        z[on] = ground[on].max() + height - drop
        truth[on], rgb[on] = BUILDING, ROOF_TILES if pitched else SLATE
    for tx, ty, radius, height in TREES:
        distance = np.hypot(x - tx, y - ty)
        on = distance < radius
        crown = ground[on] + height - 0.75 * radius * (distance[on] / radius) ** 2 + rng.normal(0, 0.25, on.sum())
        z[on] = np.maximum(z[on], crown)
        truth[on], rgb[on] = HIGH_VEGETATION, LEAVES + rng.normal(0, 15, (on.sum(), 3))
    car = (x >= 50) & (x < 54.5) & (y >= 45) & (y < 47)
    z[car] += 1.5
    truth[car], rgb[car] = UNCLASSIFIED, CAR
    z += rng.normal(0, 0.03, len(z))
    return np.c_[x, y, z].astype(np.float32), np.clip(rgb, 0, 255).astype(np.uint8), truth


def precision_recall(found: np.ndarray, truth: np.ndarray, codes: tuple[int, ...]) -> tuple[float, float]:
    said, true = np.isin(found, codes), np.isin(truth, codes)
    return (said & true).sum() / said.sum(), (said & true).sum() / true.sum()


def test_buildings_vegetation_and_ground_are_told_apart() -> None:
    xyz, rgb, truth = scene()
    found = classify(xyz, rgb, (0.0, 0.0, SIDE, SIDE), SmrfSettings())
    for codes in ((GROUND,), (BUILDING,), (LOW_VEGETATION, MEDIUM_VEGETATION, HIGH_VEGETATION)):
        assert min(precision_recall(found, truth, codes)) >= 0.97, codes
    # Low eaves are part of their roof; the car is no building and no foliage.
    assert np.all(found[truth == UNCLASSIFIED] == UNCLASSIFIED)


def test_grey_lumps_are_vegetation_and_green_slabs_no_building() -> None:
    """A leafless crown (grey, lumpy) is vegetation by its shape; a green flat slab (a clipped hedge) is no roof."""
    xyz, rgb, truth = scene(1)
    crowns = truth == HIGH_VEGETATION
    rgb[crowns] = SLATE
    rgb[truth == BUILDING] = LEAVES
    found = classify(xyz, rgb, (0.0, 0.0, SIDE, SIDE), SmrfSettings())
    assert np.isin(found[crowns], (MEDIUM_VEGETATION, HIGH_VEGETATION)).mean() > 0.9
    assert not np.any(found == BUILDING)


def test_roughness_is_flat_on_planes_and_high_on_ridges_and_lumps() -> None:
    rows, cols = np.mgrid[0:20, 0:20].astype(float)
    assert np.allclose(roughness(0.3 * rows - 0.7 * cols + 5), 0, atol=1e-6)
    ridge = -0.3 * np.abs(cols - 10)  # a 31 degree roof on 0.5 m cells
    assert roughness(ridge)[5, 10] > 0.1 and np.allclose(roughness(ridge)[:, 12:18], 0, atol=1e-6)
    lumps = np.random.default_rng(0).normal(0, 0.25, (20, 20))
    assert np.median(roughness(lumps)) > 0.15


def test_greenness_of_greys_shadows_and_leaves() -> None:
    shadow, dark_leaves = (25, 35, 35), (20, 40, 25)
    values = greenness(np.array([SLATE, LEAVES, GRASS, shadow, dark_leaves, (5, 9, 6)], np.uint8))
    assert values[0] < 0.01 and values[3] <= 0 and values[5] == 0
    assert values[1] > 0.1 and values[2] > 0.1 and values[4] > 0.1


def test_classes_travel_through_a_tiled_cloud_into_las(tmp_path: Path) -> None:
    xyz, rgb, truth = scene()
    cloud = PointCloud(xyz, rgb, np.ones(len(xyz), np.uint8), truth)
    tiled = tile_sorted([cloud], Tiling(0.0, 0.0, 25.0), tmp_path / "tiled.ply", tmp_path)
    assert tiled.classified and TiledCloud.open(tmp_path / "tiled.ply").classified
    parts = list(tiled.parts((500_000.0, 5_000_000.0)))
    assert sorted(np.concatenate([p.classes for p in parts]).tolist()) == sorted(truth.tolist())
    write_las(tmp_path / "c.laz", parts, np.array([500_000.0, 5_000_000.0, 0.0]), "EPSG:32633", compress=True)
    written = laspy.read(tmp_path / "c.laz")
    back = dict(zip(zip(np.round(written.x - 500_000, 1), np.round(written.y - 5_000_000, 1)),
                    np.asarray(written.classification)))
    assert all(back[(round(float(px), 1), round(float(py), 1))] == t for (px, py, _), t in zip(xyz[::97], truth[::97]))
