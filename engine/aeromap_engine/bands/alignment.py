"""Aligning a band's photographs to the primary band's. The band cameras of a rig sit centimetres apart and look
almost the same way, so from flying height one homography per band (its lens's focal length and centre, the
small rotation between the cameras) maps the primary's pixels onto the band's, the same for every capture. It is
found by enhanced correlation (ECC) of gradient magnitudes, which bands of different brightness and contrast
share, coarse to fine, on a few captures; the one that correlates best over all of them is kept. Pure."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

LEVELS = (8, 4, 2, 1)  # coarse to fine: the coarsest absorbs offsets of tens of pixels
ITERATIONS = 60
EPSILON = 1e-6
MIN_CORRELATION = 0.3  # below this no alignment is trusted: the band is left as the rig's nominal one


@dataclass(frozen=True)
class BandAlignment:
    """The homography from the primary band's full-resolution pixels to this band's, and how well the gradients
    correlate under it (ECC's coefficient, 1 for identical)."""

    homography: np.ndarray  # 3x3 float64
    correlation: float


def gradients(values: np.ndarray) -> np.ndarray:
    """Gradient magnitude of a band's logarithm (float32): what multiplies every band alike (shading, leaf
    density, moisture) then gives the same gradients in all of them, and an edge between materials gives a
    gradient in each band whichever side is brighter there."""
    image = np.nan_to_num(values.astype(np.float32))
    valid = image > 0  # nothing (outside a frame, below the black level) is shown as the typical value
    typical = np.float32(np.median(image[valid])) if valid.any() else np.float32(1)
    image = cv2.GaussianBlur(np.log(np.where(valid, image / typical, np.float32(1))), (0, 0), 1.0)
    magnitude = cv2.magnitude(cv2.Sobel(image, cv2.CV_32F, 1, 0), cv2.Sobel(image, cv2.CV_32F, 0, 1))
    return magnitude / max(float(magnitude.mean()), 1e-12)


def _reduce(image: np.ndarray, factor: int) -> np.ndarray:
    if factor == 1:
        return image
    return cv2.resize(image, (image.shape[1] // factor, image.shape[0] // factor), interpolation=cv2.INTER_AREA)


def _pixel_scale(factor: float) -> np.ndarray:
    """Full-resolution pixel coordinates from those of an image reduced `factor` times (pixel centres kept)."""
    return np.array([[factor, 0, 0.5 * factor - 0.5], [0, factor, 0.5 * factor - 0.5], [0, 0, 1]], np.float64)


def nominal(primary_shape: tuple[int, int], band_shape: tuple[int, int]) -> np.ndarray:
    """The homography of two cameras framing the same view: one image's pixels scaled to the other's size."""
    sx, sy = band_shape[1] / primary_shape[1], band_shape[0] / primary_shape[0]
    return np.array([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5], [0, 0, 1]], np.float64)


def estimate(primary: np.ndarray, band: np.ndarray, start: np.ndarray) -> BandAlignment | None:
    """The homography from `primary` pixels to `band` pixels (both (h, w) values of one capture), refined from
    `start` level by level; None when ECC does not converge."""
    template_full, moving_full = gradients(primary), gradients(band)
    homography = start.astype(np.float64)
    correlation = 0.0
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, ITERATIONS, EPSILON)
    for factor in LEVELS:
        if min(primary.shape) // factor < 64:
            continue
        to_primary, to_band = _pixel_scale(factor), _pixel_scale(factor)
        warp = (np.linalg.inv(to_band) @ homography @ to_primary).astype(np.float32)
        try:
            correlation, warp = cv2.findTransformECC(_reduce(template_full, factor), _reduce(moving_full, factor),
                                                     warp, cv2.MOTION_HOMOGRAPHY, criteria, None, 3)
        except cv2.error:
            return None
        homography = to_band @ warp.astype(np.float64) @ np.linalg.inv(to_primary)
        homography /= homography[2, 2]
    return BandAlignment(homography, float(correlation))


def correlation(primary: np.ndarray, band: np.ndarray, homography: np.ndarray) -> float:
    """ECC's coefficient of the gradients of `band` brought onto `primary` by `homography`."""
    h, w = primary.shape
    warped = cv2.warpPerspective(gradients(band), homography.astype(np.float32), (w, h),
                                 flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderValue=np.nan)
    template = gradients(primary)
    valid = np.isfinite(warped)
    if valid.sum() < 0.5 * valid.size:
        return 0.0
    a = template[valid] - template[valid].mean()
    b = warped[valid] - warped[valid].mean()
    return float(a @ b / max(np.sqrt((a @ a) * (b @ b)), 1e-12))


def best_alignment(pairs: list[tuple[np.ndarray, np.ndarray]]) -> BandAlignment | None:
    """The rig's homography for one band from several captures (primary values, band values): each capture's
    estimate scored on all of them, the best mean kept; None when none correlates."""
    start = nominal(pairs[0][0].shape, pairs[0][1].shape)
    candidates = [found for primary, band in pairs if (found := estimate(primary, band, start)) is not None]
    if not candidates:
        return None
    scored = [(float(np.mean([correlation(p, b, c.homography) for p, b in pairs])), c) for c in candidates]
    score, best = max(scored, key=lambda item: item[0])
    return BandAlignment(best.homography, score) if score >= MIN_CORRELATION else None


def warp_to_primary(values: np.ndarray, homography: np.ndarray, primary_shape: tuple[int, int]) -> np.ndarray:
    """A band's values (h, w) resampled onto the primary band's full-resolution pixels (NaN outside the band's
    frame)."""
    h, w = primary_shape
    return cv2.warpPerspective(values.astype(np.float32), homography.astype(np.float32), (w, h),
                               flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_CONSTANT,
                               borderValue=np.nan)
