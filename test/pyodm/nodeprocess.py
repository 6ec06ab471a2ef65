"""One `aeromap node` process started as a user would, on a free port with a fresh data folder: for PyODM to drive
in the protocol tests, and for the split benchmark's processing nodes."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import time
from pathlib import Path

from pyodm import Node

ROOT = Path(__file__).resolve().parents[2]
AEROMAP = ROOT / "bin" / "aeromap"
FAKE_ENGINE = Path(__file__).with_name("fake_engine.py")


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
