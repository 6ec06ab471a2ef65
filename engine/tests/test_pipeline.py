"""The stage framework on real images: options, resume, rerun-from, end-with and refusal of bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aeromap_engine import pipeline
from aeromap_engine.errors import InputError, OptionsError
from aeromap_engine.options import resolve
from aeromap_engine.project import Project
from conftest import datasets_dir

DATASET = datasets_dir() / "brighton_beach" / "images"


@pytest.fixture()
def project(tmp_path: Path) -> Project:
    images = tmp_path / "images"
    images.mkdir()
    for name in ("DJI_0018.JPG", "DJI_0019.JPG"):
        shutil.copy(DATASET / name, images / name)
    return Project(tmp_path)


def test_options_command_lists_nodeodm_shapes() -> None:
    out = subprocess.run([sys.executable, "-m", "aeromap_engine.cli", "options"], capture_output=True, text=True,
                         check=True).stdout
    options = json.loads(out)
    assert {tuple(sorted(o)) for o in options} == {("domain", "help", "name", "type", "value")}
    assert all(isinstance(o["value"], str) for o in options)
    rerun = next(o for o in options if o["name"] == "rerun-from")
    assert rerun["domain"][0] == "" and "odm_orthophoto" in rerun["domain"]


def test_values_are_converted_and_checked() -> None:
    opts, dropped = resolve(pipeline.all_options(), [{"name": "max-concurrency", "value": "3"},
                                                     {"name": "no-such-option", "value": 1}])
    assert opts.max_concurrency == 3 and dropped == ["no-such-option"]
    with pytest.raises(OptionsError):
        resolve(pipeline.all_options(), [{"name": "max-concurrency", "value": "0"}])
    with pytest.raises(OptionsError):
        resolve(pipeline.all_options(), [{"name": "end-with", "value": "nowhere"}])
    cameras = {"v2 dji fc300s 4000 2250 brown 0.5556": {"focal_x": 0.7, "focal_y": 0.7}}
    opts, _ = resolve(pipeline.all_options(), [{"name": "cameras", "value": cameras}])
    assert json.loads(opts.cameras) == cameras  # a JSON object sent as itself is kept as JSON text


def test_resume_skips_finished_stages_and_rerun_from_repeats_them(project: Project) -> None:
    pipeline.run(project, [{"name": "end-with", "value": "dataset"}])
    marker = project.state_dir / "dataset.done"
    first = marker.stat().st_mtime_ns
    pipeline.run(project, [{"name": "end-with", "value": "dataset"}])
    assert marker.stat().st_mtime_ns == first
    pipeline.run(project, [{"name": "end-with", "value": "dataset"}, {"name": "rerun-from", "value": "dataset"}])
    assert marker.stat().st_mtime_ns != first
    stats = json.loads(project.stats_file.read_text())
    assert stats["stages"]["dataset"]["seconds"] >= 0


def test_rerun_from_a_later_stage_than_a_changed_option_runs_from_the_option(project: Project) -> None:
    """skip-3dmodel (odm_meshing) changed, restarted from texturing: the mesh it needs is made first."""
    specs = pipeline.all_options()
    previous = {"skip-3dmodel": True}
    options, _ = resolve(specs, [{"name": "rerun-from", "value": "mvs_texturing"}])
    assert pipeline._first_stage_to_run(project, options, previous, specs) == "odm_meshing"
    options, _ = resolve(specs, [{"name": "rerun-from", "value": "opensfm"}])
    assert pipeline._first_stage_to_run(project, options, previous, specs) == "opensfm"
    options, _ = resolve(specs, [{"name": "rerun-from", "value": "odm_dem"}, {"name": "skip-3dmodel", "value": True}])
    assert pipeline._first_stage_to_run(project, options, previous, specs) == "odm_dem"


def test_too_few_readable_images_is_an_input_error(project: Project) -> None:
    (project.images_dir / "DJI_0019.JPG").write_bytes(b"not a jpeg at all")
    with pytest.raises(InputError, match="at least 2"):
        pipeline.run(project, [])
