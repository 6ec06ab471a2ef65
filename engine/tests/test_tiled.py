"""Tiled clouds (cloud/tiled.py) and what reads them a tile at a time: the outlier filter with margins, the
surveyed area counted chunk by chunk, the elevation models' binning. Each streamed result is compared with the
same computation on the whole cloud in memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aeromap_engine.cloud import tiled as tiled_module
from aeromap_engine.cloud.area_tracing import AreaSettings, Occupancy, area_of_points, surveyed_area
from aeromap_engine.cloud.filters import statistical_inliers
from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.cloud.tiled import TiledCloud, Tiling, tile_sorted
from aeromap_engine.dem.grid import CellStatistic, Grid, bin_points
from aeromap_engine.io.ply import read_ply
from aeromap_engine.options import Options
from aeromap_engine.stages.odm_filterpoints import MARGIN_SPACINGS, filtered_tile


def terrain(n: int, seed: int = 0, outliers: int = 0) -> PointCloud:
    """A rolling 300 x 200 m surface, denser in a band (overlap), with points floating far above it."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(0, 300, n), rng.uniform(100, 140, n // 2)])
    y = rng.uniform(0, 200, len(x))
    z = 50 + 2 * np.sin(x / 15) + np.cos(y / 20) + rng.normal(0, 0.02, len(x))
    xyz = np.c_[x, y, z]
    if outliers:
        xyz = np.concatenate([xyz, np.c_[rng.uniform(0, 300, outliers), rng.uniform(0, 200, outliers),
                                         rng.uniform(70, 90, outliers)]])
    order = rng.permutation(len(xyz))  # as fused depth maps come: in no spatial order
    return PointCloud(xyz[order].astype(np.float32), rng.integers(0, 256, (len(xyz), 3)).astype(np.uint8),
                      rng.integers(2, 9, len(xyz)).astype(np.uint8))


def chunks(cloud: PointCloud, size: int) -> list[PointCloud]:
    return [cloud.subset(slice(start, start + size)) for start in range(0, len(cloud), size)]


@pytest.fixture()
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiled_module, "TILE_POINTS", 15_000)


def table(cloud: PointCloud) -> np.ndarray:
    rows = np.c_[cloud.xyz.astype(np.float64), cloud.rgb, cloud.views]
    return rows[np.lexsort(rows.T[::-1])]


def test_a_tiled_cloud_holds_every_point_once_grouped_by_tile(tmp_path: Path, small_tiles: None) -> None:
    cloud = terrain(120_000)
    tiling = Tiling.fitting(chunks(cloud, 25_000))
    result = tile_sorted(chunks(cloud, 25_000), tiling, tmp_path / "cloud.ply", tmp_path)
    assert len(result.tiles) > 4
    # Tiles are sized for the densest part (the band): none holds much more than asked.
    assert max(t.count for t in result.tiles) < 1.5 * 15_000
    # Any PLY reader sees the same points, and the tiles hold them all, each inside its tile.
    assert np.array_equal(table(read_ply(tmp_path / "cloud.ply")), table(cloud))
    for tile in result.tiles:
        xmin, ymin, xmax, ymax = result.bounds(tile)
        xyz = result.read(tile).xyz
        assert len(xyz) == tile.count
        assert (xyz[:, 0] >= xmin).all() and (xyz[:, 0] < xmax).all()
        assert (xyz[:, 1] >= ymin).all() and (xyz[:, 1] < ymax).all()
    assert np.allclose(result.box[0], cloud.xyz.min(axis=0)) and np.allclose(result.box[1], cloud.xyz.max(axis=0))
    reopened = TiledCloud.open(tmp_path / "cloud.ply")
    assert len(reopened) == len(cloud) and reopened.tiling == tiling


def test_near_answers_exactly_the_points_inside_across_tiles(tmp_path: Path, small_tiles: None) -> None:
    cloud = terrain(120_000, seed=1)
    result = tile_sorted([cloud], Tiling.fitting([cloud]), tmp_path / "cloud.ply", tmp_path)
    x, y = cloud.xyz[:, 0], cloud.xyz[:, 1]
    for bounds in [(10.5, 20.25, 180.0, 150.0), (101.0, 3.0, 102.0, 4.0), (-50.0, -50.0, 400.0, 300.0),
                   (500.0, 500.0, 600.0, 600.0)]:
        inside = (x >= bounds[0]) & (x < bounds[2]) & (y >= bounds[1]) & (y < bounds[3])
        assert np.array_equal(table(result.near(bounds)), table(cloud.subset(inside)))
    # The margin of a tile: its own points flagged, its neighbours' within the margin added.
    tile = result.tiles[len(result.tiles) // 2]
    points, own = result.with_margin(tile, 2.0)
    assert own.sum() == tile.count and len(points) > tile.count


def test_a_sample_is_spread_over_the_whole_cloud(tmp_path: Path, small_tiles: None) -> None:
    cloud = terrain(120_000, seed=2)
    result = tile_sorted([cloud], Tiling.fitting([cloud]), tmp_path / "cloud.ply", tmp_path)
    sample = result.sample(6_000)
    assert abs(len(sample) - 6_000) < 100
    # The dense band holds a third of the points; so does the sample.
    band = (sample[:, 0] >= 100) & (sample[:, 0] < 140)
    expected = ((cloud.xyz[:, 0] >= 100) & (cloud.xyz[:, 0] < 140)).mean()
    assert abs(band.mean() - expected) < 0.03


def test_the_outlier_filter_tile_by_tile_agrees_with_the_whole_cloud(tmp_path: Path, small_tiles: None) -> None:
    cloud = terrain(100_000, seed=3, outliers=300)
    whole = statistical_inliers(cloud.xyz, 5.0)
    result = tile_sorted([cloud], Tiling.fitting([cloud]), tmp_path / "cloud.ply", tmp_path)
    options = Options({"pc-filter": 5.0, "pc-sample": 0.0, "max-concurrency": 1})
    spacing = np.sqrt(300 * 200 / len(cloud))
    counts: dict[str, int] = {}
    kept = PointCloud.concatenate([
        filtered_tile(*result.with_margin(tile, MARGIN_SPACINGS * spacing), None, options, counts)
        for tile in result.tiles])
    assert len(result.tiles) > 4
    floating = kept.xyz[:, 2] > 60
    assert not floating.any()  # every point far above the surface is gone, at tile borders too
    assert counts["after_outlier_filter"] == len(kept)
    assert abs(len(kept) - whole.sum()) < 0.002 * len(cloud)


def test_the_area_counted_chunk_by_chunk_is_the_area_of_the_whole(tmp_path: Path) -> None:
    cloud = terrain(60_000, seed=4)
    xy = cloud.xyz[:, :2].astype(np.float64)
    settings = AreaSettings(cell=1.0, closing=5.0, max_hole=500.0, min_part=80.0, crop=2.0)
    occupancy = Occupancy((*xy.min(axis=0), *xy.max(axis=0)), settings.cell, settings.closing)
    for part in chunks(cloud, 7_000):
        occupancy.add(part.xyz[:, :2].astype(np.float64))
    streamed, whole = surveyed_area(occupancy, settings), area_of_points(xy, settings)
    assert streamed is not None and streamed.area == pytest.approx(whole.area, rel=1e-9)
    assert streamed.area == pytest.approx(300 * 200, rel=0.03)  # the surface's, within about a cell


@pytest.mark.parametrize("statistic", ["max", "min", "mean"])
def test_binning_part_by_part_equals_binning_at_once(statistic: str) -> None:
    cloud = terrain(50_000, seed=5)
    grid = Grid.covering((0.0, 0.0, 300.0, 200.0), 2.0)
    binned = CellStatistic(grid, statistic)
    for part in chunks(cloud, 6_000):
        binned.add(part.xyz)
    assert np.allclose(binned.values(), bin_points(grid, cloud.xyz, statistic), equal_nan=True, atol=1e-5)
