"""Fixtures shared by the engine's suites."""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ContextManager

import pytest
from PIL import Image

from aeromap_engine import pipeline
from aeromap_engine.log import log
from aeromap_engine.project import Project

# Six Brighton Beach photographs: two flight lines over the park, the car park and the sea.
BRIGHTON_SIX = ("DJI_0027", "DJI_0028", "DJI_0029", "DJI_0030", "DJI_0031", "DJI_0032")


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


@pytest.fixture(scope="session")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """BRIGHTON_SIX downscaled to 1000 px through structure from motion (features at the full 1000 px), once per
    test process: the reconstruction that the products', meshing, texturing and report suites copy and build on.
    Never changed in place."""
    root = tmp_path_factory.mktemp("sparse")
    (root / "images").mkdir()
    for name in BRIGHTON_SIX:
        with Image.open(datasets_dir() / "brighton_beach" / "images" / f"{name}.JPG") as image:
            small = image.resize((image.width // 4, image.height // 4), Image.Resampling.LANCZOS)
            small.save(root / "images" / f"{name}.JPG", quality=92, exif=image.info["exif"],
                       xmp=image.info.get("xmp"))
    project = Project(root)
    pipeline.run(project, [{"name": "feature-quality", "value": "ultra"}, {"name": "end-with", "value": "opensfm"}])
    return project
