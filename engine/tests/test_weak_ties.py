"""Surveys whose photographs are weakly tied: each ends placed at its GPS with products, or refused with an [ERROR]
that names the measured cause (texture, overlap) and what to try.

h20t_thermal: 32 thermal frames (their temperatures mapped) (640 x 512) of autumn canopy from 95 m, two strips about 9 m apart with about 12 m
between frames. Truth is each frame's own EXIF GPS (read here with Pillow, not by the engine).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import rasterio
from PIL import Image, ImageFilter
from pyproj import Transformer

from aeromap_engine import pipeline
from aeromap_engine.errors import InputError
from aeromap_engine.project import Project
from aeromap_engine.stages.odm_orthophoto import NO_SOURCE
from aeromap_engine.synthetic.seams import seam_steps
from conftest import datasets_dir
from test_sfm import exif_lonlat_alt, make_project, model_centres

THERMAL = datasets_dir() / "h20t_thermal" / "images"
UTM_33N = "EPSG:32633"  # Leipzig
# 4000 features an image keep matching within the test's time; the frames show them only at full resolution.
PRODUCTS = [{"name": "min-num-features", "value": 4000}, {"name": "fast-orthophoto", "value": True},
            {"name": "skip-3dmodel", "value": True}, {"name": "end-with", "value": "odm_orthophoto"}]


def thermal_project(root: Path, names: list[str]) -> Project:
    (root / "images").mkdir(parents=True)
    for name in names:
        shutil.copyfile(THERMAL / name, root / "images" / name)
    return Project(root)


def gps_truth(names: list[str]) -> dict[str, np.ndarray]:
    to_utm = Transformer.from_crs("EPSG:4326", UTM_33N, always_xy=True)
    return {n: np.array(to_utm.transform(*exif_lonlat_alt(THERMAL / n)[:2])) for n in names}


def stats(project: Project) -> dict:
    return json.loads(project.stats_file.read_text())


@pytest.fixture(scope="module")
def thermal(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = thermal_project(tmp_path_factory.mktemp("thermal"), sorted(p.name for p in THERMAL.iterdir()))
    pipeline.run(project, PRODUCTS)
    return project


@pytest.mark.long
def test_thermal_canopy_is_placed_at_its_gps(thermal: Project) -> None:
    figures = stats(thermal)
    rec = figures["reconstruction"]
    assert rec["images_registered"] >= 29 and rec["georef_source"] == "gps" and rec["crs"] == UTM_33N
    assert figures["quality"]["verdict"] != "failed"
    centres = model_centres(thermal)
    truth = gps_truth(list(centres))
    off = np.array([np.linalg.norm(centres[n][:2] - truth[n]) for n in centres])
    assert np.median(off) < 1.0 and off.max() < 3.0, off
    # Frames 12 m apart, strips 9 m apart, footprints about 47 x 59 m: each overlaps its nearest by about 80 %.
    assert 0.7 < figures["ties"]["overlap"] < 0.9
    assert figures["ties"]["overlapping_pairs"] >= 60


@pytest.mark.long
def test_thermal_orthophoto_covers_both_strips(thermal: Project) -> None:
    """Every placed frame's nadir point (its GPS fix) lies on the orthophoto, and so does the ground between
    the strips and the frames."""
    placed = list(model_centres(thermal))
    fixes = np.array(list(gps_truth(placed).values()))
    with rasterio.open(thermal.path("odm_orthophoto", "odm_orthophoto.tif")) as ortho:
        alpha = ortho.read(ortho.count) > 0
        rows, cols = rasterio.transform.rowcol(ortho.transform, fixes[:, 0], fixes[:, 1])
        low, high = fixes.min(axis=0), fixes.max(axis=0)
        (top, bottom), (left, right) = rasterio.transform.rowcol(ortho.transform, [low[0], high[0]],
                                                                  [high[1], low[1]])
    assert alpha[rows, cols].all()
    assert alpha[top:bottom + 1, left:right + 1].mean() > 0.99


@pytest.mark.long
def test_thermal_orthophoto_seams_show_no_more_than_the_inside_of_frames(thermal: Project) -> None:
    """The frames' temperatures (°C, in Kelvin for the measure's logarithm): the step across seams is no larger
    than inside one frame's part (bench/ortho_seams.py's measure), the camera's drift removed."""
    with rasterio.open(thermal.orthophoto()) as ortho:
        assert ortho.descriptions[0] == "LWIR"
        kelvin, covered = np.nan_to_num(ortho.read(1)) + 273.15, ortho.read(2) > 0
    with rasterio.open(thermal.orthophoto_sources) as dataset:
        sources = dataset.read(1).astype(np.int32)
    sources[sources == NO_SOURCE] = -1
    across, inside = seam_steps(kelvin, covered, sources)
    assert across <= 1.05 * inside, (across * 273, inside * 273)


def test_frames_without_overlap_are_refused_naming_it(tmp_path: Path) -> None:
    """Every fourth frame of the outbound strip: 48 m apart, footprints 47 m long. Nothing can tie them, and the
    refusal says so in figures, not by blaming the GPS."""
    outbound = sorted(p.name for p in THERMAL.iterdir())[:16:4]
    project = thermal_project(tmp_path, outbound)
    with pytest.raises(InputError) as refused:
        pipeline.run(project, [{"name": "end-with", "value": "opensfm"}])
    message = str(refused.value)
    assert "too little overlap" in message and "overlap their nearest neighbour by about 0%" in message
    assert "none of 6 candidate pairs verified" in message and "GPS position" not in message
    ties = stats(project)["ties"]
    assert ties["overlapping_pairs"] == 0 and ties["overlap"] < 0.05


def test_blurred_photographs_are_refused_naming_the_texture(tmp_path: Path) -> None:
    """Brighton Beach's six photographs blurred past recognition: the refusal names the missing texture."""
    project = make_project(tmp_path)
    for path in sorted(project.images_dir.iterdir()):
        with Image.open(path) as image:
            blurred = image.filter(ImageFilter.GaussianBlur(12))
            blurred.save(path, quality=92, exif=image.info["exif"], xmp=image.info.get("xmp"))
    with pytest.raises(InputError) as refused:
        pipeline.run(project, [{"name": "end-with", "value": "opensfm"},
                               {"name": "feature-quality", "value": "ultra"}])
    message = str(refused.value)
    assert "too little texture: the photographs show" in message and "GPS position" not in message
    assert stats(project)["ties"]["features_median"] < 1000
