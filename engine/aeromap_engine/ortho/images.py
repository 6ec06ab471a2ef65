"""The photographs as the orthophoto reads them: decoded at the coarsest scale that still resolves its pixels,
photometrically corrected, and kept in a cache bounded in memory."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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
    _cache: OrderedDict = field(default_factory=OrderedDict)
    _bytes: int = 0

    def get(self, view: View, scale: float) -> np.ndarray:
        if view.name in self._cache:
            self._cache.move_to_end(view.name)
            return self._cache[view.name]
        image = read_scaled(self.images_dir / view.name, scale, self.levels)
        if self.photometry is not None:
            image = self.photometry.correct(image, view.name)
        self._cache[view.name] = image
        self._bytes += image.nbytes
        while self._bytes > self.budget and len(self._cache) > 1:
            self._bytes -= self._cache.popitem(last=False)[1].nbytes
        return image


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
