"""Fixtures shared by the engine's suites."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ContextManager

import cv2
import numpy as np
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


def clone(source: Project, target: Path) -> Project:
    """A copy of a project to run more stages or other options in, leaving the source as it was."""
    shutil.copytree(source.root, target, symlinks=True)
    return Project(target)


def registered_layers(measured: np.ndarray, truth: np.ndarray, layers: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`layers` (K, h, w) of the truth brought onto the grid of `measured`, where `truth` (one layer, h x w) is
    registered on it: phase correlation over the central 512 px, then an affine fit (ECC) where `mask` holds. The
    GPS leaves a map shifted, and also turned and scaled by a little: a shift alone would leave the texture a pixel
    or two off towards the edges, and a brightness ratio with it by several percent."""
    h, w = measured.shape
    window = np.s_[h // 2 - 256:h // 2 + 256, w // 2 - 256:w // 2 + 256]
    (dx, dy), _ = cv2.phaseCorrelate(truth[window].copy(), measured[window].copy(),
                                     cv2.createHanningWindow((512, 512), cv2.CV_32F))
    warp = np.float32([[1, 0, -dx], [0, 1, -dy]])  # where in the truth each pixel of the map lies
    _, warp = cv2.findTransformECC(measured, truth, warp, cv2.MOTION_AFFINE,
                                   (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 100, 1e-6),
                                   mask.astype(np.uint8), 5)
    return np.stack([cv2.warpAffine(layer, warp, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
                     for layer in layers])


def with_and_without_corrections(corrected: Project, options: list[dict], plain_root: Path) -> Project:
    """`corrected` (its photographs in place) processed with the photometric corrections (the default), and the
    same photographs processed without them at `plain_root`, which is returned."""
    pipeline.run(corrected, options)
    plain = Project(plain_root)
    plain.images_dir.mkdir(parents=True)
    for path in corrected.images_dir.iterdir():
        (plain.images_dir / path.name).symlink_to(path)
    pipeline.run(plain, options + [{"name": "photometric-correction", "value": False}])
    return plain


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Project]) -> Project:
    """The project `build` makes in the folder it is given, made once for the whole run: pytest-xdist's workers
    share the parent of their temporary folders, where the first to need it builds under a lock and the others wait
    for it. Never changed in place: tests clone it."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build(factory.mktemp(name) / "p")
    folder = factory.getbasetemp().parent / f"shared-{name}"
    folder.mkdir(exist_ok=True)
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "built").exists():
            shutil.rmtree(folder / "p", ignore_errors=True)  # a build that failed part-way
            build(folder / "p")
            (folder / "built").touch()
    return Project(folder / "p")


# The structure from motion of the suites built on `sparse`: at a quarter of the full size, "ultra" keeps enough
# features to tie the photographs together.
ULTRA = [{"name": "feature-quality", "value": "ultra"}]


def _sparse(root: Path) -> Project:
    (root / "images").mkdir(parents=True)
    for name in BRIGHTON_SIX:
        with Image.open(datasets_dir() / "brighton_beach" / "images" / f"{name}.JPG") as image:
            small = image.resize((image.width // 4, image.height // 4), Image.Resampling.LANCZOS)
            small.save(root / "images" / f"{name}.JPG", quality=92, exif=image.info["exif"],
                       xmp=image.info.get("xmp"))
    project = Project(root)
    pipeline.run(project, ULTRA + [{"name": "end-with", "value": "opensfm"}])
    return project


@pytest.fixture(scope="session")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """BRIGHTON_SIX downscaled to 1000 px through structure from motion (features at the full 1000 px): the
    reconstruction that the products', meshing, texturing and report suites build on."""
    return built_once(tmp_path_factory, "sparse", _sparse)


@pytest.fixture(scope="session")
def dense(sparse: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """`sparse` on to the filtered dense cloud: what the meshes and the products are made from."""
    def build(root: Path) -> Project:
        project = clone(sparse, root)
        pipeline.run(project, ULTRA + [{"name": "end-with", "value": "odm_filterpoints"}])
        return project
    return built_once(tmp_path_factory, "dense", build)


@pytest.fixture(scope="session")
def meshed(dense: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """`dense` on to the default meshes (3D and 2.5D)."""
    def build(root: Path) -> Project:
        project = clone(dense, root)
        pipeline.run(project, ULTRA + [{"name": "end-with", "value": "odm_meshing"}])
        return project
    return built_once(tmp_path_factory, "meshed", build)


@pytest.fixture(scope="session")
def products(dense: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A full run at default options but the textured models (the meshing and texturing suites make them), with
    DSM, DTM and the PNG orthophoto; made beside the meshes, not after them."""
    def build(root: Path) -> Project:
        project = clone(dense, root)
        pipeline.run(project, ULTRA + [{"name": name, "value": True}
                                       for name in ("skip-3dmodel", "dsm", "dtm", "orthophoto-png")])
        return project
    return built_once(tmp_path_factory, "products", build)
