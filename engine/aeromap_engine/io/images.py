"""Reading photographs at a reduced scale, fast: JPEG decoders can skip detail by powers of two."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from ..errors import InputError

_REDUCED = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4,
            8: cv2.IMREAD_REDUCED_COLOR_8}


def read_scaled(path: Path, scale: float) -> np.ndarray:
    """The image (BGR, uint8) at about `scale` of its stored size, never smaller. EXIF orientation is ignored,
    as the reconstruction's cameras use the stored pixel layout."""
    factor = max(f for f in _REDUCED if f == 1 or 1.0 / f >= scale)
    image = cv2.imread(str(path), _REDUCED[factor] | cv2.IMREAD_IGNORE_ORIENTATION)
    if image is None:
        raise InputError(f"Cannot read image {path.name}")
    return image


def resize_area(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Downsample by pixel-area averaging (no aliasing) when `image` is clearly larger than wanted."""
    if image.shape[1] > 1.2 * width:
        return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    return image
