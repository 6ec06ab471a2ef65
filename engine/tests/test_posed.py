"""Mapping from known poses (sfm-algorithm planar and triangulation) and the camera calibrations the cameras
option gives: on Brighton Beach's photographs at 1000 px, and on made-up surveys whose truth is known.

Expected values come from the photographs (their EXIF GPS, read here with Pillow and pyproj), ODM's published
cloud of the same beach, or the made-up truth, never from the engine's own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import laspy
import numpy as np
import pycolmap
import pytest
from scipy.spatial import cKDTree

from aeromap_engine import pipeline
from aeromap_engine.errors import InputError
from aeromap_engine.project import Project
from aeromap_engine.sfm.cameras import CameraKind, calibrated_kind, odm_camera, with_calibrations
from aeromap_engine.sfm.database import PositionPrior
from aeromap_engine.sfm.planar import NotPlanar, MatchedPoints, planar_poses
from aeromap_engine.sfm.posed import Orientation, attitude_rotation
from test_sfm import DATASET, SFM, exif_utm, make_project, model_centres, stats

# Three photographs of each flight line; the middle line flies the other way, and its DJI gimbal yaw says so
# although its photographs face as the others' do.
LINES = [f"DJI_00{i}.JPG" for i in (20, 21, 22, 25, 26, 27, 31, 32, 33)]
MIDDLE = {"DJI_0025.JPG", "DJI_0026.JPG", "DJI_0027.JPG"}
OUTER = [f"DJI_00{i}.JPG" for i in (20, 21, 22, 33, 34, 35)]


def algorithm(name: str) -> list[dict]:
    return SFM + [{"name": "sfm-algorithm", "value": name}, {"name": "matcher-neighbors", "value": 4}]


@pytest.fixture(scope="module")
def planar_run(tmp_path_factory: pytest.TempPathFactory, engine_log) -> tuple[Project, str]:
    project = make_project(tmp_path_factory.mktemp("planar"), names=LINES)
    with engine_log() as captured:
        pipeline.run(project, algorithm("planar"))
        return project, captured.text


def test_planar_places_every_photograph_at_its_gps(planar_run: tuple[Project, str]) -> None:
    project, text = planar_run
    rec = stats(project)["reconstruction"]
    assert rec["sfm_algorithm"] == "planar" and "Mapping incrementally instead" not in text
    assert rec["images_registered"] == len(LINES) and rec["mean_reprojection_error_px"] < 1.0
    truth, centres = exif_utm(LINES), model_centres(project)
    offsets = np.array([centres[n] - truth[n] for n in LINES])
    # The GPS fixes of a small drone scatter by about a metre; a pose the mosaic got wrong (a turned or flipped
    # camera, a wrong height) would leave its camera metres farther off.
    assert np.median(np.linalg.norm(offsets[:, :2], axis=1)) < 1.5
    assert np.abs(offsets[:, 2]).max() < 2.0


def test_planar_ground_lies_on_odms_published_cloud(planar_run: tuple[Project, str]) -> None:
    project, _ = planar_run
    georef = json.loads((project.root / "opensfm" / "georef.json").read_text())
    model = pycolmap.Reconstruction(project.root / "opensfm" / "reconstruction")
    ours = np.array([p.xyz for p in model.points3D.values()]) + [*georef["offset"], 0.0]
    published = laspy.read(DATASET.parent / "model.laz")
    theirs = np.column_stack([published.x, published.y, published.z])
    distance, nearest = cKDTree(theirs[:, :2]).query(ours[:, :2])
    close = distance < 0.5
    heights = ours[close, 2] - theirs[nearest[close], 2]
    # Both are placed by the same photographs' GPS; ours takes its heights from the barometer levelled on the GPS
    # altitudes, which puts the whole survey (incremental or planar, all 18 photographs) 0.6 to 0.8 m above ODM's
    # cloud. A bowl or a tilt from a wrong mosaic would spread the differences over metres.
    assert close.mean() > 0.8
    assert abs(np.median(heights)) < 1.5 and np.percentile(np.abs(heights - np.median(heights)), 90) < 0.5


@pytest.mark.long
def test_triangulation_from_the_gimbal_angles(tmp_path: Path, engine_log) -> None:
    project = make_project(tmp_path, names=OUTER)
    with engine_log() as captured:
        pipeline.run(project, algorithm("triangulation"))
        text = captured.text
    rec = stats(project)["reconstruction"]
    assert rec["sfm_algorithm"] == "triangulation" and "Mapping incrementally instead" not in text
    assert rec["images_registered"] == len(OUTER) and rec["mean_reprojection_error_px"] < 1.0
    truth, centres = exif_utm(OUTER), model_centres(project)
    assert max(np.linalg.norm(centres[n][:2] - truth[n][:2]) for n in OUTER) < 2.0


# In `make test-long` (CI's time): the planar test above places the same survey's photographs at their GPS.
@pytest.mark.long
def test_triangulation_names_the_photographs_whose_angles_are_wrong(tmp_path: Path, engine_log) -> None:
    project = make_project(tmp_path, names=LINES)
    with engine_log() as captured:
        pipeline.run(project, algorithm("triangulation"))
        lines = captured.lines
    warning = next(line for line in lines if "Triangulation from the images' poses cannot be used" in line)
    assert "3 of 9 photographs disagree with their matches" in warning and all(n in warning for n in MIDDLE)
    rec = stats(project)["reconstruction"]
    assert rec["sfm_algorithm"] == "incremental" and rec["images_registered"] == len(LINES)


def test_planar_without_gps_maps_incrementally_and_says_why(tmp_path: Path, engine_log) -> None:
    project = make_project(tmp_path, keep_gps=False, names=LINES[:4])
    with engine_log() as captured:
        pipeline.run(project, algorithm("planar"))
        text = captured.text
    assert "Planar reconstruction cannot be used: it needs the photographs' GPS positions" in text
    assert stats(project)["reconstruction"]["sfm_algorithm"] == "incremental"


def test_given_calibration_is_used_and_held(planar_run: tuple[Project, str], tmp_path: Path) -> None:
    """cameras.json of one run given to another: with use-fixed-camera-params the model keeps it exactly, and a
    focal length made 3 % longer is what the cameras then have."""
    written = json.loads(planar_run[0].path("cameras.json").read_text())
    (camera_id, camera), = written.items()
    given = {camera_id: {**camera, "focal_x": camera["focal_x"] * 1.03, "focal_y": camera["focal_y"] * 1.03}}
    project = make_project(tmp_path, names=LINES[:6])
    (project.root / "gcp").mkdir()
    (project.root / "gcp" / "calibration.json").write_text(json.dumps(given))
    pipeline.run(project, SFM + [{"name": "cameras", "value": "calibration.json"},
                                 {"name": "use-fixed-camera-params", "value": True}])
    kept = json.loads(project.path("cameras.json").read_text())[camera_id]
    for key in ("focal_x", "focal_y", "k1", "k2", "p1", "p2"):
        assert kept[key] == pytest.approx(given[camera_id][key], abs=1e-9)


def test_cameras_option_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    project = make_project(tmp_path, names=LINES[:2])
    for value, message in (("missing.json", "neither JSON nor the name of a file"), ("../images.json", "neither"),
                           ("{not json", "cameras: "), ('{"a": {"width": 1000, "height": 562}}', "focal length")):
        with pytest.raises(InputError, match=message):
            pipeline.run(project, SFM + [{"name": "cameras", "value": value}])


KIND = CameraKind("DJI", "FC300S", 4000, 2250, "brown", "OPENCV", 0.5556, True)


@pytest.mark.parametrize("projection", ["perspective", "brown", "fisheye", "fisheye_opencv"])
def test_a_calibration_read_back_is_the_camera_written(projection: str) -> None:
    kind = calibrated_kind(KIND, {"projection_type": projection, "focal": 0.6})
    camera = kind.initial_camera()
    camera.params = camera.params + np.linspace(0.001, 0.008, len(camera.params))  # every parameter set
    again = calibrated_kind(KIND, odm_camera(camera, projection)).initial_camera()
    assert again.model_name == camera.model_name and np.allclose(again.params, camera.params, atol=1e-9)


def test_a_calibration_applies_by_id_or_to_the_only_camera_of_its_size() -> None:
    other = CameraKind("X", "Y", 640, 512, "brown", "OPENCV", 1.2, True)
    entry = {"projection_type": "brown", "width": 4000, "height": 2250, "focal_x": 0.7, "focal_y": 0.7}
    by_size = with_calibrations([KIND, other], {"some other id": entry})
    assert by_size[0].calibration[0] == pytest.approx(0.7 * 4000) and by_size[1] == other
    by_id = with_calibrations([KIND], {KIND.odm_id.upper(): {**entry, "width": 1}, "x": entry, "y": entry})
    assert by_id[0].calibration[0] == pytest.approx(0.7 * 4000)
    assert with_calibrations([KIND], {"x": entry, "y": entry}) == [KIND]  # two of its size: which is unknown


def made_up_survey(relief_m: float, tilt_deg: float = 0.0, seed: int = 3
                   ) -> tuple[MatchedPoints, dict[str, PositionPrior], dict[str, np.ndarray], dict[str, float]]:
    """Three flight lines of five nadir cameras 40 m over ground whose heights vary by `relief_m` (a sine
    over 60 m), the middle line turned half a turn, each camera tilted by up to `tilt_deg`; the matches are
    the ground points two cameras see, in normalised coordinates with 1 px of noise at a 2000 px focal length.
    Answers the ties, GPS priors with 0.3 m of noise, and the true centres and headings."""
    rng = np.random.default_rng(seed)
    ground = rng.uniform([-40, -30], [40, 30], size=(4000, 2))
    heights = relief_m * np.sin(ground[:, 0] / 60 * 2 * np.pi) * np.cos(ground[:, 1] / 60 * 2 * np.pi)
    points = np.c_[ground, heights]
    names, centres, headings, rotations = [], {}, {}, {}
    for line, y in enumerate((-15.0, 0.0, 15.0)):
        for k, x in enumerate(np.linspace(-24, 24, 5)):
            name = f"{line}-{k}.jpg"
            heading = (np.pi if line == 1 else 0.0) + rng.normal(0, 0.05)
            tilt = rng.uniform(-tilt_deg, tilt_deg, 2)
            world_from_camera = attitude_rotation(Orientation(np.degrees(-heading), tilt[0], tilt[1]))
            names.append(name)
            centres[name] = np.array([x, y, 40.0])
            headings[name] = heading
            rotations[name] = world_from_camera
    seen = {}
    for name in names:
        camera = (points - centres[name]) @ rotations[name]
        xy = camera[:, :2] / camera[:, 2:]
        visible = (camera[:, 2] > 0) & (np.abs(xy[:, 0]) < 0.9) & (np.abs(xy[:, 1]) < 0.5)
        seen[name] = (visible, xy + rng.normal(0, 1 / 2000, xy.shape))
    pairs = []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            both = seen[a][0] & seen[names[j]][0]
            if both.sum() >= 30:
                pairs.append((i, j, seen[a][1][both][:200], seen[names[j]][1][both][:200]))
    priors = {n: PositionPrior(centres[n] + rng.normal(0, 0.3, 3), 1.0, 1.0) for n in names}
    return MatchedPoints(names, np.full(len(names), 2000.0), pairs), priors, centres, headings


def test_planar_poses_of_flat_ground_are_the_true_ones() -> None:
    ties, priors, centres, headings = made_up_survey(relief_m=0.0, tilt_deg=1.0)
    planar = planar_poses(ties, priors)
    for name, pose in planar.poses.items():
        world_from_camera = pose.rotation.matrix().T
        heading = np.arctan2(world_from_camera[1, 0], world_from_camera[0, 0])
        assert abs(np.angle(np.exp(1j * (heading - headings[name])))) < np.radians(2)
        assert np.linalg.norm(pose.inverse().translation[:2] - centres[name][:2]) < 1.5  # a degree of tilt: 0.7 m
        assert planar.heights_m[name] == pytest.approx(40.0, rel=0.03)
    assert planar.misfit_px < 10


def test_planar_poses_refuse_ground_with_relief() -> None:
    ties, priors, _, _ = made_up_survey(relief_m=12.0)
    with pytest.raises(NotPlanar, match=r"matched points lie a median \d+ px apart"):
        planar_poses(ties, priors)


def test_planar_poses_need_gps_and_one_connected_survey() -> None:
    ties, priors, _, _ = made_up_survey(relief_m=0.0)
    with pytest.raises(NotPlanar, match="2 of 15 photographs have a GPS position"):
        planar_poses(ties, {n: priors[n] for n in ties.names[:2]})
    alone = MatchedPoints(ties.names, ties.focal_px, [p for p in ties.pairs if 0 not in p[:2]])
    with pytest.raises(NotPlanar, match="1 of 15 photographs share no verified match"):
        planar_poses(alone, priors)


def test_attitude_of_a_nadir_camera_heading_east() -> None:
    world_from_camera = attitude_rotation(Orientation(yaw=90.0, pitch=0.0, roll=0.0))
    assert np.allclose(world_from_camera[:, 2], [0, 0, -1])  # looks down
    assert np.allclose(-world_from_camera[:, 1], [1, 0, 0])  # the image's top ahead, to the east
    forward = attitude_rotation(Orientation(yaw=0.0, pitch=90.0, roll=0.0))
    assert np.allclose(forward[:, 2], [0, 1, 0], atol=1e-12)  # pitched to the horizon, facing north
