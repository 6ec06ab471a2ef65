"""Thermal surveys: DJI R-JPEGs read as temperatures by dji-thermal-cli (run as its own program), dead pixels filled,
and a run on twelve of h20t_thermal's frames (both strips' ends, where they pass a roof) whose orthophoto holds °C that agree with the tool's reading of each
single frame. The truth is the tool's in-process reading here, not the engine's."""

from __future__ import annotations

import shutil
from pathlib import Path

import dji_thermal_cli as dtc
import numpy as np
import pytest
import rasterio
from pyproj import Transformer

from aeromap_engine import pipeline
from aeromap_engine.bands.thermal import convert, dead_pixels, fill, holds_raw_counts
from aeromap_engine.project import Project
from aeromap_engine.stages.dataset import inspect_image, thermal_survey
from conftest import datasets_dir
from test_sfm import exif_lonlat_alt

THERMAL = datasets_dir() / "h20t_thermal" / "images"
FRAMES = sorted(p.name for p in THERMAL.iterdir())
DEAD = (48, 42)  # the H20T's dead pixel, -44.7 °C in every frame
SUBSET = FRAMES[:6] + FRAMES[-6:]  # both strips over the same ground; one strip alone ties too weakly
PRODUCTS = [{"name": "min-num-features", "value": 4000}, {"name": "fast-orthophoto", "value": True},
            {"name": "skip-3dmodel", "value": True}, {"name": "end-with", "value": "odm_orthophoto"}]


def single_frame(name: str) -> np.ndarray:
    """The tool's own reading of one frame, in °C, with the frame's embedded parameters."""
    return dtc.measure(str(THERMAL / name), dtc.Settings(), unit="C").temperature


def test_r_jpegs_are_told_from_other_jpegs() -> None:
    assert holds_raw_counts((THERMAL / FRAMES[0]).read_bytes(), "DJI")
    brighton = next((datasets_dir() / "brighton_beach" / "images").glob("*.JPG")).read_bytes()
    assert not holds_raw_counts(brighton, "DJI")  # a DJI photograph without counts
    assert not holds_raw_counts((THERMAL / FRAMES[0]).read_bytes(), "FLIR")


def test_dead_pixels_are_those_wrong_in_every_frame() -> None:
    rng = np.random.default_rng(3)
    frames = [rng.normal(15, 0.5, (40, 50)).astype(np.float32) for _ in range(6)]
    for i, frame in enumerate(frames):
        frame[5, 7] = -44.7  # dead: the same everywhere
        frame[10 + i, 20] = 60.0  # a hot car, somewhere else in each frame
    dead = dead_pixels(frames)
    assert dead[5, 7] and dead.sum() == 1
    filled = fill(frames[0], dead)
    assert 13 < filled[5, 7] < 17 and filled[10, 20] == 60.0


# In `make test-long` (CI's time), beside the thermal orthophoto's run.
@pytest.mark.long
def test_temperatures_agree_with_the_tools_single_frames(tmp_path: Path) -> None:
    names = FRAMES[:3]
    bad = tmp_path / "images"
    bad.mkdir()
    for name in names:
        shutil.copyfile(THERMAL / name, bad / name)
    (bad / "broken_T.JPG").write_bytes((THERMAL / names[0]).read_bytes()[:4000])
    files = convert(bad, [*names, "broken_T.JPG"], tmp_path / "temperatures", jobs=2)
    assert sorted(files) == names  # the truncated frame is named as unread, not guessed
    for name in names:
        with rasterio.open(tmp_path / "temperatures" / files[name]) as written:
            ours = written.read(1)
        theirs = single_frame(name)
        assert theirs[DEAD] < -40 and 5 < ours[DEAD] < 30  # filled from its neighbours
        live = np.ones(ours.shape, bool)
        live[DEAD] = False
        # The flight's median ambient and each frame's drift removed: the same picture, shifted by under 1 °C.
        shift = np.median(ours[live] - theirs[live])
        assert abs(shift) < 1.0
        assert np.percentile(np.abs(ours[live] - theirs[live] - shift), 99) < 0.2


def test_a_survey_mixing_thermal_and_colour_photographs_keeps_the_colours(tmp_path: Path) -> None:
    """An H20T's thermal frames beside a colour photograph: no temperatures (the orthophoto could not hold both),
    the photographs mapped as they look."""
    project = Project(tmp_path)
    project.images_dir.mkdir()
    brighton = next((datasets_dir() / "brighton_beach" / "images").glob("*.JPG"))
    for path in [THERMAL / FRAMES[0], THERMAL / FRAMES[1], brighton]:
        shutil.copyfile(path, project.images_dir / path.name)
    inspections = [inspect_image(path) for path in sorted(project.images_dir.iterdir())]
    assert [i.thermal for i in inspections] == [False, True, True]
    assert thermal_survey(project, inspections, jobs=1) is None and not project.temperatures_dir.exists()
    survey = thermal_survey(project, inspections[1:], jobs=1)
    assert survey.bands == ("LWIR",) and sorted(survey.captures) == FRAMES[:2]


@pytest.fixture(scope="module")
def thermal_run(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("thermal12")
    (root / "images").mkdir()
    for name in SUBSET:
        shutil.copyfile(THERMAL / name, root / "images" / name)
    project = Project(root)
    pipeline.run(project, PRODUCTS)
    return project


@pytest.mark.long
def test_thermal_orthophoto_holds_the_frames_temperatures(thermal_run: Project) -> None:
    """One float32 band named LWIR (and alpha). Each frame's temperatures are the tool's single-frame reading but
    for the camera's drift (at most a few degrees over a flight); around each frame's nadir point the orthophoto's
    median temperature is that frame's over the same ground within 1.5 °C; the orthophoto spans the range the
    single frames read."""
    with rasterio.open(thermal_run.orthophoto()) as ortho:
        assert ortho.count == 2 and ortho.dtypes[0] == "float32" and ortho.descriptions[0] == "LWIR"
        celsius, alpha = ortho.read(1), ortho.read(2)
        transform, crs = ortho.transform, ortho.crs
    covered = celsius[alpha > 0]
    assert np.isfinite(covered).all() and covered.min() > -10  # no dead pixel's -44.7 blended in
    to_map = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    half_frame = int(5 / (thermal_run.mean_gsd_cm() / 100))  # 10 m square in a frame's pixels
    half_ortho = int(5 / abs(transform.a))
    checked, spans = 0, []
    for name in SUBSET:
        theirs = single_frame(name)
        with rasterio.open(thermal_run.temperatures_dir / f"{Path(name).stem}.tif") as written:
            ours = written.read(1)
        drift = np.median(ours - theirs)
        assert abs(drift) < 3.5, name
        spans.append(np.percentile(theirs, [1, 99]))
        x, y = to_map.transform(*exif_lonlat_alt(THERMAL / name)[:2])
        row, col = rasterio.transform.rowcol(transform, x, y)
        window = celsius[max(0, row - half_ortho):row + half_ortho, max(0, col - half_ortho):col + half_ortho]
        centre = ours[256 - half_frame:256 + half_frame, 320 - half_frame:320 + half_frame]
        if window.size and np.isfinite(window).mean() > 0.9:
            assert abs(np.nanmedian(window) - np.median(centre)) < 1.5, name
            checked += 1
    assert checked >= 9
    low, high = np.percentile(covered, [1, 99])
    spans = np.array(spans)
    assert spans[:, 0].min() - 3.5 < low < high < spans[:, 1].max() + 3.5, (low, high, spans)
    assert thermal_run.read_stats()["bands"]["bands"] == ["LWIR"]
