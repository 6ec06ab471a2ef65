"""The align option: a model moved onto an earlier survey's surface (sfm/coregister.py, sfm/reference.py).

The registration against closed forms: points lifted off a known relief, moved and turned, are put back; the
reference read from a DEM in another CRS and from a LAZ cloud. The long test flies Brighton Beach's six photographs
again with every GPS fix 3 m off and aligns the run to the first one's DSM: the DSMs then agree within 5 cm and
the orthophotos within a ground pixel, where without it they are 3 m apart.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import laspy
import numpy as np
import pyproj
import pytest
import rasterio
from rasterio.transform import from_origin
from rasterio.warp import Resampling, reproject
from scipy.spatial.transform import Rotation

from aeromap_engine import pipeline
from aeromap_engine.geo import transform
from aeromap_engine.project import Project
from aeromap_engine.sfm.coregister import HeightGrid, register
from aeromap_engine.sfm.frame import WorldFrame
from aeromap_engine.sfm.reference import reference_grid
from conftest import ULTRA
from test_hard_surveys import set_fix
from test_sfm import exif_utm

FRAME = WorldFrame("EPSG:32632", (500_000.0, 5_000_000.0), "gps", [])
SHIFT_M = np.array([2.1, 2.1, 0.0])  # 3 m off, to the north-east


def relief(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Hills, a mound and a gentle slope: slopes that face every way."""
    return 5 * np.sin(x / 9) * np.cos(y / 13) + 3 * np.exp(-((x - 80) ** 2 + (y - 120) ** 2) / 50) + 0.02 * x


def relief_grid(cell: float = 0.5) -> HeightGrid:
    centres = np.arange(0, 200, cell) + cell / 2
    x, y = np.meshgrid(centres, 200 - centres)
    return HeightGrid(relief(x, y), 0.0, 200.0, cell)


def surface_points(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xy = rng.uniform(30, 170, (count, 2))
    return np.column_stack([xy, relief(xy[:, 0], xy[:, 1])])


def test_points_moved_and_turned_are_put_back_on_the_surface() -> None:
    truth = surface_points(4000)
    turn = Rotation.from_euler("xyz", [0.2, -0.1, 0.3], degrees=True).as_matrix()
    centre = truth.mean(axis=0)
    moved = (truth - centre) @ turn.T + centre + [2.1, -2.2, 0.8]
    moved[:, 2] += np.random.default_rng(1).normal(0, 0.05, len(moved))  # 5 cm of noise
    moved[:300, 2] += 4.0  # and what has changed since: a new stockpile
    found = register(moved, relief_grid())
    assert found is not None
    back = found.apply(moved)
    assert np.median(np.abs(back[300:, :2] - truth[300:, :2])) < 0.02
    assert abs(np.median(back[300:, 2] - truth[300:, 2])) < 0.02
    assert found.misfit_before_m > 0.5 and found.misfit_after_m < 0.06


def test_too_few_points_over_the_reference_leave_the_model_alone() -> None:
    far = surface_points(1000) + [1000.0, 0.0, 0.0]
    assert register(far, relief_grid()) is None


def test_a_dem_in_another_crs_and_a_cloud_give_the_same_heights(tmp_path: Path) -> None:
    """The relief written as a GeoTIFF in WGS84 and as a LAZ in UTM: both read back onto the model's frame."""
    points = surface_points(500)
    west, north = 500_000.0 - 20, 5_000_200.0 + 20
    cell = 0.25
    cols = rows = int(240 / cell)
    centres_x = west + (np.arange(cols) + 0.5) * cell - FRAME.offset[0]
    centres_y = north - (np.arange(rows) + 0.5) * cell - FRAME.offset[1]
    gx, gy = np.meshgrid(centres_x, centres_y)
    utm = tmp_path / "utm.tif"
    profile = {"driver": "GTiff", "width": cols, "height": rows, "count": 1, "dtype": "float32",
               "crs": FRAME.crs, "transform": from_origin(west, north, cell, cell), "nodata": -9999.0}
    with rasterio.open(utm, "w", **profile) as dem:
        dem.write(relief(gx, gy).astype(np.float32), 1)
    geographic = tmp_path / "align.tif"
    with rasterio.open(utm) as source:
        lon, lat = transform(FRAME.crs, "EPSG:4326", np.array([[west, north, 0.0]]))[0][:2]
        step = cell / 111_000.0
        wgs84 = {**profile, "crs": "EPSG:4326", "transform": from_origin(lon, lat, step * 1.45, step)}
        with rasterio.open(geographic, "w", **wgs84) as target:
            data = np.full((rows, cols), -9999.0, np.float32)
            reproject(rasterio.band(source, 1), data, dst_transform=wgs84["transform"], dst_crs="EPSG:4326",
                      dst_nodata=-9999.0, resampling=Resampling.bilinear)
            target.write(data, 1)
    cloud = tmp_path / "align.laz"
    header = laspy.LasHeader(point_format=6, version="1.4")
    header.scales, header.offsets = [0.001] * 3, [500_000.0, 5_000_000.0, 0.0]
    header.add_crs(pyproj.CRS(FRAME.crs))
    las = laspy.LasData(header)
    dense = np.random.default_rng(2).uniform(-10, 210, (400_000, 2))
    las.x, las.y = dense[:, 0] + FRAME.offset[0], dense[:, 1] + FRAME.offset[1]
    las.z = relief(dense[:, 0], dense[:, 1])
    las.write(cloud)
    for path, tolerance in ((geographic, 0.05), (cloud, 0.15)):
        grid = reference_grid(path, FRAME, points)
        heights, _ = grid.sample(points[:, :2])
        assert np.isfinite(heights).mean() > 0.95, path.name
        assert np.nanmedian(np.abs(heights - points[:, 2])) < tolerance, path.name


def phase_shift_px(first: Path, second: Path) -> tuple[float, float]:
    """How far the second orthophoto's picture lies from the first's, in the first's pixels (east, south)."""
    with rasterio.open(first) as a, rasterio.open(second) as b:
        grey_a = a.read([1, 2, 3]).mean(axis=0).astype(np.float32)
        on_a = np.zeros((3, a.height, a.width), np.float32)
        reproject(b.read([1, 2, 3]).astype(np.float32), on_a, src_transform=b.transform, src_crs=b.crs,
                  dst_transform=a.transform, dst_crs=a.crs, resampling=Resampling.bilinear)
        alpha = (a.read(4) > 0) & (on_a.mean(axis=0) > 0)
    rows, cols = np.nonzero(alpha)
    box = (slice(rows.min() + 50, rows.max() - 50), slice(cols.min() + 50, cols.max() - 50))
    window = cv2.createHanningWindow(grey_a[box].shape[::-1], cv2.CV_32F)
    # Contiguous copies: OpenCV's phase correlation misreads a view's strided rows.
    (dx, dy), _ = cv2.phaseCorrelate(grey_a[box].copy(), on_a.mean(axis=0)[box].copy(), window)
    return dx, dy


@pytest.mark.long
def test_a_repeat_survey_with_its_gps_3_m_off_lines_up_with_the_first(products: Project, tmp_path: Path,
                                                                          engine_log) -> None:
    project = Project(tmp_path / "again")
    project.images_dir.mkdir(parents=True)
    fixes = exif_utm([path.name for path in sorted(products.images_dir.iterdir())])
    for name, fix in fixes.items():
        shutil.copy(products.images_dir / name, project.images_dir / name)
        set_fix(project.images_dir / name, fix + SHIFT_M)
    shutil.copy(products.dem("dsm"), project.root / "align.tif")
    with engine_log() as captured:
        pipeline.run(project, ULTRA + [{"name": name, "value": True} for name in ("skip-3dmodel", "dsm")])
    alignment = json.loads(project.stats_file.read_text())["reconstruction"]["alignment"]
    assert alignment["applied"], captured.text
    moved = np.hypot(*alignment["shift_m"][:2])

    with rasterio.open(products.dem("dsm")) as first:
        before = first.read(1, masked=True).filled(np.nan)
        after = np.full(before.shape, np.nan, np.float32)
        with rasterio.open(project.dem("dsm")) as second:
            reproject(rasterio.band(second, 1), after, dst_transform=first.transform, dst_crs=first.crs,
                      dst_nodata=np.nan, resampling=Resampling.bilinear)
        pixel = first.res[0]
    difference = after - before
    median = float(np.nanmedian(difference))
    dx, dy = phase_shift_px(products.orthophoto(), project.orthophoto())
    with rasterio.open(products.orthophoto()) as ortho:
        gsd_px = json.loads(products.stats_file.read_text())["reconstruction"]["gsd_cm"] / 100 / ortho.res[0]
    print(f"\n[align] moved {moved:.2f} m horizontally; DSM difference median {median * 100:+.1f} cm "
          f"({pixel:.3f} m cells); orthophotos {np.hypot(dx, dy):.2f} px apart (1 GSD = {gsd_px:.2f} px)")
    assert abs(moved - 3.0) < 0.5  # what the fixes' error put between the two runs
    assert abs(median) < 0.05
    assert np.hypot(dx, dy) < gsd_px
