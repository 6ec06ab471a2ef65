"""Mosaicking: one view per ground cell, blended across the seams between views in two frequency bands.

Fine detail crosses a seam over a few pixels, so that a surface slightly off in height cannot show the same
edge twice; brightness and colour cross it over a wide band, so that exposure differences between images leave
no visible line (a two-level version of multiband blending).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np


@dataclass(frozen=True)
class BlendSettings:
    detail_band: float = 4.0  # px: half-width of the cross-fade of fine detail
    tone_band: float = 20.0  # px: half-width of the cross-fade of brightness and colour
    tone_sigma: float = 6.0  # px: Gaussian that separates brightness and colour from detail


def seam_weight(labels: np.ndarray, label: int, band: float) -> np.ndarray:
    """1 well inside the cells labelled `label`, 0 well outside, a linear ramp `band` px either side of its
    border."""
    region = (labels == label).astype(np.uint8)
    inside = cv2.distanceTransform(region, cv2.DIST_L2, 3)
    outside = cv2.distanceTransform(1 - region, cv2.DIST_L2, 3)
    return np.clip(0.5 + (inside - outside) / (2 * band), 0.0, 1.0).astype(np.float32)


@dataclass
class Mosaic:
    shape: tuple[int, int]
    settings: BlendSettings = BlendSettings()
    _tone: np.ndarray = field(init=False)
    _tone_weight: np.ndarray = field(init=False)
    _detail: np.ndarray = field(init=False)
    _detail_weight: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        h, w = self.shape
        self._tone, self._detail = np.zeros((h, w, 3), np.float32), np.zeros((h, w, 3), np.float32)
        self._tone_weight, self._detail_weight = np.zeros((h, w), np.float32), np.zeros((h, w), np.float32)

    def add(self, colour: np.ndarray, valid: np.ndarray, labels: np.ndarray, label: int) -> None:
        """One view's colours over the tile (valid where it sees the cell), owning the cells labelled `label`."""
        mask = valid.astype(np.float32)
        # Low-pass only over the view's own pixels, so its frame edge does not bleed black into the tone.
        spread = self._low_pass(mask)
        with np.errstate(invalid="ignore", divide="ignore"):
            tone = self._low_pass(colour * mask[..., None]) / spread[..., None]
        tone = np.nan_to_num(tone)
        tone_w = seam_weight(labels, label, self.settings.tone_band) * mask
        detail_w = seam_weight(labels, label, self.settings.detail_band) * mask
        self._tone += tone * tone_w[..., None]
        self._tone_weight += tone_w
        self._detail += (colour - tone) * detail_w[..., None]
        self._detail_weight += detail_w

    def _low_pass(self, image: np.ndarray) -> np.ndarray:
        """Gaussian blur of tone_sigma px, computed at a quarter of the size (it keeps no detail anyway)."""
        h, w = image.shape[:2]
        small = cv2.resize(image, (max(1, w // 4), max(1, h // 4)), interpolation=cv2.INTER_AREA)
        small = cv2.GaussianBlur(small, (0, 0), self.settings.tone_sigma / 4)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """RGB (uint8) and coverage (bool) of the blended tile."""
        covered = (self._tone_weight > 0) & (self._detail_weight > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            rgb = self._tone / self._tone_weight[..., None] + self._detail / self._detail_weight[..., None]
        rgb = np.clip(np.nan_to_num(rgb), 0, 255).astype(np.uint8)
        rgb[~covered] = 0
        return rgb, covered
