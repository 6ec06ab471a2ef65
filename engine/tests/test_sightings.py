"""The ground-control editor's predictions (sfm/sightings.py, control_points.py) against closed forms: a camera
looking straight down at known points, rays that meet, the CRS of a model's shots told from their positions, and
requests that cannot be answered."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from aeromap_engine.control_points import predict_sightings
from aeromap_engine.errors import InputError
from aeromap_engine.geo import WGS84, parse_crs, transform
from aeromap_engine.sfm.sightings import locate, model_crs, model_views, sight

UTM = parse_crs("EPSG:32632")
CENTRE = np.array([500_000.0, 5_000_000.0, 100.0])  # 100 m up
FOCAL = 0.8  # of the larger side, 1000 px: 800 px
CAMERA = {"projection_type": "brown", "width": 1000, "height": 750, "focal_x": FOCAL, "focal_y": FOCAL,
          "c_x": 0.0, "c_y": 0.0, "k1": 0.0, "k2": 0.0, "p1": 0.0, "p2": 0.0, "k3": 0.0}
# Looking down, the image's top to the north: camera x east, y south, z down.
DOWN = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])


def shots(centres: list[np.ndarray]) -> dict:
    lonlat = transform(UTM, WGS84, np.array(centres))
    return {"type": "FeatureCollection", "features": [{
        "type": "Feature",
        "properties": {"filename": f"IMG_{i}.JPG", "camera": "drone", "translation": list(c),
                       "rotation": list(Rotation.from_matrix(DOWN).as_rotvec())},
        "geometry": {"type": "Point", "coordinates": list(g)}} for i, (c, g) in enumerate(zip(centres, lonlat))]}


def expected_pixel(centre: np.ndarray, point: np.ndarray) -> tuple[float, float]:
    """A pinhole looking down: 800 px per unit of offset over depth, the centre pixel at 499.5, 374.5."""
    depth = centre[2] - point[2]
    return (499.5 + 800 * (point[0] - centre[0]) / depth, 374.5 - 800 * (point[1] - centre[1]) / depth)


def test_a_camera_looking_down_sees_points_where_a_pinhole_puts_them() -> None:
    views = model_views({"drone": CAMERA}, shots([CENTRE]))
    points = np.array([CENTRE - [0, 0, 100], CENTRE + [20, 10, -100], CENTRE + [200, 0, -100]])
    seen = sight(views, points)
    assert seen[0][0].pixel == pytest.approx(expected_pixel(CENTRE, points[0]), abs=1e-6)
    assert seen[1][0].pixel == pytest.approx(expected_pixel(CENTRE, points[1]), abs=1e-6)
    assert seen[2] == []  # 1600 px right of the centre: outside the frame
    # With a margin, a point just outside counts, at the frame's edge.
    near = np.array([CENTRE + [64, 0, -100]])  # 512 px right: 12 px past the edge
    assert sight(views, near) == [[]]
    assert sight(views, near, margin=0.05)[0][0].pixel == pytest.approx((999.0, 374.5))


def test_views_nearest_their_centre_come_first() -> None:
    views = model_views({"drone": CAMERA}, shots([CENTRE, CENTRE + [30, 0, 0]]))
    point = np.array([CENTRE + [25, 0, -100]])
    assert [s.image for s in sight(views, point)[0]] == ["IMG_1.JPG", "IMG_0.JPG"]


def test_marks_place_a_point_better_than_its_survey() -> None:
    views = model_views({"drone": CAMERA}, shots([CENTRE, CENTRE + [30, 0, 0], CENTRE + [0, 30, 0]]))
    truth = CENTRE + np.array([12.0, -7.0, -98.5])
    marks = [(view, expected_pixel(view.centre, truth)) for view in views]
    surveyed = truth + [0.5, -0.3, 2.0]  # a survey off by metres in height
    assert locate(surveyed, marks).position == pytest.approx(truth, abs=1e-6)
    # One mark: its ray, at the point nearest the survey.
    along = locate(surveyed, marks[:1]).position
    assert np.linalg.norm(np.cross(along - views[0].centre, truth - views[0].centre)) == pytest.approx(0, abs=1e-6)
    assert abs(along[2] - truth[2]) < 2.1
    assert locate(surveyed, []).position is surveyed


def test_a_mark_of_something_else_is_left_out_and_named() -> None:
    views = model_views({"drone": CAMERA}, shots([CENTRE, CENTRE + [30, 0, 0], CENTRE + [0, 30, 0]]))
    truth = CENTRE + np.array([12.0, -7.0, -98.5])
    marks = [(view, expected_pixel(view.centre, truth)) for view in views]
    wrong = (views[1], (marks[1][1][0], marks[1][1][1] + 120))  # 120 px off, across the pair's baseline
    located = locate(truth + [0.3, 0.3, 0.0], [marks[0], wrong, marks[2]])
    assert located.position == pytest.approx(truth, abs=1e-6) and located.disagreeing == ["IMG_1.JPG"]
    # Of two that disagree, the one whose ray passes nearer the survey.
    located = locate(truth + [0.3, 0.3, 0.0], [wrong, marks[0]])
    assert located.disagreeing == ["IMG_1.JPG"]
    assert np.linalg.norm(np.cross(located.position - views[0].centre, truth - views[0].centre)) < 1e-6


def test_the_shots_crs_is_the_one_their_positions_agree_in() -> None:
    document = shots([CENTRE])
    assert model_crs(document, []).to_epsg() == 32632
    assert model_crs(document, [parse_crs("EPSG:3857"), UTM]).to_epsg() == 32632
    document["features"][0]["properties"]["translation"] = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="cannot tell the CRS"):
        model_crs(document, [])


def test_requests_that_cannot_be_answered_say_why(tmp_path: Path) -> None:
    points = tmp_path / "points.json"
    points.write_text(json.dumps({"crs": "EPSG:32632", "points": [{"name": "a", "x": 1}]}))
    with pytest.raises(InputError, match="must be"):
        predict_sightings(points, None, None, tmp_path)
    points.write_text(json.dumps({"crs": "EPSG:32632", "points": [{"name": "a", "x": 1, "y": 2, "z": 3}]}))
    (tmp_path / "images").mkdir()
    with pytest.raises(InputError, match="None of the photographs has a GPS position"):
        predict_sightings(points, None, None, tmp_path / "images")
    (tmp_path / "cameras.json").write_text("{}")
    (tmp_path / "shots.geojson").write_text(json.dumps(shots([CENTRE])))
    with pytest.raises(InputError, match="cameras.json does not hold"):
        predict_sightings(points, tmp_path / "cameras.json", tmp_path / "shots.geojson", None)
