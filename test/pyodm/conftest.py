"""Starts `bin/aeromap node` as a user would, on a free port with a fresh data folder, for PyODM to drive."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from pyodm import Node
from pyodm.types import TaskStatus

ROOT = Path(__file__).resolve().parents[2]
AEROMAP = ROOT / "bin" / "aeromap"
FAKE_ENGINE = Path(__file__).with_name("fake_engine.py")
IMAGES = ROOT.parent / "shared" / "datasets" / "brighton_beach" / "images"


class NodeProcess:
    """One `aeromap node` process; `restart` starts it again on the same port and data folder."""

    def __init__(self, data_dir: Path, *flags: str, engine: Path | None = FAKE_ENGINE) -> None:
        self.data_dir = data_dir
        self.flags = list(flags) + (["--engine", str(engine)] if engine else [])
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> "NodeProcess":
        # stderr goes to a file: a pipe nobody reads would block the node once full.
        self.log = self.data_dir.with_name(self.data_dir.name + "-stderr.log")
        self.proc = subprocess.Popen(
            [str(AEROMAP), "node", "--host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", str(self.data_dir), *self.flags],
            stdout=subprocess.PIPE, stderr=open(self.log, "a"), text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                match = re.search(r"listening on http://[^:]+:(\d+)", line)
                if match:
                    self.port = int(match.group(1))
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"aeromap node exited: {self.log.read_text()}")
        raise RuntimeError("aeromap node did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def client(self, token: str = "") -> Node:
        return Node("127.0.0.1", self.port, token=token)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def task_dir(self, uuid: str) -> Path:
        return self.data_dir / "tasks" / uuid


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
