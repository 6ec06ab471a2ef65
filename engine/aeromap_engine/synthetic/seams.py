"""Seams of an orthophoto, measured: real photographs given a known vignetting and exposures, and the brightness
step across the seams between photographs (as the orthophoto's sources raster records them) against the same
statistic inside one photograph's part. Used by the photometry tests and bench/ortho_seams.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import rasterio
from PIL import Image

from ..photometry import log_falloff
from ..project import Project
from ..ortho.render import NO_SOURCE


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


def seam_figures(project: Project) -> tuple[float, float]:
    """seam_steps of the project's orthophoto, along the seams it records (odm_orthophoto_sources.tif)."""
    with rasterio.open(project.path("odm_orthophoto", "odm_orthophoto.tif")) as dataset:
        rgba = dataset.read().astype(np.float32)
    with rasterio.open(project.orthophoto_sources) as dataset:
        sources = dataset.read(1).astype(np.int32)
    sources[sources == NO_SOURCE] = -1
    return seam_steps(rgba[:3].mean(axis=0), rgba[3] > 0, sources)


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
