"""A survey mapped in overlapping blocks where one mapping of all its images would not fit in memory.

The incremental mapper holds every image it has registered (keypoints, matches, points) and its global
adjustments hold their observations, so its memory grows with the keypoints of the images it maps, past what a
machine holds on large surveys of large photographs (bench/NOTES.md). A survey whose
keypoints are more than MAPPING_MEMORY holds is cut by GPS position into blocks of what it does hold
(split/plan.py, whose cap keeps k-means from making one block of far more images than the others), each grown by
the images around it. The blocks are mapped one after another (side by side where memory allows), each in a
process of its own that hands its memory back when it ends; they are then moved into one frame on the images they
share (split/align.py, which refuses a join on too few shared images, on images along one line, or one that leaves
them apart) and joined into one model with the points that tie them across their borders (groups.merge).
Georeferencing adjusts the joined model as a whole, as it does a model mapped at once. Blocks that cannot all be
joined are given up for one mapping of all the images.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pycolmap
from scipy.spatial import cKDTree

from ..errors import InputError
from ..log import log, log_count
from ..parallel import ForkedCall, forked_map, shared_progress
from ..resources import available_memory
from ..split.align import align_submodels
from ..split.plan import MAX_CORE_EXCESS, Submodel, plan_submodels
from .database import keypoint_counts
from .groups import joined
from .mapping import MappingSettings, reconstruct
from .survey import Survey

# What a mapping holds at its peak per keypoint of the images it maps: the keypoints and their matches, their part
# of the model and of the global adjustments, with what its process inherited: the peak of 12 MP photographs at a
# full keypoint budget (bench/NOTES.md). An image's size and the feature quality and budget act through the
# keypoints they yield; the mapper reads no pixels. Matches and points grow more slowly than keypoints, so the
# bound is generous for small budgets.
MAPPING_BYTES_PER_KEYPOINT = 1_200
MAPPING_MEMORY = 2_000_000_000  # what the mapping of a survey may hold, whatever its size
MIN_BLOCK_IMAGES = 50  # fewer leave too little of a block away from its borders
CORE_SHARE = 2 / 3  # of a block: its own images; the images around them fill the rest
# A block grows by the images closer to one of its own than the median distance from an image to its 12th
# nearest: about two flight lines on either side of its border, enough views shared to join the blocks on.
OVERLAP_NEIGHBOURS = 12


def mapping_memory() -> int:
    return min(MAPPING_MEMORY, available_memory())


def mapping_bytes(keypoints: Iterable[int]) -> int:
    """What a mapping of images with these keypoint counts holds at its peak."""
    return MAPPING_BYTES_PER_KEYPOINT * sum(keypoints)


def block_images(memory: int, image_bytes: float) -> int:
    """How many images one mapping may hold in `memory` bytes, each holding `image_bytes`."""
    return max(MIN_BLOCK_IMAGES, int(memory // max(1.0, image_bytes)))


def plan_blocks(names: list[str], xy: np.ndarray, keypoints: dict[str, int], memory: int) -> list[Submodel]:
    """The blocks to map the images in, from their horizontal positions (n, 2) in metres and their keypoint
    counts: none where one mapping holds them all. A block's core is held to CORE_SHARE of what a mapping holds,
    whatever k-means makes of the survey's density (plan.most_core), so k-means aims below it."""
    total = mapping_bytes(keypoints[n] for n in names)
    if total <= memory:
        return []
    most = block_images(memory, total / len(names))
    target = max(2, int(most * CORE_SHARE / MAX_CORE_EXCESS))
    planned = plan_submodels(names, xy, target, overlap_radius(xy))
    return [replace(block, name=f"block_{index:04d}") for index, block in enumerate(planned)]


def overlap_radius(xy: np.ndarray) -> float:
    distances, _ = cKDTree(xy).query(xy, k=min(len(xy), OVERLAP_NEIGHBOURS + 1))
    return float(np.median(distances[:, -1]))


def mapping_blocks(survey: Survey, database: Path) -> list[Submodel]:
    """The blocks to map a survey in where one mapping of all its images would not fit in memory, judged by
    the keypoints the matching database holds of each; none where it fits, or where the survey cannot be cut by
    GPS position."""
    names = [p.filename for p in survey.photos]
    blocks = plan_blocks(names, np.nan_to_num(survey.positions[:, :2]), keypoint_counts(database), mapping_memory())
    if blocks and (survey.frame.source != "gps" or not np.isfinite(survey.positions[:, :2]).all()):
        log.warning("%d images are more than one mapping holds within %.1f GB, but only a survey that every image's "
                    "GPS georeferences can be mapped in blocks: mapping them all at once", len(names),
                    mapping_memory() / 1e9)
        return []
    return blocks


@dataclass(frozen=True)
class BlockMapping:
    """The mapping of one block in a forked process: its largest model comes back through a file (pycolmap's
    models do not pickle), its progress through shared memory."""
    database: Path
    images_dir: Path
    work_dir: Path
    settings: MappingSettings
    blocks: list[Submodel]
    done: Sequence[float]  # each block's share of images registered (parallel.shared_progress)
    own_database: bool  # mapped beside others: two mappers cannot open one database at once

    def __call__(self, index: int) -> tuple[Path | None, str]:
        block = self.blocks[index]
        work_dir = self.work_dir / block.name
        work_dir.mkdir(parents=True, exist_ok=True)
        database = shutil.copyfile(self.database, work_dir / "database.db") if self.own_database else self.database
        registered = 0

        def on_registered() -> None:
            nonlocal registered
            registered += 1
            self.done[index] = min(1.0, registered / len(block.images))
            log_count(f"Images registered in {block.name}", registered, len(block.images))

        models, algorithm = reconstruct(database, self.images_dir, work_dir / "models",
                                        replace(self.settings, images=block.images), on_registered)
        if not models:
            return None, algorithm
        folder = work_dir / "largest"
        folder.mkdir()
        models[0].write(folder)
        return folder, algorithm


def map_in_blocks(database: Path, images_dir: Path, work_dir: Path, settings: MappingSettings,
                  blocks: list[Submodel], report: Callable[[float], None]
                  ) -> tuple[list[pycolmap.Reconstruction], str] | None:
    """The blocks mapped and joined into one model, and the algorithm that mapped them; None where a block found
    no model or the blocks cannot be joined (split/align.py)."""
    largest = max(len(block.images) for block in blocks)
    counts = keypoint_counts(database)
    heaviest = max(mapping_bytes(counts[name] for name in block.images) for block in blocks)
    workers = max(1, min(len(blocks), settings.threads, mapping_memory() // heaviest))
    log.info("Mapping %d images in %d overlapping blocks of up to %d (%.2f GB at most), %d at a time, within "
             "%.1f GB", len({name for block in blocks for name in block.images}), len(blocks), largest,
             heaviest / 1e9, workers, mapping_memory() / 1e9)
    with shared_progress(len(blocks), report) as done:
        each = replace(settings, threads=max(1, settings.threads // workers))
        job = BlockMapping(database, images_dir, work_dir, each, blocks, done, own_database=workers > 1)
        if workers > 1:
            results = list(forked_map(job, range(len(blocks)), workers))
        else:  # still each in a process of its own, so that none keeps the memory of the one before
            results = [ForkedCall(functools.partial(job, i), f"Mapping {b.name}").wait() for i, b in enumerate(blocks)]
    if any(folder is None for folder, _ in results):
        return None
    models = [pycolmap.Reconstruction(folder) for folder, _ in results]
    try:
        joins = align_submodels(models, [block.name for block in blocks])
    except InputError as refused:
        log.warning("The blocks cannot be joined: %s", refused)
        return None
    for j in joins:
        log.info("Joined %s to %s on %d shared images: camera centres agree within %.3f m (RMS; at most %.3f m)",
                 blocks[j.source].name, blocks[j.target].name, j.shared, j.residual_m, j.bound_m)
    return [joined(models)], results[0][1]
