"""Mosaicking: one view per ground cell, blended across the seams between views band by band.

Each view's colours are split into frequency bands (differences of Gaussians, the finest holding the detail,
the coarsest the overall brightness and colour), and each band crosses a seam over a width that grows with its
scale, as in multiband blending (Burt and Adelson, 1983): fine detail crosses over a few pixels, so that a
surface slightly off in height cannot show the same edge twice, while brightness and colour cross over a wide
band, so that what exposure differences remain leave no visible line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np


@dataclass(frozen=True)
class BlendSettings:
    sigmas: tuple[float, ...] = (4.0, 16.0)  # px: the Gaussians that split the bands, finest first
    ramps: tuple[float, ...] = (4.0, 16.0, 48.0)  # px: each band's half-width of cross-fade, detail first


def seam_distance(labels: np.ndarray, label: int) -> np.ndarray:
    """Signed distance (px) to the border of the cells labelled `label`: positive inside, negative outside."""
    region = (labels == label).astype(np.uint8)
    return cv2.distanceTransform(region, cv2.DIST_L2, 3) - cv2.distanceTransform(1 - region, cv2.DIST_L2, 3)


def low_pass(image: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of `sigma` px, computed on an image reduced by up to 8 (a blur that wide keeps no detail
    that the reduction loses)."""
    h, w = image.shape[:2]
    factor = int(min(8, 2 ** np.floor(np.log2(max(sigma, 1.0)))))
    small = cv2.resize(image, (max(1, w // factor), max(1, h // factor)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small, (0, 0), sigma / factor)
    # OpenCV drops a lone channel's axis: a single band (thermal) keeps its shape.
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR).reshape(image.shape)


@dataclass
class Mosaic:
    shape: tuple[int, int]
    settings: BlendSettings = BlendSettings()
    _sums: list[np.ndarray] = field(init=False)
    _weights: list[np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        self._sums = []
        self._weights = [np.zeros(self.shape, np.float32) for _ in self.settings.ramps]

    def add(self, colour: np.ndarray, valid: np.ndarray, labels: np.ndarray, label: int) -> None:
        """One view's colours (h, w, channels: RGB, or a multispectral capture's bands) over the tile (valid where
        it sees the cell), owning the cells labelled `label`."""
        if not self._sums:
            self._sums = [np.zeros((*self.shape, colour.shape[2]), np.float32) for _ in self.settings.ramps]
        mask = valid.astype(np.float32)
        distance = seam_distance(labels, label)
        for band, ramp, (sum_, weight) in zip(self._bands(colour, mask), self.settings.ramps,
                                              zip(self._sums, self._weights)):
            w = np.clip(0.5 + distance / (2 * ramp), 0.0, 1.0) * mask
            sum_ += band * w[..., None]
            weight += w

    def _bands(self, colour: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
        """The colour split into bands, finest first; they add up to the colour. Low-passed only over the
        view's own pixels, so its frame edge does not bleed black into the coarser bands."""
        lows = [colour]
        for sigma in self.settings.sigmas:
            with np.errstate(invalid="ignore", divide="ignore"):
                low = low_pass(colour * mask[..., None], sigma) / low_pass(mask, sigma)[..., None]
            lows.append(np.nan_to_num(low))
        return [finer - coarser for finer, coarser in zip(lows, lows[1:])] + [lows[-1]]

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The blended colours (h, w, channels, float32; 0 where nothing covers) and coverage (bool) of the
        tile."""
        covered = np.logical_and.reduce([weight > 0 for weight in self._weights])
        values = np.zeros_like(self._sums[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            for sum_, weight in zip(self._sums, self._weights):
                values += np.nan_to_num(sum_ / weight[..., None])
        values[~covered] = 0
        return values, covered
