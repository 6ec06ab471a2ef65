"""Reading photographs as 8-bit BGR at a reduced scale, fast: JPEG decoders can skip detail by powers of two.

Ordinary 8-bit files (JPEG, PNG, TIFF of up to four bands) are decoded by OpenCV. Anything else (16-bit or
floating-point samples, more than four bands: thermal and multispectral cameras, 16-bit exports) is read by GDAL
and mapped to 8 bits by one linear stretch, the dataset's levels, shared by every photograph so that neighbours
keep the same radiometry (a stretch per image would make seams in the orthophoto). Single-band images become
grey BGR; of more bands the first three are the colour (red, green, blue); an alpha band is dropped.
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import rasterio
from rasterio.enums import ColorInterp, Resampling
from rasterio.errors import NotGeoreferencedWarning, RasterioIOError

from ..atomic_files import read_json
from ..errors import InputError
from .raw import develop, is_raw, raw_size

_REDUCED = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4,
            8: cv2.IMREAD_REDUCED_COLOR_8}
_JPEG_MAGIC = b"\xff\xd8\xff"
# Percentiles of the dataset's sample values that map to 0 and 255: a few hot or dead pixels do not set them.
LOW_PERCENTILE, HIGH_PERCENTILE = 0.5, 99.5

# Photographs are never georeferenced rasters, and libtiff's remarks on cameras' tags (strings padded with NULs,
# unknown tags) say nothing about the pixels: GDAL's messages about either would be noise on every read.
warnings.filterwarnings("ignore", category=NotGeoreferencedWarning)
_LIBTIFF_TAG_REMARKS = ("TIFFFetchNormalTag", "TIFFReadDirectory")
logging.getLogger("rasterio._env").addFilter(
    lambda record: not any(remark in record.getMessage() for remark in _LIBTIFF_TAG_REMARKS))


@dataclass(frozen=True)
class Levels:
    """The dataset's linear stretch to 8 bits: `low` maps to 0, `high` to 255, values beyond are clipped."""

    low: float
    high: float


@dataclass(frozen=True)
class Layout:
    """How a file stores its pixels."""

    width: int
    height: int
    bands: int
    dtype: np.dtype
    alpha: bool  # the last band is transparency

    @property
    def colour_bands(self) -> int:
        return self.bands - self.alpha

    @property
    def plain(self) -> bool:
        """8-bit samples in a layout OpenCV decodes the way the pipeline wants."""
        return self.dtype == np.uint8 and self.bands <= 4


def dataset_levels(samples: list[np.ndarray]) -> Levels:
    """Levels covering the sample values of all the photographs (each a few thousand pixels), NaN ignored."""
    values = np.concatenate([s.ravel() for s in samples]).astype(np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return Levels(0.0, 1.0)
    low, high = np.percentile(values, [LOW_PERCENTILE, HIGH_PERCENTILE])
    return Levels(float(low), float(max(high, low + 1e-6)))  # a constant dataset must not divide by zero


def stretch(values: np.ndarray, levels: Levels) -> np.ndarray:
    """`values` mapped linearly to 0..255 (uint8), rounded; below `low` gives 0, above `high` 255, NaN 0."""
    gain = 255.0 / (levels.high - levels.low)
    scaled = (values.astype(np.float32) - np.float32(levels.low)) * np.float32(gain) + np.float32(0.5)
    return np.nan_to_num(np.clip(scaled, 0.0, 255.0), nan=0.0).astype(np.uint8)


def colour_bands(bands: np.ndarray, alpha: bool) -> np.ndarray:
    """BGR (h, w, 3) from bands in file order (h, w, n): the first three as red, green and blue, or the first
    one as grey when fewer are left after the alpha band."""
    colour = bands[:, :, :-1] if alpha else bands
    if colour.shape[2] < 3:
        return np.repeat(colour[:, :, :1], 3, axis=2)
    return np.ascontiguousarray(colour[:, :, 2::-1])


def to_8bit(image: np.ndarray, levels: Levels | None, name: str) -> np.ndarray:
    """The image as the pipeline uses it: 8-bit images as they are, others stretched by the dataset's levels."""
    if image.dtype == np.uint8:
        return image
    if levels is None:
        raise InputError(f"Image {name} has {image.dtype} samples: the dataset's levels are needed to read it "
                         "(run the dataset stage)")
    return stretch(image, levels)


def read_layout(path: Path) -> Layout | None:
    """The file's pixel layout from its header (a RAW photograph's as developed), or None when it is not known."""
    if is_raw(path):
        size = raw_size(path)
        return None if size is None else Layout(size[0], size[1], 3, np.dtype(np.uint16), False)
    try:
        with rasterio.open(path) as source:
            alpha = source.count > 1 and source.colorinterp[-1] == ColorInterp.alpha
            return Layout(source.width, source.height, source.count, np.dtype(source.dtypes[0]), alpha)
    except RasterioIOError:
        return None


def read_stored(path: Path, scale: float) -> np.ndarray:
    """The image as BGR (h, w, 3) with its stored sample type, at about `scale` of its stored size, never
    smaller. EXIF orientation is ignored, as the reconstruction's cameras use the stored pixel layout."""
    factor = max(f for f in _REDUCED if f == 1 or 1.0 / f >= scale)
    if is_raw(path):
        return develop(path, factor)
    layout = None if _is_jpeg(path) else read_layout(path)
    if layout is None or layout.plain:
        image = cv2.imread(str(path), _REDUCED[factor] | cv2.IMREAD_IGNORE_ORIENTATION)
        if image is None:
            raise InputError(f"Cannot read image {path.name}")
        return image
    shape = (layout.bands, math.ceil(layout.height / factor), math.ceil(layout.width / factor))
    try:
        with rasterio.open(path) as source:
            bands = source.read(out_shape=shape, resampling=Resampling.average)
    except RasterioIOError as exc:
        raise InputError(f"Cannot read image {path.name} ({exc})") from None
    return colour_bands(bands.transpose(1, 2, 0), layout.alpha)


def read_scaled(path: Path, scale: float, levels: Levels | None = None) -> np.ndarray:
    """The image (BGR, uint8) at about `scale` of its stored size, never smaller (see read_stored). `levels`,
    the dataset's (load_levels), are needed for images that are not 8-bit."""
    return to_8bit(read_stored(path, scale), levels, path.name)


def read_band(path: Path) -> np.ndarray:
    """A single-band photograph's values (h, w) at full resolution in its own sample type: one band of a
    multispectral capture, its digital numbers untouched (bands/radiometry.py calibrates them)."""
    try:
        with rasterio.open(path) as source:
            return source.read(1)
    except RasterioIOError as exc:
        raise InputError(f"Cannot read image {path.name} ({exc})") from None


def load_levels(path: Path) -> Levels | None:
    """The levels the dataset stage wrote, or None when every photograph is 8-bit."""
    values = read_json(path)
    return Levels(values["low"], values["high"]) if values else None


def resize_area(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Downsample by pixel-area averaging (no aliasing) when `image` is clearly larger than wanted."""
    if image.shape[1] > 1.2 * width:
        return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    return image


def _is_jpeg(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(len(_JPEG_MAGIC)) == _JPEG_MAGIC
    except OSError:
        return False  # reported by the decoder
