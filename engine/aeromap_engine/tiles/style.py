"""Elevation as colour: a viridis-like ramp over the model's real range, shaded by a hillshade lit from the
north-west, as WebODM's default elevation style. Pure array maths."""

from __future__ import annotations

import numpy as np

# Anchors of the viridis colour map, from low to high.
RAMP = np.array([(68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141), (39, 173, 129),
                 (92, 200, 99), (170, 220, 50), (253, 231, 37)], dtype=np.float32)


def value_range(values: np.ndarray) -> tuple[float, float]:
    """The 2nd to 98th percentile of the valid values, so that a few outliers do not flatten the ramp."""
    valid = values[np.isfinite(values)]
    if valid.size == 0:
        return 0.0, 1.0
    low, high = np.percentile(valid, [2, 98])
    return float(low), float(max(high, low + 1e-3))


def hillshade(z: np.ndarray, resolution: float, azimuth: float = 315.0, altitude: float = 45.0,
              exaggeration: float = 1.0) -> np.ndarray:
    """0..1 illumination of a height grid (rows southwards) with cells of `resolution` metres."""
    dzdy, dzdx = np.gradient(np.nan_to_num(z, nan=float(np.nanmean(z)) if np.isfinite(z).any() else 0.0) * exaggeration,
                             resolution)
    slope = np.arctan(np.hypot(dzdx, dzdy))
    # Rows grow southwards, so the northward slope is -dz/drow.
    aspect = np.arctan2(-dzdy, -dzdx)
    az = np.radians(90.0 - azimuth)
    alt = np.radians(altitude)
    shade = np.sin(alt) * np.cos(slope) + np.cos(alt) * np.sin(slope) * np.cos(az - aspect)
    return np.clip(shade, 0.0, 1.0)


def colour(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """(H, W, 3) float RGB of the ramp for values between low and high."""
    t = np.clip((np.nan_to_num(values, nan=low) - low) / (high - low), 0.0, 1.0) * (len(RAMP) - 1)
    i = np.minimum(t.astype(np.int32), len(RAMP) - 2)
    f = (t - i)[..., None]
    return RAMP[i] * (1 - f) + RAMP[i + 1] * f


def style_elevation(values: np.ndarray, resolution: float, low: float, high: float) -> np.ndarray:
    """(H, W, 4) uint8 RGBA: the ramp shaded by the hillshade, transparent where there is no value."""
    rgb = colour(values, low, high) * (0.35 + 0.65 * hillshade(values, resolution))[..., None]
    alpha = np.where(np.isfinite(values), 255, 0)
    return np.dstack([np.clip(rgb, 0, 255), alpha]).astype(np.uint8)
