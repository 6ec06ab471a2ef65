"""The photographs as the orthophoto reads them: decoded at the coarsest scale that still resolves its pixels,
photometrically corrected, and kept in a cache bounded in memory. A multispectral survey's views are its
captures: every band, calibrated and aligned to the primary's pixels (bands/stack.py), as float32."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..bands.stack import BandStack
from ..dense.views import SparseModel, View
from ..io.images import Levels, read_scaled
from ..photometry import Photometry

SAMPLING = 1.5  # image pixels per orthophoto pixel at least, before a finer decoding of the image is used
IMAGE_CACHE_BYTES = 384 * 2**20  # shared among the processes that render tiles


@dataclass
class ViewImages:
    """Decoded images at the scale the orthophoto needs, with a memory-bounded cache."""

    images_dir: Path
    levels: Levels | None
    photometry: Photometry | None
    budget: int = IMAGE_CACHE_BYTES
    bands: BandStack | None = None
    _cache: OrderedDict = field(default_factory=OrderedDict)
    _bytes: int = 0

    def get(self, view: View, scale: float) -> np.ndarray:
        if view.name in self._cache:
            self._cache.move_to_end(view.name)
            return self._cache[view.name]
        if self.bands is not None:
            image = self.bands.read(view.name, scale)
        else:
            image = read_scaled(self.images_dir / view.name, scale, self.levels)
            if self.photometry is not None:
                image = self.photometry.correct(image, view.name)
        self._cache[view.name] = image
        self._bytes += image.nbytes
        while self._bytes > self.budget and len(self._cache) > 1:
            self._bytes -= self._cache.popitem(last=False)[1].nbytes
        return image

    @property
    def channels(self) -> int:
        return len(self.bands.survey.bands) if self.bands is not None else 3

    @property
    def dtype(self) -> type:
        """The orthophoto's sample type: 8-bit RGB, float32 bands."""
        return np.float32 if self.bands is not None else np.uint8

    @property
    def empty(self) -> float:
        """The orthophoto's value where it is transparent: 0 for colour, NaN (its nodata) for bands."""
        return float("nan") if self.bands is not None else 0

    def as_channels(self, image: np.ndarray) -> np.ndarray:
        """A decoded view as (h, w, channels) float32 in the orthophoto's band order (RGB from OpenCV's BGR)."""
        if self.bands is not None:
            return image.reshape(*image.shape[:2], -1)
        return image[:, :, ::-1].astype(np.float32)

    def guide(self, colours: np.ndarray) -> np.ndarray:
        """Colours in [0, 1] for the seam placement to compare views by: RGB, or up to three bands scaled by
        the survey's typical value."""
        if self.bands is None:
            return colours / np.float32(255)
        return np.nan_to_num(colours[:, :, :3] / np.float32(self.bands.unit))

    def to_output(self, values: np.ndarray) -> np.ndarray:
        """Blended colours as the orthophoto stores them."""
        if self.bands is None:
            return np.clip(values, 0, 255).astype(np.uint8)
        return values.astype(np.float32)


def view_scales(model: SparseModel, resolution: float) -> dict[str, float]:
    """Per view, the decoding scale (a power of two) that still gives SAMPLING image pixels per orthophoto
    pixel: finer decoding would only cost time, coarser would blur."""
    scales = {}
    for view in model.views:
        depths = view.to_camera(model.xyz(view.point_ids))[:, 2] if len(view.point_ids) else np.array([])
        gsd = float(np.median(depths)) / view.camera.mean_focal_length() if len(depths) else resolution
        scale = 1.0
        while scale > 1 / 8 and gsd / (scale / 2) <= resolution / SAMPLING:
            scale /= 2
        scales[view.name] = scale
    return scales
