"""Ground control points without GPS on a real survey: copr, 41 kite photographs whose 10 control points were
published without heights (all 0.0), here the 23 photographs that see most of them.

Expected values come from the control-point file itself (which points can be located, the heights it gives), not
from the engine's output.
"""

from __future__ import annotations

import json
import shutil

import pytest

from aeromap_engine import pipeline
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
