"""The node across its own death: kill -9 at any moment loses no task and no console line, running tasks resume
where the engine left them, finished ones keep their figures and downloads; and old tasks are cleaned up."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import requests
from pyodm.exceptions import NodeResponseError
from pyodm.types import TaskStatus

from conftest import make_images, pid_alive, wait_until


def test_sigkill_while_a_task_runs_then_the_task_resumes_and_finishes(start_node, tmp_path: Path) -> None:
    node = start_node()
    task = node.client().create_task(make_images(tmp_path, 2), {"fake-seconds": 2.5})
    folder = node.task_dir(task.uuid)
    wait_until(lambda: "[INFO] Running stage opensfm" in task.output())
    before = task.output()
    engine_pid = int((folder / "fake" / "pid").read_text())

    node.stop(signal.SIGKILL)
    # The engine has its own process group: it outlives the node, which must stop it when it comes back.
    assert pid_alive(engine_pid)
    node.start()
    assert not pid_alive(engine_pid)
    assert task.info().status in (TaskStatus.QUEUED, TaskStatus.RUNNING)
    task.wait_for_completion(interval=0.2)

    output = task.output()
    assert output[: len(before)] == before
    assert "[INFO] The processing node restarted: resuming the task" in output
    runs = (folder / "fake" / "runs.txt").read_text().split()
    assert runs.count("dataset") == 1  # the finished stage was not run again
    assert runs[-2:] == ["opensfm", "odm_orthophoto"]

    finished = task.info()
    node.stop(signal.SIGKILL)
    node.start()
    again = task.info()
    assert (again.status, again.progress, again.processing_time) == (
        TaskStatus.COMPLETED, 100, finished.processing_time)
    assert task.output() == output
    assert Path(task.download_zip(str(tmp_path / "download"))).stat().st_size > 0


def test_sigkill_during_a_chunked_upload_keeps_what_was_uploaded(start_node, tmp_path: Path) -> None:
    node = start_node()
    images = make_images(tmp_path, 2)
    uuid = requests.post(f"{node.url}/task/new/init", files={"name": (None, "resumed upload")}).json()["uuid"]
    with open(images[0], "rb") as first:
        assert requests.post(f"{node.url}/task/new/upload/{uuid}", files={"images": first}).json() == {
            "success": True}
    node.stop(signal.SIGKILL)
    node.start()
    with open(images[1], "rb") as second:
        assert requests.post(f"{node.url}/task/new/upload/{uuid}", files={"images": second}).json() == {
            "success": True}
    assert requests.post(f"{node.url}/task/new/commit/{uuid}").json() == {"uuid": uuid}
    # A commit whose answer was lost can be sent again.
    assert requests.post(f"{node.url}/task/new/commit/{uuid}").json() == {"uuid": uuid}
    task = node.client().get_task(uuid)
    task.wait_for_completion(interval=0.2)
    assert (task.info().name, task.info().images_count) == ("resumed upload", 2)


def test_finished_tasks_and_abandoned_uploads_are_cleaned_up(start_node, tmp_path: Path) -> None:
    node = start_node("--cleanup-after", "0.02")  # 1.2 seconds
    task = node.client().create_task(make_images(tmp_path, 2))
    task.wait_for_completion(interval=0.2)
    abandoned = requests.post(f"{node.url}/task/new/init").json()["uuid"]
    assert (node.data_dir / "uploads" / abandoned).is_dir()

    def gone() -> bool:
        try:
            task.info()
            return False
        except NodeResponseError:
            return True

    wait_until(gone, timeout=20)
    wait_until(lambda: not node.task_dir(task.uuid).exists())
    wait_until(lambda: not (node.data_dir / "uploads" / abandoned).exists(), timeout=20)
    answer = requests.post(f"{node.url}/task/new/upload/{abandoned}", files={"images": ("a.jpg", b"x")})
    assert answer.json() == {"error": "Invalid uuid (not found)"}


@pytest.mark.parametrize("flag", ["--parallel-tasks=0", "--max-images=-1", "--cleanup-after=soon"])
def test_bad_flags_are_refused(flag: str, tmp_path: Path) -> None:
    import subprocess

    from nodeprocess import AEROMAP

    proc = subprocess.run([str(AEROMAP), "node", "--data-dir", str(tmp_path), flag], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "error: option" in proc.stderr
