"""Hard surveys made from Brighton Beach: each ends with a right model or a clear failure naming the cause, never
a plausible wrong one.

The photographs are the 1000 px copies of test_sfm.py. Truth is the original photographs' EXIF GPS (about a
metre on this DJI) and their content: a camera's position is right when it lies at its own photograph's fix,
whatever fix the test gave it. (The survey without GPS under names that hide the flight order is in
test_retrieval.py, which maps it once for its tests.)
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational
from pyproj import Transformer

from aeromap_engine import pipeline
from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.errors import InputError
from aeromap_engine.io.ply import read_ply, write_ply
from aeromap_engine.options import resolve
from aeromap_engine.project import Project
from aeromap_engine.sfm.alignment import apply, similarity_about_vertical
from aeromap_engine.sfm.survey import read_survey
from aeromap_engine.split.plan import Submodel
from aeromap_engine.stages import opensfm
from aeromap_engine.synthetic import FlightSpec, LensSpec, SceneSpec, SurveySpec, generate
from test_sfm import DATASET, SFM, SUBSET, UTM_15N, downscale, exif_utm, make_project, model_centres, stats

ALL = sorted(p.name for p in DATASET.iterdir())  # three flight lines of six
TRUE_FIX_M = 1.5  # how far a camera may lie from its photograph's own fix (DJI GPS, and the model's fit)
TO_LONLAT = Transformer.from_crs(UTM_15N, "EPSG:4326", always_xy=True)


def set_fix(path: Path, utm: np.ndarray) -> None:
    """Rewrite a photograph's EXIF GPS position (UTM 15N easting, northing, altitude)."""
    lon, lat = TO_LONLAT.transform(utm[0], utm[1])
    with Image.open(path) as image:
        exif, xmp, pixels = image.getexif(), image.info.get("xmp"), image.copy()
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[1], gps[2] = ("N" if lat >= 0 else "S"), _dms(abs(lat))
    gps[3], gps[4] = ("E" if lon >= 0 else "W"), _dms(abs(lon))
    gps[6] = IFDRational(round(float(utm[2]) * 1000), 1000)
    pixels.save(path, quality=92, exif=exif, xmp=xmp)


def set_rtk(path: Path, barometer_drift_m: float) -> None:
    """Tag a photograph as DJI writes an RTK fix (3 cm vertical) and add a drift to its barometer's height."""
    with Image.open(path) as image:
        exif, xmp, pixels = image.getexif(), image.info["xmp"].decode("utf-8"), image.copy()
    relative = float(re.search(r'drone-dji:RelativeAltitude="([-+0-9.]+)"', xmp).group(1)) + barometer_drift_m
    xmp = re.sub(r'drone-dji:RelativeAltitude="[-+0-9.]+"',
                 f'drone-dji:RelativeAltitude="{relative:+.2f}" drone-dji:RtkFlag="50" drone-dji:RtkStdLon="0.02" '
                 f'drone-dji:RtkStdLat="0.02" drone-dji:RtkStdHgt="0.03"', xmp)
    pixels.save(path, quality=92, exif=exif, xmp=xmp.encode("utf-8"))


def _dms(degrees: float) -> tuple[IFDRational, IFDRational, IFDRational]:
    whole = int(degrees)
    minutes = int((degrees - whole) * 60)
    seconds = (degrees - whole - minutes / 60) * 3600
    return IFDRational(whole, 1), IFDRational(minutes, 1), IFDRational(round(seconds * 1e6), 1_000_000)


def distances_to_truth(project: Project) -> dict[str, float]:
    """Each registered camera's distance from its own photograph's original fix."""
    centres = model_centres(project)
    truth = exif_utm(list(centres))
    return {name: float(np.linalg.norm(centres[name] - truth[name])) for name in centres}


def move_fixes(project: Project, moves: dict[str, np.ndarray]) -> None:
    """Give the named photographs their own fix moved by a horizontal vector (metres east, north)."""
    truth = exif_utm(sorted(moves))
    for name, move in moves.items():
        set_fix(project.images_dir / name, truth[name] + [move[0], move[1], 0.0])


def layout_error(project: Project) -> np.ndarray:
    """Each camera's distance from its photograph's own fix once one 2D similarity (and a height shift) lays the
    model's layout onto the fixes': what the photographs made of the survey's shape, wherever the GPS put it."""
    centres = model_centres(project)
    names = sorted(centres)
    truth = exif_utm(names)
    source, target = np.array([centres[n] for n in names]), np.array([truth[n] for n in names])
    return np.linalg.norm(apply(similarity_about_vertical(source, target), source) - target, axis=1)


@pytest.mark.long
def test_a_settling_receiver_is_reported_not_refused(tmp_path: Path, engine_log) -> None:
    """The first five fixes of the flight 60, 50, 40, 30 and 20 m off in one direction (a consumer receiver
    settling after take-off) and 8 m RMS of noise on the rest: every photograph is kept, the survey's shape is
    the photographs', the fixes that drift furthest are named (those within the noise's reach of the placement
    fit the others) and stats.json states how uncertain the placement is, its real error within it."""
    project = make_project(tmp_path, names=ALL)
    rng = np.random.default_rng(4)
    drift = {name: np.array([0.6, 0.8]) * metres for name, metres in zip(ALL, [60, 50, 40, 30, 20])}
    noise = {name: rng.normal(scale=8.0 / np.sqrt(2), size=2) for name in ALL[5:]}
    move_fixes(project, {**drift, **noise})
    with engine_log() as captured:
        pipeline.run(project, SFM)
        warnings = [line for line in captured.lines if "disagree with where the photographs place" in line]
    rec = stats(project)["reconstruction"]
    assert rec["images_registered"] == 18 and rec["images_left_out"] == {}
    assert layout_error(project).max() < TRUE_FIX_M
    # The drift left within the noise's reach moves the whole model; the stated uncertainty covers that.
    misplaced = np.median(list(distances_to_truth(project).values()))
    assert misplaced < rec["absolute_uncertainty_m"]["horizontal"] < 20.0
    assert len(warnings) == 1 and all(f"{name} " in warnings[0] for name in ALL[:2])
    assert set(ALL[:2]) <= set(rec["gps_outliers"]) <= set(ALL[:5])
    assert stats(project)["quality"]["verdict"] != "failed"


@pytest.mark.long
def test_two_wild_fixes_are_dropped_with_one_mapping(tmp_path: Path, engine_log) -> None:
    """Two of twelve fixes (two flight lines) 80 m off: the survey is mapped once (a second mapping without them
    made the same model), both photographs stay where they were taken and their fixes are reported as
    outliers."""
    names = ALL[:12]
    project = make_project(tmp_path, names=names)
    wrong = [names[4], names[9]]
    move_fixes(project, {wrong[0]: np.array([80.0, 0.0]), wrong[1]: np.array([0.0, -80.0])})
    with engine_log() as captured:
        pipeline.run(project, SFM)
        mappings = [line for line in captured.lines if line.startswith("Mapping took")]
    rec = stats(project)["reconstruction"]
    assert len(mappings) == 1 and rec["mappings"] == 1
    assert sorted(rec["gps_outliers"]) == wrong and all(d > 70 for d in rec["gps_outliers"].values())
    errors = distances_to_truth(project)
    assert len(errors) == 12 and max(errors.values()) < TRUE_FIX_M


def test_wild_fixes_are_blamed_on_the_gps(tmp_path: Path) -> None:
    """Every second photograph removed (half the overlap), and two of the nine fixes 30 m off (a receiver
    glitch): all nine images still land where they were taken, the fixes are named as wrong, and the run is not
    failed."""
    names = ALL[::2]
    project = make_project(tmp_path, names=names)
    truth = exif_utm(names)
    wrong = [names[2], names[6]]
    for name in wrong:
        set_fix(project.images_dir / name, truth[name] + [21.2, 21.2, 0.0])
    pipeline.run(project, SFM)
    errors = distances_to_truth(project)
    assert len(errors) == 9 and max(errors.values()) < TRUE_FIX_M
    assert sorted(stats(project)["reconstruction"]["gps_residual_m"]["outliers"]) == wrong
    assert stats(project)["quality"]["verdict"] != "failed"
    # Negative control: the two cameras do lie 30 m from the fixes they were given.
    centres = model_centres(project)
    assert all(np.linalg.norm(centres[n][:2] - truth[n][:2] - 21.2) > 25 for n in wrong)


# In `make test-long` (CI's time): the wild fixes' test keeps a refusal of mis-geotagged photographs in `make test`.
@pytest.mark.long
def test_fixes_of_other_photographs_fail_clearly(tmp_path: Path) -> None:
    """Fixes shuffled among the photographs (geotags from a clock-shifted log): most cameras contradict their
    fixes, so no model is trustworthy and the run fails, naming the GPS; nothing is left marked done. (The
    cameras lie at their own photographs' fixes, which test_wild_fixes_are_blamed_on_the_gps checks: it is the
    assignment the run rejects.)"""
    names = ALL[::2]
    project = make_project(tmp_path, names=names)
    truth = exif_utm(names)
    shuffled = names[3:] + names[:3]
    for name, other in zip(names, shuffled):
        set_fix(project.images_dir / name, truth[other])
    with pytest.raises(InputError, match="GPS positions do not describe the photographs' layout") as failure:
        pipeline.run(project, SFM)
    assert failure.value.exit_code == 3
    assert stats(project)["quality"]["verdict"] == "failed"
    assert not (project.state_dir / "opensfm.done").exists()


@pytest.mark.long
def test_two_groups_that_share_no_view(tmp_path: Path, engine_log) -> None:
    """The west and east ends of the survey, 40 m apart with no view in common: each group is reconstructed
    on its own and placed by its GPS, so both are in the model, at their fixes. Nothing but the GPS ties one group
    to the other, so the verdict is doubtful, with a warning that says so."""
    west, east = ["DJI_0018.JPG", "DJI_0019.JPG", "DJI_0028.JPG", "DJI_0029.JPG"], \
        ["DJI_0024.JPG", "DJI_0033.JPG", "DJI_0034.JPG", "DJI_0035.JPG"]
    project = make_project(tmp_path, names=west + east)
    with engine_log(logging.WARNING) as captured:
        pipeline.run(project, SFM)
        warnings = captured.lines
    assert any("4 images in 1 separate group placed by their GPS alone" in line for line in warnings)
    errors = distances_to_truth(project)
    assert sorted(errors) == sorted(west + east) and max(errors.values()) < TRUE_FIX_M
    assert stats(project)["reconstruction"]["images_left_out"] == {}
    quality = stats(project)["quality"]
    assert quality["verdict"] == "doubtful"
    assert [name for name, c in quality["checks"].items() if not c["passed"]] == ["groups_placed_by_gps"]
    check = quality["checks"]["groups_placed_by_gps"]
    assert not check["passed"] and not check["fatal"] and check["value"] == 4


@pytest.mark.long
def test_blocks_sharing_one_flight_line_are_not_joined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        engine_log) -> None:
    """Two blocks that share the middle flight line only (as a border whose outer row neither block registered
    leaves them): six cameras along one line leave the join's roll about it to chance, so the join is refused,
    naming why, and the survey is mapped at once, every camera at its own fix. (Accepted, that join tilted the
    model about 4 degrees from the gimbal angles, which georeferencing warns of, and left a camera 1.6 m from its
    fix.)"""
    lines = [ALL[0:6], ALL[6:12], ALL[12:18]]
    plan = [Submodel("block_0000", tuple(lines[0]), tuple(lines[0] + lines[1])),
            Submodel("block_0001", tuple(lines[1] + lines[2]), tuple(lines[1] + lines[2]))]
    monkeypatch.setattr(opensfm, "mapping_blocks", lambda survey, database: plan)
    project = make_project(tmp_path, names=ALL)
    with engine_log(logging.WARNING) as captured:
        pipeline.run(project, SFM + [{"name": "min-num-features", "value": 3000}])
        warnings = captured.text
    assert "block_0001 to block_0000, the 6 photographs they share lie along one line" in warnings
    assert "Mapping all images at once instead" in warnings
    assert "tilt the model" not in warnings
    errors = distances_to_truth(project)
    assert len(errors) == len(ALL) and max(errors.values()) < TRUE_FIX_M


def test_a_group_without_gps_is_left_out_and_named(tmp_path: Path, engine_log) -> None:
    """The same two groups with the east one's GPS removed: nothing can place it, so its images are left out,
    each named with the reason, and the west group alone makes a trustworthy model."""
    west, east = ["DJI_0018.JPG", "DJI_0019.JPG", "DJI_0028.JPG", "DJI_0029.JPG"], \
        ["DJI_0024.JPG", "DJI_0033.JPG", "DJI_0034.JPG", "DJI_0035.JPG"]
    project = make_project(tmp_path, names=west)
    for name in east:
        downscale(DATASET / name, project.images_dir / name, keep_gps=False)
    with engine_log() as captured:
        pipeline.run(project, SFM)
        lines = captured.lines
    left_out = stats(project)["reconstruction"]["images_left_out"]
    assert sorted(left_out) == sorted(east)
    assert all("shares no view with the main model" in reason for reason in left_out.values())
    assert all(any(name in line and "Left out" in line for line in lines) for name in east)
    assert sorted(distances_to_truth(project)) == sorted(west)
    quality = stats(project)["quality"]
    assert quality["verdict"] == "doubtful" and not quality["checks"]["images_registered"]["passed"]


@pytest.mark.long
def test_a_cloud_above_its_cameras_fails_clearly(tmp_path: Path) -> None:
    """A ghost copy of a fifth of the dense cloud 300 m up (a model folded onto itself: as dense as the rest, so
    no outlier filter takes it) is a surface no camera
    looking down from 40 m could see: the run stops at the filtered cloud, naming the heights. The same run
    without the ghost passes the check (negative control)."""
    project = make_project(tmp_path, names=ALL[6:12])
    options = SFM[1:] + [{"name": "pc-quality", "value": "low"}, {"name": "end-with", "value": "odm_filterpoints"}]
    pipeline.run(project, options)
    assert stats(project)["quality"]["checks"]["cloud_height_range"]["passed"]
    dense = project.dense_cloud
    cloud = read_ply(dense)
    ghost = cloud.subset(cloud.xyz[:, 0] < np.percentile(cloud.xyz[:, 0], 20))
    write_ply(dense, PointCloud.concatenate([cloud, PointCloud(ghost.xyz + [0, 0, 300], ghost.rgb, ghost.views)]))
    with pytest.raises(InputError, match="point cloud spans .* that no survey from those cameras can see"):
        pipeline.run(project, options + [{"name": "rerun-from", "value": "odm_filterpoints"}])
    assert stats(project)["quality"]["verdict"] == "failed"


@pytest.mark.long
def test_photographs_of_another_place_are_left_out(tmp_path: Path) -> None:
    """Nine Brighton photographs mixed with a few of a synthetic survey flown 17 km away (its own camera, its own GPS):
    the other place is a group of its own, left out and named; the model and its GPS check hold Brighton alone,
    at its fixes."""
    spec = SurveySpec(scene=SceneSpec(size_m=45.0), lens=LensSpec(width=640, height=480),
                      flight=FlightSpec(height_m=35.0, forward_overlap=0.75, side_overlap=0.6),
                      latitude=46.95, longitude=-92.0, seed=5)
    elsewhere = generate(tmp_path / "elsewhere", spec, workers=2)
    project = make_project(tmp_path / "mixed", names=ALL[::2])
    for photograph in elsewhere.photographs:
        shutil.copy(elsewhere.images_dir / photograph.name, project.images_dir / f"X{photograph.name}")
    pipeline.run(project, SFM)
    left_out = stats(project)["reconstruction"]["images_left_out"]
    assert sorted(left_out) == sorted(f"X{p.name}" for p in elsewhere.photographs)
    assert all("km away by its GPS: photographs of another place" in reason for reason in left_out.values())
    errors = distances_to_truth(project)
    assert sorted(errors) == ALL[::2] and max(errors.values()) < TRUE_FIX_M


def test_rtk_heights_are_kept_over_a_drifting_barometer(tmp_path: Path) -> None:
    """Brighton Beach as an RTK drone writes it (fix, 3 cm vertical) with a barometer drifting 1 m over the
    flight: the heights that georeferencing holds the cameras to are the GPS's, at the stated 3 cm, not the
    barometer's; gps-z-offset raises them all. The model's cameras follow: held to the barometer they lay
    0.23 to 0.41 m off their GPS heights, with the ground tilted by 2.5 degrees."""
    project = make_project(tmp_path, names=SUBSET)
    for k, name in enumerate(SUBSET):  # in capture order
        set_rtk(project.images_dir / name, k / (len(SUBSET) - 1))
    pipeline.run(project, SFM)
    truth = exif_utm(SUBSET)
    centres = model_centres(project)
    assert max(abs(centres[name][2] - truth[name][2]) for name in SUBSET) < 0.2
    for offset in (0.0, 10.0):
        options = resolve(pipeline.all_options(), [{"name": "gps-z-offset", "value": offset}])[0]
        priors = read_survey(pipeline.StageContext(project, options, "opensfm", 0.0, 1.0)).priors
        assert sorted(priors) == SUBSET
        errors = [priors[name].position[2] - truth[name][2] - offset for name in SUBSET]
        assert np.abs(errors).max() < 0.01, errors
        assert all(prior.vertical_stddev == pytest.approx(0.03) for prior in priors.values())


def _second_camera(path: Path, model: str, width: int) -> None:
    """The photograph as another camera took it: another model name and a smaller frame (its EXIF kept)."""
    with Image.open(path) as image:
        exif, xmp = image.getexif(), image.info.get("xmp")
        exif[ExifTags.Base.Model] = model
        small = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
    small.save(path, quality=92, exif=exif, xmp=xmp)


def test_two_cameras_in_one_survey_are_each_calibrated(tmp_path: Path) -> None:
    """Half the photographs from a second camera (another model, a frame of 800 px): each camera gets its own
    calibration, and every photograph is placed at its own fix."""
    project = make_project(tmp_path)
    second = SUBSET[1::2]
    for name in second:
        _second_camera(project.images_dir / name, "FC6310 second", 800)
    pipeline.run(project, SFM)
    rec = stats(project)["reconstruction"]
    assert rec["images_registered"] == len(SUBSET), rec["images_unregistered"]
    cameras = json.loads((project.root / "cameras.json").read_text())
    assert sorted(camera["width"] for camera in cameras.values()) == [800, 1000]
    truth, centres = exif_utm(SUBSET), model_centres(project)
    distances = {name: float(np.linalg.norm(centres[name] - truth[name])) for name in SUBSET}
    assert max(distances.values()) < TRUE_FIX_M, distances
