"""Colours of places in a photograph, read from a reduced and slightly blurred copy: what seam levelling and the
photo-consistency check compare, where a pixel's misregistration must not count."""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np
from scipy import ndimage

from ..dense.views import View
from .atlas import texel_position

ImageLoader = Callable[[View, float], np.ndarray]  # a view's photograph (BGR uint8) at about the scale, not less


def blurred_colours(view: View, load: ImageLoader, scale: float, blur: float, pixel: np.ndarray) -> np.ndarray:
    """(N, 3) RGB float32 at full-resolution pixel positions (N, 2, OpenCV convention) of the view's photograph
    read at `scale` and blurred by `blur` px there."""
    image = cv2.GaussianBlur(load(view, scale), (0, 0), blur).astype(np.float32)
    factor = np.array([image.shape[1] / view.camera.width, image.shape[0] / view.camera.height])
    x, y = texel_position(pixel, factor).T
    return np.column_stack([ndimage.map_coordinates(image[:, :, channel], [y, x], order=1, mode="nearest")
                            for channel in (2, 1, 0)])
