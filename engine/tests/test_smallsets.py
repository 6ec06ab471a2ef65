"""Small sets: the first 8 Brighton Beach photographs at 1000 px (6 of them placed), whose few hundred tie
points span a fraction of what the photographs show. fast-orthophoto and default options must each write an
orthophoto over the photographs' ground; the area and the orthophoto's guard are checked on synthetic data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pycolmap
import pytest
import rasterio
from PIL import Image

from aeromap_engine import pipeline
from aeromap_engine.cloud.area import SurveyArea, rings_mask
from aeromap_engine.cloud.area_tracing import AreaSettings, GroundFrames, Occupancy, surveyed_area
from aeromap_engine.crs_offset import Georef
from aeromap_engine.dem.grid import Grid
from aeromap_engine.dense.views import sparse_model
from aeromap_engine.errors import EngineError
from aeromap_engine.io.exif import captured_stretch
from aeromap_engine.ortho.coverage import Coverage, check_coverage, measure_coverage
from aeromap_engine.ortho.footprint import ground_outlines
from aeromap_engine.project import Project
from aeromap_engine.stages.odm_filterpoints import cropped_area
from conftest import clone

# The datasets sit beside the checkout, which may be a worktree nested a level deeper.
DATASET = next(folder / "shared" / "datasets" / "brighton_beach" / "images" for folder in Path(__file__).resolve().parents
               if (folder / "shared" / "datasets").is_dir())
FIRST = 8


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("smallset")
    (root / "images").mkdir()
    for path in sorted(DATASET.glob("*.JPG"))[:FIRST]:
        with Image.open(path) as image:
            small = image.resize((image.width // 4, image.height // 4), Image.Resampling.LANCZOS)
            small.save(root / "images" / path.name, quality=92, exif=image.info["exif"], xmp=image.info.get("xmp"))
    project = Project(root)
    pipeline.run(project, [{"name": "end-with", "value": "opensfm"}])
    return project


def finished(sparse: Project, target: Path, **values: object) -> Project:
    project = clone(sparse, target)
    pipeline.run(project, [{"name": "skip-3dmodel", "value": True}]
                 + [{"name": name.replace("_", "-"), "value": value} for name, value in values.items()])
    return project


def ground_counts(project: Project) -> tuple[np.ndarray, np.ndarray]:
    """On the orthophoto's grid: its alpha (bool) and, per pixel, how many placed photographs' frames show it."""
    rings = ground_outlines(sparse_model(pycolmap.Reconstruction(str(project.reconstruction_dir))))
    offset = np.asarray(Georef.load(project).offset)
    with rasterio.open(project.path("odm_orthophoto", "odm_orthophoto.tif")) as dataset:
        alpha = dataset.read(4) > 0
        t = dataset.transform
    grid = Grid(t.c - offset[0], t.f - offset[1], t.a, alpha.shape[1], alpha.shape[0])
    return alpha, sum(rings_mask([ring], grid).astype(np.int32) for ring in rings)


def stats(project: Project) -> dict:
    return json.loads(project.stats_file.read_text())


def test_fast_orthophoto_covers_the_ground_the_photographs_show(sparse: Project, tmp_path: Path) -> None:
    project = finished(sparse, tmp_path / "fast", fast_orthophoto=True)
    alpha, shown = ground_counts(project)
    ground = shown > 0
    # The tie points' own area, cropped by 3 m, left nothing: the run failed. Now 88 % (the 3 m crop takes the rest).
    assert np.count_nonzero(alpha & ground) > 0.8 * np.count_nonzero(ground)
    figures = stats(project)
    assert figures["orthophoto"]["ground_share"] > 0.8
    assert "area_m2" not in figures["orthophoto"]  # the survey's area is one figure, the point cloud's
    assert figures["processing_statistics"]["area"] == figures["point_cloud"]["area_m2"]


@pytest.mark.long
def test_default_options_cover_the_ground_two_photographs_show(sparse: Project, tmp_path: Path) -> None:
    """Dense matching needs two views: the ground a single photograph shows is no part of the dense cloud."""
    project = finished(sparse, tmp_path / "default")
    alpha, shown = ground_counts(project)
    stereo = shown >= 2
    assert np.count_nonzero(alpha & stereo) > 0.6 * np.count_nonzero(stereo)
    assert stats(project)["orthophoto"]["ground_share"] > 0.3


# --- the area of a few tie points ---------------------------------------------------------------------------------

def few_points() -> np.ndarray:
    """Twelve tie points in a 6 x 4 m patch, under two photographs that each show 40 x 22 m."""
    rng = np.random.default_rng(3)
    return rng.uniform((0, 0), (6, 4), size=(12, 2))


def frames() -> GroundFrames:
    rings = tuple(np.array([(x - 20, -9), (x + 20, -9), (x + 20, 13), (x - 20, 13)], float) for x in (-5.0, 10.0))
    return GroundFrames(rings, cell=0.5)


def occupancy(xy: np.ndarray, bounds: tuple[float, float, float, float], settings: AreaSettings) -> Occupancy:
    counted = Occupancy(bounds, settings.cell, settings.closing)
    counted.add(xy)
    return counted


SETTINGS = AreaSettings(cell=2.0, closing=11.0, max_hole=3500.0, min_part=np.pi * 11.0**2, crop=3.0)


def test_a_few_tie_points_and_the_frames_give_the_photographs_ground() -> None:
    xy = few_points()
    alone = surveyed_area(occupancy(xy, (*xy.min(axis=0), *xy.max(axis=0)), SETTINGS), SETTINGS)
    assert alone is None  # the old area: the points' patch, smaller than the closing disk, dropped or cropped away
    ground = frames()
    area = surveyed_area(occupancy(xy, ground.bounds, SETTINGS), SETTINGS, ground)
    assert area is not None
    # The frames' union (55 x 22 m) shrunk by 3 m: 49 x 16 m.
    assert area.area == pytest.approx(49 * 16, rel=0.1)
    assert area.contains(xy).all()
    xmin, ymin, xmax, ymax = area.bounds
    assert (xmin, ymin, xmax, ymax) == pytest.approx((-22, -6, 27, 10), abs=1.0)  # within 2 cells


def test_a_crop_that_would_leave_nothing_is_not_made(engine_log) -> None:
    xy = np.random.default_rng(5).uniform((0, 0), (30, 30), size=(400, 2))
    deep = AreaSettings(cell=1.0, closing=2.0, max_hole=100.0, min_part=10.0, crop=40.0)
    with engine_log() as captured:
        area = cropped_area(occupancy(xy, (0, 0, 30, 30), deep), deep, None, None)
        assert "would leave nothing" in captured.text
    assert area.area > 900 and area.contains(xy).all()


# --- the orthophoto's guard --------------------------------------------------------------------------------------

SQUARE = np.array([(0, 0), (100, 0), (100, 100), (0, 100)], float)


def test_an_empty_orthophoto_is_refused_with_its_cause() -> None:
    area = SurveyArea.of_ring(SQUARE * 0.5 + 25)  # 2500 m2, all under the photograph
    coverage = measure_coverage(0.0, area, [SQUARE], 0.5)
    assert (coverage.ground_m2, coverage.area_on_ground_m2) == pytest.approx((10_000, 2500), rel=0.01)
    with pytest.raises(EngineError, match=r"colours 0 m2, 0% of the 10,000 m2 .* no photograph coloured most"):
        check_coverage(coverage)
    check_coverage(measure_coverage(2400.0, area, [SQUARE], 0.5))  # 24 %: a dense cloud's area over a beach


def test_an_area_beside_the_photographs_is_named() -> None:
    area = SurveyArea.of_ring(SQUARE + 500)
    with pytest.raises(EngineError, match=r"lies outside their ground \(0 m2 of it inside\)"):
        check_coverage(measure_coverage(300.0, area, [SQUARE], 0.5))


def test_a_nearly_empty_orthophoto_is_refused() -> None:
    with pytest.raises(EngineError, match="5% of the 10,000 m2"):
        check_coverage(Coverage(covered_m2=500.0, area_m2=9000.0, area_on_ground_m2=9000.0, ground_m2=10_000.0))


# --- photographs resized to another shape --------------------------------------------------------------------------

def test_photographs_stretched_to_another_shape_are_named(tmp_path: Path, engine_log) -> None:
    """The empty orthophoto's photographs were the first 8 stretched from 4000x2250 to 1000x750: the lens, its
    focal length held at the metadata's, bent its distortion to absorb the stretch until it folded the frame's
    edge (the same 8 scaled keeping their shape give p2 -0.003 and a lens that covers its frame). The dataset
    stage names such photographs; copies scaled keeping their shape pass."""
    (tmp_path / "images").mkdir()
    for n, path in enumerate(sorted(DATASET.glob("*.JPG"))[:3]):
        with Image.open(path) as image:
            size = (1000, 750) if n < 2 else (1000, 562)
            image.resize(size).save(tmp_path / "images" / path.name, quality=85, exif=image.info["exif"])
    with engine_log() as captured:
        pipeline.run(Project(tmp_path), [{"name": "end-with", "value": "dataset"}])
        warned = [line for line in captured.lines if "resized to another shape" in line]
        assert len(warned) == 1 and "DJI_0018.JPG and 1 other(s)" in warned[0] and "1.33 times" in warned[0]
        assert "DJI_0020.JPG" not in captured.text
    exif = {"ExifImageWidth": 4000, "ExifImageHeight": 2250}
    assert captured_stretch(2250, 4000, exif) == pytest.approx(1.0)  # turned upright
    assert captured_stretch(1000, 750, {}) is None
