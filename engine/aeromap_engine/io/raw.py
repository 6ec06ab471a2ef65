"""Camera RAW photographs (DNG and the makers' formats), developed by LibRaw (rawpy) with the camera's own white
balance into 16-bit colour, which the engine takes as it takes any 16-bit photograph (one linear stretch for the
dataset, io/images.py). The sensor's layout is kept (no EXIF rotation), as for every photograph."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import rawpy

from ..errors import InputError

RAW_EXTENSIONS = {".dng", ".cr2", ".cr3", ".nef", ".arw", ".raf", ".rw2", ".orf", ".pef", ".srw"}


def is_raw(path: Path) -> bool:
    return path.suffix.lower() in RAW_EXTENSIONS


def raw_size(path: Path) -> tuple[int, int] | None:
    """The developed image's width and height, or None when LibRaw cannot read the file."""
    try:
        with rawpy.imread(str(path)) as raw:
            return raw.sizes.width, raw.sizes.height
    except (rawpy.LibRawError, OSError):
        return None


def develop(path: Path, factor: int) -> np.ndarray:
    """The photograph as BGR uint16 at 1/factor of its size (rounded up): the camera's white balance, no automatic
    brightening, the standard gamma."""
    try:
        with rawpy.imread(str(path)) as raw:
            width, height = raw.sizes.width, raw.sizes.height
            rgb = raw.postprocess(use_camera_wb=True, output_bps=16, no_auto_bright=True, user_flip=0,
                                  half_size=factor >= 2)
    except (rawpy.LibRawError, OSError) as exc:
        raise InputError(f"Cannot develop the RAW photograph {path.name} ({exc})") from None
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    size = (math.ceil(width / factor), math.ceil(height / factor))
    if (bgr.shape[1], bgr.shape[0]) != size:
        bgr = cv2.resize(bgr, size, interpolation=cv2.INTER_AREA)
    return bgr
