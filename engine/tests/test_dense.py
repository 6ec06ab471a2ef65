"""The dense stage on a reconstruction that once made it fail: the 18 Brighton Beach photographs scaled to
1000 x 750 px (their EXIF still saying 4000 x 2250), stopped after opensfm (shared/datasets/repro_dense_crash). At
`pc-quality lowest` the pair DJI_0030 - DJI_0032 (a 31 m baseline) needs disparities of 118 to 262 px on a
255 px rectified canvas: searched where they lie, semi-global matching had no column to compute and OpenCV
failed to allocate a negative size."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from aeromap_engine import pipeline
from aeromap_engine.io.exif import exif_tags
from aeromap_engine.io.ply import read_ply
from aeromap_engine.project import Project
from aeromap_engine.stages.dataset import inspect_image


def _writable_copy(source: Path, target: Path) -> Project:
    """A copy of a read-only project folder that the stages can write into."""
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return Project(target)


def test_dense_stage_matches_every_image_of_a_long_baseline_survey(datasets: Path, tmp_path: Path,
                                                                   engine_log) -> None:
    project = _writable_copy(datasets / "repro_dense_crash", tmp_path / "project")
    options = json.loads((project.root / "options.json").read_text()) + [{"name": "end-with", "value": "openmvs"}]
    with engine_log() as captured:
        pipeline.run(project, options)
        assert not [line for line in captured.lines if line.startswith("No depth from")]
    figures = json.loads(project.stats_file.read_text())["dense"]
    assert figures["working_size"] == 320 and figures["depth_maps"] == 18
    dense = read_ply(project.dense_cloud)
    assert len(dense) > 100_000  # 126,888 measured
    sparse = read_ply(project.path("opensfm", "sparse.ply"))
    ties = sparse.xyz[sparse.views >= 3].astype(np.float64)
    distance, index = cKDTree(dense.xyz).query(ties)
    assert np.mean(distance < 0.5) > 0.9  # the dense surface passes through the tie points (96 %)...
    assert abs(np.median(ties[:, 2] - dense.xyz[index, 2])) < 0.1  # ...without a height bias (1 cm)
    z = dense.xyz[:, 2]
    assert np.mean((z < ties[:, 2].min() - 3) | (z > ties[:, 2].max() + 3)) < 0.03  # and nothing flies off (1 %)


def test_photograph_sizes_come_from_the_pixels_not_the_exif(datasets: Path) -> None:
    """Scaling tools keep the capture's EXIF image size: the cameras, and so the working images and their
    rectified canvases, must be sized by the decoded pixels."""
    path = datasets / "repro_dense_crash" / "images" / "DJI_0030.JPG"
    tags = exif_tags(path.read_bytes())
    assert (tags["ExifImageWidth"], tags["ExifImageHeight"]) == (4000, 2250)
    photo = inspect_image(path).photo
    assert (photo.width, photo.height) == (1000, 750)
