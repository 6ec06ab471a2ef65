"""Structure from motion's work on the photographs' pixels: the features of every photograph, found several at
a time, and the sparse points' colours, read as every stage reads the photographs (io/images.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import pycolmap

from ..io.images import Levels, read_scaled, resize_area
from ..log import log, log_count
from ..parallel import opencv_threads
from ..photo import Photo
from ..photometry import Frame, Observations, Photometry
from ..resources import workers_within_memory
from .features import Features, extract_features, process_sizes, sift_memory

SMOOTHING = 9  # px: the box a point's colour is averaged over for the photometric comparison


def extract_all(images_dir: Path, levels: Levels | None, photos: list[Photo], quality: str, count: int,
                threads: int, progress: Callable[[float], None]) -> Iterator[Features]:
    """Features of every photograph in order, several images at a time (one OpenCV thread each: SIFT scales
    better across images than within one); an image that shows fewer than `count` is read again at a finer
    scale (features.process_sizes)."""
    def at_side(photo: Photo, side: int) -> Features:
        scale = side / max(photo.width, photo.height)
        width, height = round(photo.width * scale), round(photo.height * scale)
        colour = resize_area(read_scaled(images_dir / photo.filename, scale, levels), width, height)
        return extract_features(cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY), (photo.width, photo.height), count)

    def extract(photo: Photo) -> tuple[Features, bool]:
        """The features, and whether they were found at a finer scale than the quality's."""
        first, *finer_sides = process_sizes(max(photo.width, photo.height), quality)
        features, finer = at_side(photo, first), False
        for side in finer_sides:
            if len(features) >= count:
                break
            features, finer = at_side(photo, side), True
        return features, finer

    # Large images at high quality take gigabytes each: run no more at once than half the free memory holds.
    largest = max(sift_memory(p.width, p.height, quality) for p in photos)
    workers = workers_within_memory(threads, largest, share=0.5)
    total = finer = 0
    with opencv_threads(1), ThreadPoolExecutor(workers) as pool:
        for i, (features, refined) in enumerate(pool.map(extract, photos)):
            total += len(features)
            finer += refined
            progress((i + 1) / len(photos))
            log_count("Images with features", i + 1, len(photos))
            yield features
    log.info("Extracted %d features per image on average (feature quality %s%s)", round(total / len(photos)),
             quality, f"; {finer} images that showed fewer than {count} read at a finer scale" if finer else "")


def observe_points(model: pycolmap.Reconstruction, images_dir: Path, levels: Levels | None,
                   threads: int) -> tuple[list[str], Observations, np.ndarray]:
    """The registered photographs' names and, per observation of a sparse point, the photograph's colour there
    mean over SMOOTHING pixels around it, with the radius in the frame (what photometry.estimate compares: a
    feature sits on a corner, where a pixel's shift changes the colour), and the colour there (bilinear). The images are read as
    every stage reads them: COLMAP's own colour extraction would cut 16-bit images to their high byte."""
    return observe_values(model, lambda name: read_scaled(images_dir / name, 1.0, levels), threads)


def observe_values(model: pycolmap.Reconstruction, read: Callable[[str], np.ndarray], threads: int
                   ) -> tuple[list[str], Observations, np.ndarray]:
    """observe_points of the values `read` gives for a photograph: (h, w, C) at its full resolution."""
    image_ids = list(model.reg_image_ids())

    def observed(number: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        image = model.image(image_ids[number])
        points = [p for p in image.points2D if p.has_point3D()]
        if not points:
            return None
        pixels = read(image.name)
        channels = pixels.shape[2]
        xy = np.array([p.xy for p in points], np.float32)
        at = xy.reshape(-1, 1, 2) - 0.5  # pixel centres lie at .5
        # One plane at a time: OpenCV's filters take at most four channels.
        planes = [np.ascontiguousarray(pixels[:, :, c]) for c in range(channels)]
        sharp = [cv2.remap(plane, at, None, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE) for plane in planes]
        smooth = [cv2.remap(_box_mean(plane), at, None, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
                  for plane in planes]
        rays = np.array([model.points3D[p.point3D_id].xyz for p in points]) - image.projection_center()
        return (np.array([p.point3D_id for p in points], np.int64), frame_of(model.camera(image.camera_id))
                .radius(xy[:, 0], xy[:, 1]), np.stack(sharp, axis=-1).reshape(-1, channels),
                np.stack(smooth, axis=-1).reshape(-1, channels), rays / np.linalg.norm(rays, axis=1, keepdims=True))

    with opencv_threads(1), ThreadPoolExecutor(threads) as pool:
        seen = [(n, part) for n, part in enumerate(pool.map(observed, range(len(image_ids)))) if part is not None]
    names = [model.image(i).name for i in image_ids]
    parts = [part for _, part in seen]
    observations = Observations(np.concatenate([np.full(len(p[0]), n) for n, p in seen]),
                                np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                                np.concatenate([p[3] for p in parts]).astype(np.float64),
                                np.concatenate([p[4] for p in parts]))
    return names, observations, np.concatenate([p[2] for p in parts]).astype(np.float64)


def _box_mean(plane: np.ndarray) -> np.ndarray:
    """The mean over SMOOTHING pixels around each pixel; NaN (no value: outside a band's frame) where any is:
    OpenCV's running sums would carry one NaN along its whole row."""
    valid = np.isfinite(plane)
    if valid.all():
        return cv2.blur(plane, (SMOOTHING, SMOOTHING))
    sums = cv2.blur(np.where(valid, plane, 0).astype(np.float32), (SMOOTHING, SMOOTHING))
    share = cv2.blur(valid.astype(np.float32), (SMOOTHING, SMOOTHING))
    return np.where(share > 0.999, sums / np.maximum(share, 1e-6), np.nan).astype(np.float32)


def frame_of(camera: pycolmap.Camera) -> Frame:
    return Frame(int(camera.width), int(camera.height), float(camera.principal_point_x),
                 float(camera.principal_point_y), float(camera.mean_focal_length()))


def rotations_of(model: pycolmap.Reconstruction) -> dict[str, tuple[float, ...]]:
    """Each registered photograph's rotation from its camera to the world, row by row."""
    return {image.name: tuple(image.cam_from_world().rotation.matrix().T.ravel().tolist())
            for image in (model.image(i) for i in model.reg_image_ids())}


def colour_points(model: pycolmap.Reconstruction, names: list[str], observations: Observations, sharp: np.ndarray,
                  photometry: Photometry | None) -> None:
    """Each sparse point's colour: the mean of its observations' colours (`sharp`), corrected by the
    photometry."""
    colours = sharp
    if photometry is not None:
        colours = colours / photometry.factors(np.array(names)[observations.image], observations.radius,
                                               observations.ray)
    ids, inverse = np.unique(observations.point, return_inverse=True)
    counts = np.bincount(inverse, minlength=len(ids))
    sums = np.stack([np.bincount(inverse, colours[:, c], len(ids)) for c in range(3)], axis=1)
    rgb = np.clip(np.rint(sums / counts[:, None]), 0, 255)[:, ::-1].astype(np.uint8)
    for point_id, colour in zip(ids.tolist(), rgb):
        model.points3D[point_id].color = colour
