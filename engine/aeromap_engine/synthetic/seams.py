"""Seams of an orthophoto, measured: real photographs given a known vignetting and exposures, which photograph
each orthophoto pixel comes from, and the brightness step across the seams between photographs against the same
statistic inside one photograph's part. Used by the photometry tests and bench/ortho_seams.py."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import rasterio
from PIL import Image

from .. import pipeline
from ..photometry import log_falloff
from ..project import Project


def falloff_at(falloff: Sequence[float], radius: np.ndarray) -> np.ndarray:
    return np.exp(log_falloff(falloff, radius))


def spoil(sources: list[Path], folder: Path, shrink: int, falloff: Sequence[float] | None = None,
          gains: np.ndarray | None = None) -> None:
    """The photographs shrunk `shrink` times, EXIF and XMP kept, with a radial fall-off about the frame's centre
    and a gain per photograph (rows of B, G, R) applied when given."""
    folder.mkdir(parents=True)
    for number, source in enumerate(sources):
        with Image.open(source) as image:
            small = image.resize((image.width // shrink, image.height // shrink), Image.Resampling.LANCZOS)
            exif, xmp = image.info.get("exif", b""), image.info.get("xmp")
        pixels = np.asarray(small, np.float64)[..., ::-1]
        if falloff is not None:
            h, w = pixels.shape[:2]
            y, x = np.mgrid[0:h, 0:w]
            radius = np.hypot(x + 0.5 - w / 2, y + 0.5 - h / 2) / (0.5 * np.hypot(w, h))
            pixels = pixels * falloff_at(falloff, radius)[..., None]
        if gains is not None:
            pixels = pixels * gains[number]
        rgb = np.clip(pixels[..., ::-1] + 0.5, 0, 255).astype(np.uint8)
        Image.fromarray(rgb).save(folder / source.name, quality=95, exif=exif, xmp=xmp)


def codes(count: int) -> np.ndarray:
    """A distinct flat colour (RGB) per photograph, far enough apart that JPEG and blending keep them apart."""
    steps = int(np.ceil(count ** (1 / 3)))
    levels = np.linspace(30, 225, max(steps, 2))
    grid = np.array([(r, g, b) for r in levels for g in levels for b in levels])
    return grid[np.linspace(0, len(grid) - 1, count).round().astype(int)]


def labels_of(project: Project, work: Path, options: list[dict]) -> np.ndarray:
    """Which photograph each pixel of the project's orthophoto comes from (index in sorted name order, -1 where
    none): the orthophoto made again, same surface and views, from flat-coloured stand-ins of the photographs,
    each pixel given the nearest colour. `options`: the project's run options."""
    stand_in = Project(work)
    shutil.copytree(project.root, stand_in.root, symlinks=True)
    shutil.rmtree(stand_in.images_dir)
    stand_in.images_dir.mkdir()
    names = sorted(p.name for p in project.images_dir.iterdir())
    colours = codes(len(names))
    for name, colour in zip(names, colours):
        with Image.open(project.images_dir / name) as image:
            flat = np.broadcast_to(colour.astype(np.uint8), (image.height, image.width, 3))
            Image.fromarray(np.ascontiguousarray(flat)).save(stand_in.images_dir / name, quality=100,
                                                              exif=image.info.get("exif", b""))
    pipeline.run(stand_in, options + [{"name": "photometric-correction", "value": False},
                                      {"name": "rerun-from", "value": "odm_orthophoto"}])
    with rasterio.open(stand_in.path("odm_orthophoto", "odm_orthophoto.tif")) as dataset:
        rgba = dataset.read().astype(np.float32)
    shutil.rmtree(stand_in.root)
    labels = np.full(rgba.shape[1:], -1, np.int32)
    best = np.full(rgba.shape[1:], np.inf, np.float32)
    for number, colour in enumerate(colours.astype(np.float32)):
        distance = np.abs(rgba[:3] - colour[:, None, None]).sum(axis=0)
        closer = distance < best
        labels[closer], best[closer] = number, distance[closer]
    labels[rgba[3] == 0] = -1
    return labels


def luminance(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the bands and the coverage of an RGBA orthophoto."""
    with rasterio.open(path) as dataset:
        rgba = dataset.read().astype(np.float32)
    return rgba[:3].mean(axis=0), rgba[3] > 0


def seam_steps(values: np.ndarray, valid: np.ndarray, labels: np.ndarray, offset: int = 16,
               box: int = 25) -> tuple[float, float]:
    """(across seams, inside photographs): the median absolute difference of the mean log brightness in boxes
    `offset` px either side of a pixel, along rows and columns, where the two sides come from different
    photographs, and where everything between them comes from one."""
    log_values = np.log(np.maximum(values, 1.0)).astype(np.float32)
    weight = cv2.blur(valid.astype(np.float32), (box, box))
    mean = cv2.blur(np.where(valid, log_values, 0).astype(np.float32), (box, box)) / np.maximum(weight, 1e-6)
    seams, inside = [], []
    for axis in (0, 1):
        a, b = np.roll(mean, offset, axis=axis), np.roll(mean, -offset, axis=axis)
        la, lb = np.roll(labels, offset, axis=axis), np.roll(labels, -offset, axis=axis)
        both = (la >= 0) & (lb >= 0) & valid
        step = np.abs(a - b)
        seams.append(step[both & (la != lb)])
        same = both & (la == lb)
        for shift in range(-offset - box // 2, offset + box // 2 + 1, 4):
            same &= np.roll(labels, shift, axis=axis) == la
        inside.append(step[same])
    return float(np.median(np.concatenate(seams))), float(np.median(np.concatenate(inside)))
