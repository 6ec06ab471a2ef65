"""Structure from motion's work on the photographs' pixels: the features of every photograph, found several at
a time, and the sparse points' colours, read as every stage reads the photographs (io/images.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import pycolmap

from ..io.images import Levels, read_scaled, resize_area
from ..log import log, log_count
from ..photo import Photo
from ..resources import available_memory
from .features import Features, extract_features, process_size, sift_memory


@contextlib.contextmanager
def opencv_threads(count: int) -> Iterator[None]:
    previous = cv2.getNumThreads()
    cv2.setNumThreads(count)
    try:
        yield
    finally:
        cv2.setNumThreads(previous)


def extract_all(images_dir: Path, levels: Levels | None, photos: list[Photo], quality: str, count: int,
                threads: int, progress: Callable[[float], None]) -> Iterator[Features]:
    """Features of every photograph in order, several images at a time (one OpenCV thread each: SIFT scales
    better across images than within one)."""
    def extract(photo: Photo) -> Features:
        side = process_size(max(photo.width, photo.height), quality)
        scale = side / max(photo.width, photo.height)
        width, height = round(photo.width * scale), round(photo.height * scale)
        colour = resize_area(read_scaled(images_dir / photo.filename, scale, levels), width, height)
        return extract_features(cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY), (photo.width, photo.height), count)

    # Large images at high quality take gigabytes each: run no more at once than half the free memory holds.
    largest = max(sift_memory(p.width, p.height, quality) for p in photos)
    workers = max(1, min(threads, available_memory() // 2 // largest))
    total = 0
    with opencv_threads(1), ThreadPoolExecutor(workers) as pool:
        for i, features in enumerate(pool.map(extract, photos)):
            total += len(features)
            progress((i + 1) / len(photos))
            log_count("Images with features", i + 1, len(photos))
            yield features
    log.info("Extracted %d features per image on average (feature quality %s)", round(total / len(photos)),
             quality)


def colour_points(model: pycolmap.Reconstruction, images_dir: Path, levels: Levels | None, threads: int) -> None:
    """Each sparse point's colour: the mean, over the images that observe it, of the image's colour at the
    observation (bilinear). The images are read as every stage reads them: COLMAP's own colour extraction would
    cut 16-bit images to their high byte."""
    def observed(image_id: int) -> tuple[np.ndarray, np.ndarray]:
        image = model.image(image_id)
        points = [p for p in image.points2D if p.has_point3D()]
        if not points:
            return np.empty(0, np.int64), np.empty((0, 3))
        xy = np.array([p.xy for p in points], np.float32).reshape(-1, 1, 2) - 0.5  # pixel centres lie at .5
        pixels = read_scaled(images_dir / image.name, 1.0, levels)
        colours = cv2.remap(pixels, xy, None, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        return np.array([p.point3D_id for p in points], np.int64), colours.reshape(-1, 3)

    with opencv_threads(1), ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(observed, model.reg_image_ids()))
    ids, inverse = np.unique(np.concatenate([i for i, _ in parts]), return_inverse=True)
    colours = np.concatenate([c for _, c in parts]).astype(np.float64)
    counts = np.bincount(inverse, minlength=len(ids))
    sums = np.stack([np.bincount(inverse, colours[:, c], len(ids)) for c in range(3)], axis=1)
    rgb = np.rint(sums / counts[:, None])[:, ::-1].astype(np.uint8)
    for point_id, colour in zip(ids.tolist(), rgb):
        model.points3D[point_id].color = colour
