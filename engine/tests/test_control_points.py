"""Ground control points without GPS on a real survey: copr, 41 kite photographs whose 10 control points were
published without heights (all 0.0), here the 23 photographs that see most of them; and the ground-control
editor's predictions on the model of all 41.

Expected values come from the control-point file itself (which points can be located, the heights it gives), not
from the engine's output.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from aeromap_engine import pipeline
from aeromap_engine.control_points import predict_sightings
from aeromap_engine.io.gcp import parse_gcp_list
from aeromap_engine.project import Project
from conftest import datasets_dir

COPR = datasets_dir() / "copr"
SUBSET = [f"IMG_{n:04d}.jpg" for n in (31, 34, 37, 43, 46, 49, 52, 55, 58, 61, 64, 67, 70, 73, 76, 79, 82, 85, 88,
                                      91, 94, 97, 100)]
OPTIONS = [{"name": "end-with", "value": "opensfm"}, {"name": "feature-quality", "value": "medium"}]


@pytest.fixture(scope="module")
def copr(tmp_path_factory: pytest.TempPathFactory, engine_log) -> tuple[Project, str]:
    root = tmp_path_factory.mktemp("copr")
    (root / "images").mkdir()
    for name in SUBSET:
        shutil.copy(COPR / "images" / name, root / "images" / name)
    shutil.copy(COPR / "gcp_list.txt", root / "gcp_list.txt")
    project = Project(root)
    with engine_log() as captured:
        pipeline.run(project, OPTIONS)
        return project, captured.text


@pytest.mark.long
def test_control_points_alone_georeference_copr(copr: tuple[Project, str]) -> None:
    """The control points place the survey in their UTM zone, fitting it horizontally to the metre that their
    published coordinates hold; gcp00, which the file marks on one photograph only, is named."""
    project, text = copr
    stats = json.loads(project.stats_file.read_text())
    rec = stats["reconstruction"]
    assert rec["georef_source"] == "gcp" and rec["crs"] == "EPSG:32611"
    residuals = rec["gcp_residual_m"]
    used = [p for p in residuals["points"] if p["used"]]
    assert len(used) >= 4 and residuals["rmse_horizontal"] < 1.5
    assert "gcp00 is marked in fewer than 2 placed photographs" in text  # the file marks it on one
    assert stats["quality"]["verdict"] == "doubtful"


@pytest.mark.long
def test_copr_heights_are_reported_without_a_datum(copr: tuple[Project, str]) -> None:
    """Heights all 0.0 are no survey: a warning, a doubtful check, and a model still levelled on their plane
    (the vertical residuals of a roughly flat site stay small)."""
    project, text = copr
    stats = json.loads(project.stats_file.read_text())
    assert "All 10 ground control points have the height 0 m: not surveyed heights" in text
    assert not stats["quality"]["checks"]["gcp_heights"]["passed"]
    residuals = stats["reconstruction"]["gcp_residual_m"]
    assert residuals["heights_surveyed"] is False and residuals["rmse_vertical"] < 0.5


@pytest.fixture(scope="module")
def copr_model(tmp_path_factory: pytest.TempPathFactory, engine_log) -> Project:
    """All 41 photographs, georeferenced by the file's points: the model the ground-control editor predicts from."""
    root = tmp_path_factory.mktemp("copr-all")
    shutil.copytree(COPR / "images", root / "images")
    shutil.copy(COPR / "gcp_list.txt", root / "gcp_list.txt")
    project = Project(root)
    with engine_log():
        pipeline.run(project, OPTIONS)
    return project


@pytest.mark.long
def test_editor_predicts_where_copr_marks_its_points(copr_model: Project, tmp_path) -> None:
    """Each of the file's marks predicted by the editor from the model as a person meets it, the point placed by
    its marks in the other photographs: within 10 px of the file's own mark. The file's heights are all 0 and
    its coordinates fit the model to a metre or two, hundreds of pixels in these photographs, so a point is
    found by its marks, not its survey. Two marks cannot be predicted so: gcp00 is marked once, and gcp04's
    mark in IMG_0031 is of something else (the other two place gcp04 outside that photograph), which the editor
    names."""
    gcps = parse_gcp_list((COPR / "gcp_list.txt").read_text())
    request = tmp_path / "points.json"

    def predicted(point, marks: list) -> dict:
        request.write_text(json.dumps({"crs": gcps.crs.to_string(), "points": [
            {"name": point.name, "x": point.xyz[0], "y": point.xyz[1], "z": point.xyz[2],
             "marks": [{"image": o.image, "x": o.pixel[0], "y": o.pixel[1]} for o in marks]}]}))
        return predict_sightings(request, copr_model.path("cameras.json"), copr_model.report_dir / "shots.geojson",
                                 None)["points"][0]

    disagreeing = {f"{p.name}/{image}" for p in gcps.points for image in predicted(p, p.observations)["disagreeing"]}
    assert disagreeing == {"gcp04/IMG_0031.jpg"}
    misses = {}
    for point in gcps.points:
        for observation in point.observations:
            others = [o for o in point.observations
                      if o.image != observation.image and f"{point.name}/{o.image}" not in disagreeing]
            if not others or f"{point.name}/{observation.image}" in disagreeing:
                continue
            spots = {s["image"]: (s["x"], s["y"]) for s in predicted(point, others)["sightings"]}
            assert observation.image in spots, f"{point.name} not predicted in {observation.image}"
            misses[f"{point.name}/{observation.image}"] = float(np.hypot(*np.subtract(spots[observation.image],
                                                                                      observation.pixel)))
    print("\n[copr] predictions off the file's marks (px): "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(misses.items(), key=lambda kv: -kv[1])))
    assert len(misses) == 25 and {k.split("/")[0] for k in misses} == {p.name for p in gcps.points} - {"gcp00"}
    assert max(misses.values()) <= 10
