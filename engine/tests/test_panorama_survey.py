"""A survey by a 360° camera: panoramas rendered from a synthetic scene by a camera flown 40 m over it, with an
RTK receiver (what is measured is where the engine puts the panoramas, not a consumer GPS's bias). The engine cuts
them into views, maps them, and every panorama's centre (where its views' centres agree) lies within 1 GSD of the
truth; the orthophoto lies on the true one."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from aeromap_engine import pipeline
from aeromap_engine.geo import WGS84, transform
from aeromap_engine.project import Project
from aeromap_engine.synthetic import SceneSpec, SurveySpec
from aeromap_engine.synthetic.panorama import PanoramaFlight, generate_panoramas
from test_synthetic import OPTIONS, ortho_shifts

SPEC = SurveySpec(scene=SceneSpec(size_m=150.0), make="Insta360", model="Synthetic 360", seed=3,
                  gps_sigma_horizontal_m=0.02, gps_sigma_vertical_m=0.03)


@pytest.mark.long
def test_a_survey_of_360_panoramas(tmp_path: Path, engine_log) -> None:
    truth = generate_panoramas(tmp_path / "survey", SPEC, PanoramaFlight())
    project = Project(tmp_path / "project")
    shutil.copytree(truth.images_dir, project.images_dir)
    with engine_log(), contextlib.redirect_stdout(io.StringIO()):
        pipeline.run(project, OPTIONS)

    shots = json.loads((project.report_dir / "shots.geojson").read_text())["features"]
    centres: dict[str, list[np.ndarray]] = {}
    for shot in shots:
        panorama = shot["properties"]["filename"].rsplit("_", 1)[0] + ".JPG"
        lonlatalt = np.array([shot["geometry"]["coordinates"]])
        centres.setdefault(panorama, []).append(transform(WGS84, truth.crs, lonlatalt)[0])
    assert sorted(centres) == sorted(p.name for p in truth.photographs), "every panorama placed"
    errors, spreads = [], []
    for photo in truth.photographs:
        views = np.array(centres[photo.name])
        errors.append(float(np.linalg.norm(views.mean(axis=0) - photo.position)))
        spreads.append(float(np.linalg.norm(views - views.mean(axis=0), axis=1).max()))
    shifts, _ = ortho_shifts(project, truth)
    displacement = float(np.median(np.hypot(shifts[:, 0], shifts[:, 1])))
    print(f"\n[360] {len(truth.photographs)} panoramas, {len(shots)} views placed; centre error median "
          f"{np.median(errors) / truth.gsd_m:.2f} GSD, worst {max(errors) / truth.gsd_m:.2f} GSD; views of one "
          f"panorama within {max(spreads) / truth.gsd_m:.2f} GSD; orthophoto {displacement / truth.gsd_m:.2f} GSD")
    assert max(errors) <= truth.gsd_m
    assert max(spreads) <= 2 * truth.gsd_m  # the views agree they were taken from one point
    assert displacement <= truth.gsd_m
