"""A split survey through real nodes, as a user runs one: PyODM sends Brighton Beach's 18 photographs (scaled
down, EXIF kept) to one node with split and sm-cluster naming three others; that node's engine cuts the survey
into two submodels, sends them through the NodeODM protocol to the nodes they fit (one node takes at most 4
photographs), and merges what comes back. One node is lost (killed with its engine) while it runs a submodel,
which runs again on another. The merged products must cover both submodels and meet at the cutline without a
step (pytest -s prints the figures)."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import numpy as np
import psutil
import pytest
import rasterio
from rasterio.enums import Resampling
from rasterio.vrt import WarpedVRT
from pyodm.types import TaskStatus

from conftest import IMAGES, wait_for_status
from test_node_real_engine import small_copies

NODATA = -9999.0


def heights_on(path: Path, like: rasterio.DatasetReader) -> np.ndarray:
    """A DSM resampled onto another's grid as the merge resamples it (bilinear), NaN where it has no data."""
    with rasterio.open(path) as dsm, WarpedVRT(dsm, crs=like.crs, transform=like.transform, width=like.width,
                                               height=like.height, nodata=NODATA,
                                               resampling=Resampling.bilinear) as vrt:
        z = vrt.read(1).astype(float)
    return np.where(z == NODATA, np.nan, z)


@pytest.mark.long
def test_split_survey_survives_a_lost_node_and_merges_without_a_step(start_node, tmp_path: Path) -> None:
    lost, kept, small = start_node(engine=None), start_node(engine=None), start_node("--max-images", "4", engine=None)
    parent = start_node("--allow-private-urls", engine=None)  # the workers listen on loopback
    images = small_copies(tmp_path / "images", sorted(p.name for p in IMAGES.iterdir()), width=1000)
    options = {"split": 10, "split-overlap": 40, "sm-cluster": ",".join(w.url for w in (lost, kept, small)),
               "dsm": True, "pc-quality": "low", "orthophoto-resolution": 10, "dem-resolution": 10}
    task = parent.client().create_task(images, options, name="split")
    # The first node is lost while it runs its submodel: the machine gone, engine and all. Planning the split
    # takes minutes on a busy machine, so the wait is for the parent's run, not for a fixed time.
    running = (TaskStatus.QUEUED, TaskStatus.RUNNING)
    while not lost.client().info().task_queue_count and task.info().status in running:
        time.sleep(0.5)
    assert lost.client().info().task_queue_count, f"no submodel reached {lost.url}:\n" + "\n".join(task.output()[-40:])
    time.sleep(3)
    # Frozen first, then killed: a node that outlived its engine for a moment would answer that the submodel
    # failed, which is another path (a node that fails it) than a machine gone.
    node = psutil.Process(lost.proc.pid)
    processes = [node] + node.children(recursive=True)
    for process in processes:
        process.suspend()
    for process in processes:
        process.kill()
    task.wait_for_completion(interval=1)
    output = task.output()
    assert task.info().status == TaskStatus.COMPLETED, "\n".join(output[-40:])

    # Both submodels came back from the node that stayed; the lost one's ran again there; the small node, which
    # takes 4 photographs, got none.
    assert sum(f"done on 127.0.0.1:{kept.port}" in line for line in output) == 2, "\n".join(output[-40:])
    assert any(f"{lost.url} was lost" in line and "running it again on another node" in line
               for line in output), "\n".join(output[-40:])
    assert not any(f"127.0.0.1:{small.port}" in line for line in output if "sending" in line)
    project = parent.task_dir(task.uuid)
    plan = json.loads((project / "submodels" / "plan.json").read_text())["submodels"]
    assert len(plan) == 2 and sorted(n for s in plan for n in s["core"]) == sorted(Path(i).name for i in images)
    with zipfile.ZipFile(task.download_zip(str(tmp_path / "download"))) as archive:
        names = set(archive.namelist())
    assert {"odm_orthophoto/odm_orthophoto.tif", "odm_dem/dsm.tif",
            "odm_georeferencing/odm_georeferenced_model.laz"} <= names

    dsms = [project / "submodels" / s["name"] / "odm_dem" / "dsm.tif" for s in plan]
    with rasterio.open(project / "odm_dem" / "dsm.tif") as merged:
        z = np.where(merged.read(1) == NODATA, np.nan, merged.read(1).astype(float))
        parts = [heights_on(path, merged) for path in dsms]
        cols, rows = np.meshgrid(np.arange(merged.width), np.arange(merged.height))
        x, y = rasterio.transform.xy(merged.transform, rows.ravel(), cols.ravel())
        cell = merged.res[0]
    xy = np.c_[x, y]
    cores = [np.array(s["core_cameras"]) for s in plan]
    nearest = np.stack([np.min(np.linalg.norm(xy[:, None] - c[None], axis=2), axis=1) for c in cores])
    gap = (nearest[1] - nearest[0]).reshape(z.shape)  # > 0 where submodel 0 owns the ground
    # The merged DSM covers what either submodel covers.
    assert np.isfinite(z).sum() >= max(np.isfinite(p).sum() for p in parts)
    # Well inside its own ground, each place has its owner's heights.
    own_differs = []
    for index, own in ((0, gap > 30), (1, gap < -30)):
        both = own & np.isfinite(z) & np.isfinite(parts[index])
        differs = np.median(np.abs(z - parts[index])[both])
        assert both.sum() > 1000 and differs < 0.01, f"submodel {index}'s own ground differs by {differs:.3f} m"
        own_differs.append(differs)
    # On the cutline the submodels, aligned on their shared photographs, agree to within a few GSD where both saw
    # the ground: their dense clouds come from two separate runs, each with the lens calibration its own
    # photographs refined, which leaves them several GSD (5.8 cm here) apart in height. The merge must hide
    # that (the step check below).
    band = (np.abs(gap) < 5) & np.isfinite(parts[0]) & np.isfinite(parts[1])
    assert band.sum() > 1000
    offset = np.median((parts[0] - parts[1])[band])
    assert abs(offset) < 3 * cell, f"the submodels' DSMs differ by {offset:.3f} m at the cutline"
    # Across the cutline the merged DSM changes no more than elsewhere: no step.
    steps = np.abs(np.diff(z, axis=1))
    near, far = (np.abs(gap[:, 1:]) < 3) & np.isfinite(steps), (np.abs(gap[:, 1:]) > 20) & np.isfinite(steps)
    print(f"\nmerged DSM against each owner's, median: {own_differs[0] * 100:.2f} and {own_differs[1] * 100:.2f} cm; "
          f"submodels' DSMs at the cutline: median difference {offset * 100:.1f} cm over {band.sum()} cells; "
          f"merged DSM's median step between cells {np.median(steps[near]) * 100:.2f} cm at the cutline, "
          f"{np.median(steps[far]) * 100:.2f} cm away from it")
    assert np.median(steps[near]) < 1.5 * np.median(steps[far]) + 0.01


def test_a_node_for_public_urls_refuses_to_send_submodels_to_its_own_network(start_node, tmp_path: Path) -> None:
    parent = start_node(engine=None)
    images = small_copies(tmp_path / "images", sorted(p.name for p in IMAGES.iterdir())[:6], width=400)
    task = parent.client().create_task(images, {"split": 3, "sm-cluster": "http://127.0.0.1:9"}, name="refused")
    info = wait_for_status(task, {TaskStatus.FAILED, TaskStatus.COMPLETED}, timeout=120)
    assert info.status == TaskStatus.FAILED
    assert any("127.0.0.1 is not a public address" in line for line in task.output())
