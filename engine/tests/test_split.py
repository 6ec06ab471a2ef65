"""A split survey processed here: Brighton Beach's 18 photographs (a quarter of their size) cut into two
submodels, each processed by an engine process of its own, and merged. The merged products must hold each
place once, from the submodel that owns it, and the run's progress must only move forward."""

from __future__ import annotations

import json

import laspy
import numpy as np
import pytest
import rasterio
from PIL import Image
from scipy.spatial import cKDTree

from aeromap_engine import pipeline
from aeromap_engine.log import PROGRESS_PREFIX
from aeromap_engine.project import Project
from conftest import datasets_dir

DATASET = datasets_dir() / "brighton_beach" / "images"
OPTIONS = [{"name": "split", "value": 9}, {"name": "split-overlap", "value": 30}, {"name": "dsm", "value": True},
           {"name": "pc-quality", "value": "low"}, {"name": "pc-copc", "value": False},
           {"name": "end-with", "value": "merge"}]


@pytest.fixture(scope="module")
def split_run(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("split")
    (root / "images").mkdir()
    for path in sorted(DATASET.iterdir()):
        with Image.open(path) as image:
            small = image.resize((image.width // 4, image.height // 4), Image.Resampling.LANCZOS)
            small.save(root / "images" / path.name, quality=92, exif=image.info["exif"], xmp=image.info.get("xmp"))
    return Project(root)


def progress_of(output: str) -> list[float]:
    return [json.loads(line[len(PROGRESS_PREFIX):])["percent"] for line in output.splitlines()
            if line.startswith(PROGRESS_PREFIX)]


@pytest.mark.long
def test_split_survey_is_processed_in_submodels_and_merged(split_run: Project, capfd: pytest.CaptureFixture) -> None:
    project = split_run
    pipeline.run(project, OPTIONS)
    percents = progress_of(capfd.readouterr().out)  # written by the stages' processes too
    assert percents == sorted(percents) and percents[-1] == 100.0

    plan = json.loads(project.submodel_plan.read_text())["submodels"]
    assert [s["name"] for s in plan] == ["submodel_0000", "submodel_0001"]
    names = sorted(p.name for p in project.image_files())
    assert sorted(n for s in plan for n in s["core"]) == names
    shared = set(plan[0]["images"]) & set(plan[1]["images"])
    assert len(shared) >= 3 and all(len(s["images"]) < len(names) for s in plan)

    # Each submodel ran its own stages from openmvs on; the survey's project ran none of them.
    done = {p.stem for p in project.state_dir.glob("*.done")}
    assert {"dataset", "split", "merge"} <= done and not {"openmvs", "odm_dem", "odm_orthophoto"} & done
    subs = [project.submodel(s["name"]) for s in plan]
    for sub, submodel in zip(subs, plan):
        stats = json.loads(sub.stats_file.read_text())
        assert stats["reconstruction"]["images_registered"] == len(submodel["images"])
        assert stats["stages"]["openmvs"]["seconds"] > 0 and stats["stages"]["opensfm"]["seconds"] == 0
        assert not sub.path("odm_texturing").exists()  # the merge joins no textured model

    # The merged cloud holds each place's points from its owner only: no doubled overlap.
    clouds = [laspy.read(sub.path("odm_georeferencing", "odm_georeferenced_model.laz")) for sub in subs]
    merged = laspy.read(project.path("odm_georeferencing", "odm_georeferenced_model.laz"))
    assert max(len(c.points) for c in clouds) < len(merged.points) < sum(len(c.points) for c in clouds)
    xyz = np.c_[merged.x, merged.y, merged.z]
    owner = np.argmin([cKDTree(np.array(s["core_cameras"])).query(xyz[:, :2])[0] for s in plan], axis=0)
    for k, cloud in enumerate(clouds):
        gaps = cKDTree(np.c_[cloud.x, cloud.y, cloud.z]).query(xyz[owner == k])[0]
        assert (owner == k).sum() > 1000 and gaps.max() < 1e-3  # its owner's points, as they were

    # Orthophoto and DSM cover what the submodels cover, in the survey's CRS.
    for relative in (("odm_orthophoto", "odm_orthophoto.tif"), ("odm_dem", "dsm.tif")):
        with rasterio.open(project.path(*relative)) as whole:
            bounds = [rasterio.open(sub.path(*relative)).bounds for sub in subs]
            assert whole.crs.to_epsg() == merged.header.parse_crs().to_epsg() == 32615  # UTM 15N
            assert whole.bounds.left <= min(b.left for b in bounds) + whole.res[0]
            assert whole.bounds.right >= max(b.right for b in bounds) - whole.res[0]
            assert whole.bounds.top >= max(b.top for b in bounds) - whole.res[0]
    with rasterio.open(project.path("odm_orthophoto", "odm_orthophoto.tif")) as ortho:
        alpha = ortho.read(4, out_shape=(ortho.height // 8, ortho.width // 8))
    assert 0.4 < np.mean(alpha > 0) < 1.0  # a survey's footprint, not a filled rectangle

    # The products, merged side by side, each left their figures in the survey's statistics.
    stats = json.loads(project.stats_file.read_text())
    assert stats["point_cloud"]["points"] == len(merged.points) and stats["point_cloud"]["submodels"] == 2
    assert stats["point_cloud"]["area_m2"] == stats["orthophoto"]["covered_m2"] > 0
    with rasterio.open(project.path("odm_dem", "dsm.tif")) as dsm:
        assert stats["dem"]["dsm"] == {"width": dsm.width, "height": dsm.height}


@pytest.mark.long
def test_a_survey_no_larger_than_split_is_not_split(split_run) -> None:
    project = split_run
    pipeline.run(project, [o for o in OPTIONS if o["name"] != "split"] + [{"name": "split", "value": 18},
                                                                          {"name": "end-with", "value": "opensfm"}])
    assert not project.submodels_dir.exists()  # the earlier run's submodels are gone with its split
    assert (project.state_dir / "opensfm.done").exists()
    assert json.loads(project.stats_file.read_text())["reconstruction"]["images_registered"] == 18


@pytest.mark.long
def test_image_groups_make_the_submodels_and_sm_no_align_leaves_them_unaligned(split_run: Project,
                                                                                engine_log) -> None:
    project = split_run
    names = sorted(p.name for p in project.image_files())
    groups = {name: "first" if i < 9 else "second" for i, name in enumerate(names)}
    project.ancillary_dir.mkdir(exist_ok=True)
    (project.ancillary_dir / "image_groups.txt").write_text("".join(f"{n} {g}\n" for n, g in groups.items()))
    options = [o for o in OPTIONS if o["name"] != "split"] + [
        {"name": "split-image-groups", "value": "image_groups.txt"}, {"name": "sm-no-align", "value": True}]
    with engine_log() as captured:
        pipeline.run(project, options)
        text = captured.text
    plan = json.loads(project.submodel_plan.read_text())["submodels"]
    assert sorted(sorted(s["core"]) for s in plan) == [names[:9], names[9:]]  # the groups, not k-means' cut
    assert "Submodels left where their own GPS placed them (sm-no-align)" in text and "Aligned submodel" not in text
    assert project.path("odm_orthophoto", "odm_orthophoto.tif").exists()
