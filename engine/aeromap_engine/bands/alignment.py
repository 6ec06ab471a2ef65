"""Aligning a band's photographs to the primary band's. The band cameras of a rig sit centimetres apart and look
almost the same way, so from flying height one homography per band (its lens's focal length and centre, the
small rotation between the cameras) maps the primary's pixels onto the band's, the same for every capture. It is
found by enhanced correlation (ECC) of gradient magnitudes, which bands of different brightness and contrast
share, coarse to fine, on a few captures; the one that correlates best over all of them is kept.

What a homography cannot take is the lenses' different distortion: each band's lens bends its own way, by
pixels towards the corners. Where the metadata state the lenses (lenses.py), the alignment they predict is the
start; either way the difference is measured in the data: tile by tile, the shift left under the homography, the
median over the captures, fitted by a smooth polynomial of the position in the frame (`LensField`). Pure."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

LEVELS = (8, 4, 2, 1)  # coarse to fine: the coarsest absorbs offsets of tens of pixels
ITERATIONS = 60
EPSILON = 1e-6
MIN_CORRELATION = 0.3  # below this no alignment is trusted: the band is left as the rig's nominal one
TILE = 64  # px of the primary band over which one residual shift is measured
MIN_RESPONSE = 0.1  # phase correlation's peak below which a tile's shift is noise (a bare or uniform tile)
MAX_TILES_ACROSS = 24  # a large frame is sampled, not covered: the field is smooth
MIN_TILES = 24  # tiles measured for a lens field to be fitted (three times its terms and more)
MAX_FIELD_PX = 25.0  # a fitted difference this large anywhere in the frame is not a lens's: it is not used
MIN_GAIN = 0.8  # the field must take the shifts' RMS below this share of what it was, or it is fitting noise
LENS_ROUNDS = 3
MAP_ROWS = 256


@dataclass(frozen=True)
class LensField:
    """The two lenses' different distortion as a shift of the primary's pixels before the homography: a cubic
    polynomial of the position about the frame's centre (in half-diagonals), with the radial fifth-order terms
    of Brown's model."""

    coefficients: np.ndarray  # (TERMS, 2): x and y shift in px
    shape: tuple[int, int]  # (h, w) of the primary band

    def shift(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shift (px) at primary pixels (x, y), float32 arrays of any one shape."""
        basis = _basis(x.ravel(), y.ravel(), self.shape)
        moved = basis @ self.coefficients.astype(np.float32)
        return moved[:, 0].reshape(x.shape), moved[:, 1].reshape(x.shape)

    def largest(self) -> float:
        """The largest shift over the frame (px), looked for along its border and on a coarse grid inside."""
        h, w = self.shape
        y, x = np.mgrid[0:h:complex(0, 33), 0:w:complex(0, 33)].astype(np.float32)
        return float(np.max(np.hypot(*self.shift(x, y))))


@dataclass(frozen=True)
class BandAlignment:
    """The homography from the primary band's full-resolution pixels to this band's, how well the gradients
    correlate under it (ECC's coefficient, 1 for identical), and the lenses' difference where one was measured
    (the RMS tile shift it leaves, px, against what the homography alone left)."""

    homography: np.ndarray  # 3x3 float64
    correlation: float
    lens: LensField | None = None
    residual_px: tuple[float, float] | None = None  # (before the measured lens field, with it)
    stated: bool = False  # the lenses' metadata alone: the images did not correlate
    lens_source: str = "images"  # or "metadata" (the images add nothing to it), "metadata, refined"


def _basis(x: np.ndarray, y: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(N, TERMS) float32: every monomial of x and y up to the third degree and x r^4, y r^4, the coordinates
    about the frame's centre in half-diagonals (so that the terms stay near 1)."""
    h, w = shape
    scale = np.float32(2.0 / np.hypot(w, h))
    u = (x.astype(np.float32) - np.float32((w - 1) / 2)) * scale
    v = (y.astype(np.float32) - np.float32((h - 1) / 2)) * scale
    r4 = (u * u + v * v) ** 2
    return np.stack([np.ones_like(u), u, v, u * u, u * v, v * v, u ** 3, u * u * v, u * v * v, v ** 3, u * r4,
                     v * r4], axis=1)


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


def best_alignment(pairs: list[tuple[np.ndarray, np.ndarray]],
                   stated: BandAlignment | None = None) -> BandAlignment | None:
    """The rig's alignment of one band from several captures (primary values, band values), from the one the
    lenses' metadata state where they do, else from the cameras' nominal framing: each capture's homography
    scored on all of them, the best mean kept, then the lenses' difference measured under it. Where the images
    do not correlate from the stated start but do from the nominal one, the metadata are wrong and the images'
    alignment is kept; where they correlate from neither, the stated alignment, None without one."""
    found = _aligned_from(pairs, stated)
    if found is None and stated is not None:
        found = _aligned_from(pairs, None)
    return found or stated


def _aligned_from(pairs: list[tuple[np.ndarray, np.ndarray]],
                  stated: BandAlignment | None) -> BandAlignment | None:
    """The images' alignment from the stated one, or from the nominal framing without; None where they do not
    correlate."""
    lens = None if stated is None else stated.lens
    # Under a stated lens field the homography is sought between the band and the primary bent by that field.
    bent = [(primary if lens is None else bend(primary, lens), band) for primary, band in pairs]
    start = nominal(pairs[0][0].shape, pairs[0][1].shape) if stated is None else stated.homography
    candidates = [found for primary, band in bent if (found := estimate(primary, band, start)) is not None]
    if not candidates:
        return None
    scored = [(float(np.mean([correlation(p, b, c.homography) for p, b in bent])), c) for c in candidates]
    score, best = max(scored, key=lambda item: item[0])
    if score < MIN_CORRELATION:
        return None
    measured = measure_lens(pairs, best.homography, lens)
    if measured is None:
        return BandAlignment(best.homography, score)
    field, residual, source = measured
    return BandAlignment(best.homography, score, field, residual, lens_source=source)


def bend(values: np.ndarray, lens: LensField) -> np.ndarray:
    """The primary's values where the lens field moves them: what the band's camera would see through the
    primary's homography alone."""
    return warp_to_primary(values, sampling_map(np.eye(3), LensField(-lens.coefficients, lens.shape), values.shape))


def measure_lens(pairs: list[tuple[np.ndarray, np.ndarray]], homography: np.ndarray,
                 stated: LensField | None = None) -> tuple[LensField, tuple[float, float], str] | None:
    """The lenses' difference under `homography`, from the one their metadata state where they do, the RMS tile
    shift before and after, and where it comes from (BandAlignment.lens_source); the stated field where the
    images add nothing to it, None where there is none to measure (MIN_GAIN: what is left is noise) or what is
    found is too large to be a lens's. Phase correlation's sub-pixel peak leans towards whole pixels, so the field
    is measured again under itself and the rest added, until what is left is small enough to be measured without
    that lean."""
    templates = [gradients(primary) for primary, _ in pairs]
    centres, shifts = residual_shifts(pairs, templates, homography, stated)
    before = _rms(shifts)
    lens = stated
    for _ in range(LENS_ROUNDS):
        step = fit_lens_field(centres, shifts, pairs[0][0].shape)
        if step is None:
            break
        refined = step if lens is None else LensField(lens.coefficients + step.coefficients, lens.shape)
        refined_centres, refined_shifts = residual_shifts(pairs, templates, homography, refined)
        if _rms(refined_shifts) > MIN_GAIN * before:
            break  # what is left is noise, not a lens
        lens, centres, shifts = refined, refined_centres, refined_shifts
    if lens is None or lens.largest() > MAX_FIELD_PX:
        return None
    source = "images" if stated is None else "metadata" if lens is stated else "metadata, refined"
    return lens, (before, _rms(shifts)), source


def _rms(shifts: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.sum(shifts ** 2, axis=1)))) if len(shifts) else 0.0


def tile_shifts(template: np.ndarray, warped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per tile of the primary's frame (`_starts`): its centre (x, y) and the shift (px) that brings `warped` (a
    band already on the primary's pixels) onto the primary, whose gradients are `template`; NaN where the band's
    frame does not cover the tile or it is too bare to say."""
    h, w = template.shape
    window = cv2.createHanningWindow((TILE, TILE), cv2.CV_32F)
    moving = gradients(warped)
    centres, shifts = [], []
    for row in _starts(h):
        for col in _starts(w):
            block = np.s_[row:row + TILE, col:col + TILE]
            centres.append((col + (TILE - 1) / 2, row + (TILE - 1) / 2))
            if not np.isfinite(warped[block]).all():
                shifts.append((np.nan, np.nan))
                continue
            # A view's rows are strided, which this OpenCV's phase correlation misreads: contiguous copies.
            (dx, dy), response = cv2.phaseCorrelate(np.ascontiguousarray(template[block]),
                                                    np.ascontiguousarray(moving[block]), window)
            shifts.append((dx, dy) if response >= MIN_RESPONSE else (np.nan, np.nan))
    return np.array(centres, np.float64).reshape(-1, 2), np.array(shifts, np.float64).reshape(-1, 2)


def _starts(length: int) -> list[int]:
    """Where tiles start along one side: about half a tile apart, at most MAX_TILES_ACROSS of them, the last
    against the frame's edge, so that the field is measured out to the corners rather than extrapolated there."""
    if length < TILE:
        return []
    count = min(MAX_TILES_ACROSS, (length - TILE) // (TILE // 2) + 2)
    return sorted({round(start) for start in np.linspace(0, length - TILE, count)})


def residual_shifts(pairs: list[tuple[np.ndarray, np.ndarray]], templates: list[np.ndarray],
                    homography: np.ndarray, lens: LensField | None) -> tuple[np.ndarray, np.ndarray]:
    """The tile centres and the median over the captures (primary values, band values; the primaries' gradients
    `templates`) of each tile's shift under `homography` and `lens`, for the tiles measured in at least half of
    the captures: the rig's, not one capture's texture or noise."""
    measured = []
    centres = np.empty((0, 2))
    maps = sampling_map(homography, lens, pairs[0][0].shape)  # every capture's frames are the same size
    for (_, band), template in zip(pairs, templates):
        centres, shifts = tile_shifts(template, warp_to_primary(band, maps))
        measured.append(shifts)
    stacked = np.stack(measured)  # (captures, tiles, 2)
    enough = np.isfinite(stacked[:, :, 0]).sum(axis=0) >= max(1, (len(pairs) + 1) // 2)
    return centres[enough], np.nanmedian(stacked[:, enough], axis=0).reshape(-1, 2)


def fit_lens_field(centres: np.ndarray, shifts: np.ndarray, shape: tuple[int, int]) -> LensField | None:
    """The lens field fitted to tile shifts: least squares, then again without the tiles it leaves more than
    three robust deviations off; None when too few tiles were measured."""
    if len(centres) < MIN_TILES:
        return None
    kept = np.ones(len(centres), bool)
    for _ in range(2):
        field = fit_field(centres[kept], shifts[kept], shape)
        misfit = np.hypot(*(np.column_stack(field.shift(centres[:, 0], centres[:, 1])) - shifts).T)
        kept = misfit <= max(0.3, 3 * 1.4826 * float(np.median(misfit[kept])))
        if kept.sum() < MIN_TILES:
            return None
    return field


def fit_field(points: np.ndarray, shifts: np.ndarray, shape: tuple[int, int]) -> LensField:
    """The lens field closest to the shifts (N, 2) at the primary's pixels `points` (N, 2), by least squares."""
    basis = _basis(points[:, 0], points[:, 1], shape).astype(np.float64)
    return LensField(np.linalg.lstsq(basis, shifts, rcond=None)[0], shape)


def sampling_map(homography: np.ndarray, lens: LensField | None,
                 primary_shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Where each of the primary's full-resolution pixels falls in the band's frame (x and y maps, float32):
    shifted by the lens field, then carried by the homography."""
    h, w = primary_shape
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    if lens is not None:
        for rows in range(0, h, MAP_ROWS):  # a large frame's terms at once would take gigabytes
            part = np.s_[rows:rows + MAP_ROWS]
            dx, dy = lens.shift(x[part], y[part])
            x[part] += dx
            y[part] += dy
    mapped = cv2.perspectiveTransform(np.dstack([x, y]), homography.astype(np.float64))
    return mapped[:, :, 0], mapped[:, :, 1]


def warp_to_primary(values: np.ndarray, maps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """A band's values (h, w) resampled onto the primary band's full-resolution pixels by `sampling_map`'s maps
    (NaN outside the band's frame)."""
    return cv2.remap(values.astype(np.float32), maps[0], maps[1], cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_CONSTANT, borderValue=np.nan)
