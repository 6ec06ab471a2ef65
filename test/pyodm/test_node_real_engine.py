"""The node running the real engine (engine/.venv/bin/aeromap-engine) on real photographs, kept light: a few
Brighton Beach images scaled down (EXIF kept), and end-with so that only the first stages run."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from PIL import Image
from pyodm.types import TaskStatus

from conftest import IMAGES


def small_copies(folder: Path, names: list[str], width: int = 1000) -> list[str]:
    folder.mkdir()
    paths = []
    for name in names:
        with Image.open(IMAGES / name) as img:
            exif = img.info.get("exif", b"")
            img.resize((width, round(img.height * width / img.width))).save(folder / name, quality=90, exif=exif)
        paths.append(str(folder / name))
    return paths


def test_real_engine_processes_real_images_to_completion(start_node, tmp_path: Path) -> None:
    node = start_node(engine=None)
    info = node.client().info()
    assert info.engine == "aeromap" and info.engine_version[0].isdigit()
    assert "end-with" in {o.name for o in node.client().options()}

    images = small_copies(tmp_path / "images", [f"DJI_00{n}.JPG" for n in range(18, 23)])
    task = node.client().create_task(images, {"end-with": "opensfm", "max-concurrency": 2}, name="real")
    task.wait_for_completion(interval=0.5)

    info = task.info()
    assert info.status == TaskStatus.COMPLETED, task.output()
    assert info.images_count == 5 and info.progress == 100
    output = task.output()
    assert any("Running stage dataset" in line for line in output)
    assert output[-1].startswith("[INFO] all.zip holds")
    with zipfile.ZipFile(task.download_zip(str(tmp_path / "download"))) as archive:
        assert "task_output.txt" in archive.namelist()
        assert "Running stage dataset" in archive.read("task_output.txt").decode()
    report = node.task_dir(task.uuid) / "odm_report" / "stats.json"
    assert "dataset" in json.loads(report.read_text())["stages"]
