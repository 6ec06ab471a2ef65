"""Smooth random fields: value noise and its fractal sums, the raw material of the terrain and the textures.

Upsampling a grid of random values with OpenCV's bicubic resize gives value noise at a fraction of the cost of
evaluating a noise function per cell, which matters at the texture's tens of millions of cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np


def value_noise(shape: tuple[int, int], period_cells: float, rng: np.random.Generator) -> np.ndarray:
    """A smooth field of the given shape whose features are about period_cells wide, zero mean and roughly unit
    standard deviation (float32)."""
    rows, cols = shape
    period = max(float(period_cells), 1.0)
    grid_rows, grid_cols = int(math.ceil(rows / period)) + 3, int(math.ceil(cols / period)) + 3
    grid = rng.standard_normal((grid_rows, grid_cols)).astype(np.float32)
    if period <= 1.0:
        return np.ascontiguousarray(grid[:rows, :cols])
    size = (int(round(grid_cols * period)), int(round(grid_rows * period)))
    field = cv2.resize(grid, size, interpolation=cv2.INTER_CUBIC)
    # Bicubic interpolation between unit-variance samples has a smaller variance (0.86); rescale to about 1.
    offset = int(period)
    field = field[offset:offset + rows, offset:offset + cols]
    return field * np.float32(1.0 / 0.86)


def fractal_noise(shape: tuple[int, int], periods: Sequence[float], amplitudes: Sequence[float],
                  rng: np.random.Generator) -> np.ndarray:
    """A sum of value-noise octaves, normalised to unit standard deviation (float32)."""
    total = np.zeros(shape, dtype=np.float32)
    for period, amplitude in zip(periods, amplitudes):
        total += np.float32(amplitude) * value_noise(shape, period, rng)
    total /= np.float32(max(float(total.std()), 1e-6))
    return total


def octaves(finest: float, coarsest: float) -> list[float]:
    """Periods doubling from finest up to coarsest."""
    count = max(1, int(math.floor(math.log2(coarsest / finest))) + 1)
    return [finest * 2.0 ** k for k in range(count)]
