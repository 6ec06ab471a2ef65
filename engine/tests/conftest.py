"""Fixtures shared by the engine's suites."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ContextManager

import pytest

# GNU OpenMP's threads spin on the CPU while they wait for work; with more processes than cores (the suite's
# workers beside the TypeScript suite on a 2-core machine) a spinning thread holds the core that the thread it
# waits for needs, and MeshLab's filters took several times as long. Waiting threads that sleep give the same
# results. Read when libgomp loads, so set before the engine (and MeshLab) is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from aeromap_engine.log import log  # noqa: E402


class EngineLog:
    """The engine's log messages (one a line, without their level) written so far, read back from the file they go
    to."""

    def __init__(self, path: Path) -> None:
        self._path = path

    @property
    def lines(self) -> list[str]:
        return self._path.read_text().splitlines()

    @property
    def text(self) -> str:
        return self._path.read_text()


@contextlib.contextmanager
def _capture(level: int = logging.INFO) -> Iterator[EngineLog]:
    # The stages run in child processes, which inherit a file handler (every record flushed, appended) where
    # pytest's own capture would keep their records in the child's memory.
    handler_level = log.level
    with tempfile.TemporaryDirectory(prefix="engine-log.") as folder:
        path = Path(folder) / "engine.log"
        handler = logging.FileHandler(path, delay=False)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(level)
        try:
            yield EngineLog(path)
        finally:
            log.removeHandler(handler)
            handler.close()
            log.setLevel(handler_level)


@pytest.fixture(scope="session")
def engine_log() -> Callable[..., ContextManager[EngineLog]]:
    """engine_log(level=INFO): a context in which the engine's log messages of that level and above, written by
    this process and by the child processes the stages run in, are kept; `.lines` and `.text` read them."""
    return _capture


def datasets_dir() -> Path:
    """The real surveys' folder, shared/datasets beside the checkout (a worktree's checkout sits one level deeper)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "shared" / "datasets").is_dir():
            return folder / "shared" / "datasets"
    raise FileNotFoundError(f"no shared/datasets above {Path(__file__).parent}")


@pytest.fixture(scope="session")
def datasets() -> Path:
    return datasets_dir()
