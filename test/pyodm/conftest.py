"""Starts `bin/aeromap node` as a user would, on a free port with a fresh data folder, for PyODM to drive."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from pyodm.types import TaskStatus

from nodeprocess import FAKE_ENGINE, ROOT, NodeProcess

IMAGES = ROOT.parent / "shared" / "datasets" / "brighton_beach" / "images"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long: left out of make test to keep it within CI's time; make test-long "
                                       "runs them")


@pytest.fixture
def start_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A function that starts a node with the given flags; every node started is stopped at the end."""
    started: list[NodeProcess] = []

    def start(*flags: str, engine: Path | None = FAKE_ENGINE) -> NodeProcess:
        node = NodeProcess(tmp_path_factory.mktemp("node-data"), *flags, engine=engine).start()
        started.append(node)
        return node

    yield start
    for node in started:
        node.stop()


def make_images(folder: Path, count: int, size: tuple[int, int] = (64, 48)) -> list[str]:
    """Small JPEG files, enough for a node that runs the fake engine."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"IMG_{i:04d}.JPG"
        Image.new("RGB", size, (i * 40 % 256, 120, 200)).save(path, quality=80)
        paths.append(str(path))
    return paths


def wait_for_status(task, wanted: set[TaskStatus], timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = task.info()
        if info.status in wanted:
            return info
        time.sleep(0.1)
    raise AssertionError(f"task {task.uuid} never reached {wanted}")


def wait_until(condition, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has exited already
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False
