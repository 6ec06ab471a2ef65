"""Which frames of a video become photographs: one each time the view has moved on by the share of the frame that
the wanted overlap leaves, the sharpest near that point; black frames and blurred ones (far less sharp than the
video around them) never. Pure functions over per-frame measurements, which extract.py takes from the video."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

BLACK_LEVEL = 16.0  # mean grey (0-255) below which a frame is black (lens cap, fade, dropped frame)
BLUR_RATIO = 0.35  # sharper than this share of the video's median sharpness around it, or blurred
SHARPNESS_WINDOW = 61  # frames the median sharpness is taken over
REACH = 1.25  # the sharpest frame is taken among those between the step and this many steps of motion


@dataclass(frozen=True)
class Measure:
    """What choosing needs of every frame: mean grey, sharpness (variance of the Laplacian) and its motion from
    the frame before (pixels of the measured size, x and y) and that size."""

    grey: np.ndarray  # (N,)
    sharpness: np.ndarray  # (N,)
    motion: np.ndarray  # (N, 2); the first frame's is 0
    width: int
    height: int


def measure_frame(grey: np.ndarray, previous: np.ndarray | None) -> tuple[float, float, tuple[float, float]]:
    """Mean grey, sharpness and the shift from `previous` (phase correlation) of a small grey frame (float32)."""
    sharpness = float(cv2.Laplacian(grey, cv2.CV_32F).var())
    shift = (0.0, 0.0)
    if previous is not None:
        window = cv2.createHanningWindow(grey.shape[::-1], cv2.CV_32F)
        (dx, dy), _ = cv2.phaseCorrelate(previous, grey, window)
        shift = (float(dx), float(dy))
    return float(grey.mean()), sharpness, shift


def blurred(sharpness: np.ndarray, black: np.ndarray) -> np.ndarray:
    """Per frame, whether it is far less sharp than the median of the non-black frames around it."""
    result = np.zeros(len(sharpness), bool)
    lit = np.flatnonzero(~black)
    half = SHARPNESS_WINDOW // 2
    for k, index in enumerate(lit):
        around = sharpness[lit[max(0, k - half):k + half + 1]]
        result[index] = sharpness[index] < BLUR_RATIO * float(np.median(around))
    return result


def choose(measure: Measure, overlap: float, limit: int) -> list[int]:
    """The frames to keep (indices, in order): the first usable one, then the sharpest usable frame between one
    and REACH steps of motion on from the last kept (a step: 1 - overlap of the frame), at most `limit` (evenly
    spaced when more)."""
    black = measure.grey < BLACK_LEVEL
    usable = ~black & ~blurred(measure.sharpness, black)
    step = 1.0 - overlap
    travel = np.cumsum(measure.motion / np.array([measure.width, measure.height]), axis=0)
    chosen: list[int] = []
    candidates = np.flatnonzero(usable)
    if len(candidates) == 0:
        return []
    last = int(candidates[0])
    chosen.append(last)
    while True:
        moved = np.linalg.norm(travel - travel[last], axis=1)
        ahead = np.flatnonzero(usable & (np.arange(len(moved)) > last) & (moved >= step))
        if len(ahead) == 0:
            break
        within = ahead[moved[ahead] <= moved[ahead[0]] + (REACH - 1.0) * step]
        last = int(within[np.argmax(measure.sharpness[within])])
        chosen.append(last)
    if len(chosen) > limit:
        chosen = [chosen[int(round(k))] for k in np.linspace(0, len(chosen) - 1, limit)]
    return chosen
