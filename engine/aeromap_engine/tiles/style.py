"""How rasters are drawn on tiles. Elevation as colour: a ramp over a value range (by default the model's real
range, viridis, shaded by a hillshade lit from the north-west, as WebODM's default elevation style); the ramps
WebODM's map offers by name, each reversible with `_r`. Orthophotos: an optional linear rescale of the bands, or
a vegetation index on a ramp (grey over -1..1 unless asked otherwise, as WebODM). Pure array maths."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Colour maps as (position, (r, g, b)) anchors between 0 and 1, linear in between; the published anchors of
# matplotlib's and ColorBrewer's maps of the same names.
COLOR_MAPS: dict[str, list[tuple[int, int, int]] | list[tuple[float, tuple[int, int, int]]]] = {
    "viridis": [(68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141), (39, 173, 129),
                (92, 200, 99), (170, 220, 50), (253, 231, 37)],
    "magma": [(0, 0, 4), (28, 16, 68), (79, 18, 123), (129, 37, 129), (181, 54, 122), (229, 80, 100),
              (251, 135, 97), (254, 194, 135), (252, 253, 191)],
    "inferno": [(0, 0, 4), (31, 12, 72), (85, 15, 109), (136, 34, 106), (186, 54, 85), (227, 89, 51),
                (249, 140, 10), (249, 201, 50), (252, 255, 164)],
    "plasma": [(13, 8, 135), (84, 2, 163), (139, 10, 165), (185, 50, 137), (219, 92, 104), (244, 136, 73),
               (254, 188, 43), (240, 249, 33)],
    "gray": [(0, 0, 0), (255, 255, 255)],
    "jet": [(0, 0, 128), (0, 0, 255), (0, 128, 255), (0, 255, 255), (128, 255, 128), (255, 255, 0),
            (255, 128, 0), (255, 0, 0), (128, 0, 0)],
    "terrain": [(0.0, (51, 51, 153)), (0.15, (0, 153, 255)), (0.25, (0, 204, 102)), (0.5, (255, 255, 153)),
                (0.75, (128, 92, 84)), (1.0, (255, 255, 255))],
    "rdylgn": [(165, 0, 38), (215, 48, 39), (244, 109, 67), (253, 174, 97), (254, 224, 139), (255, 255, 191),
               (217, 239, 139), (166, 217, 106), (102, 189, 99), (26, 152, 80), (0, 104, 55)],
    "spectral": [(158, 1, 66), (213, 62, 79), (244, 109, 67), (253, 174, 97), (254, 224, 139), (255, 255, 191),
                 (230, 245, 152), (171, 221, 164), (102, 194, 165), (50, 136, 189), (94, 79, 162)],
}
COLOR_MAPS["greys"] = COLOR_MAPS["gray"]

DEFAULT_COLOR_MAP = "viridis"
# WebODM's style of a vegetation index when the query names none: grey over -1..1.
INDEX_COLOR_MAP = "gray"
INDEX_RANGE = (-1.0, 1.0)


@dataclass(frozen=True)
class Ramp:
    positions: np.ndarray  # (N,) from 0 to 1
    colours: np.ndarray  # (N, 3) float32


def ramp(name: str) -> Ramp:
    """The colour map of that name (case-insensitive, `_r` reversed); KeyError for one that does not exist."""
    key = name.lower()
    reverse = key.endswith("_r")
    anchors = COLOR_MAPS[key[:-2] if reverse else key]
    if isinstance(anchors[0][0], float):
        positions = np.array([a[0] for a in anchors], dtype=np.float32)
        colours = np.array([a[1] for a in anchors], dtype=np.float32)
    else:
        positions = np.linspace(0.0, 1.0, len(anchors), dtype=np.float32)
        colours = np.array(anchors, dtype=np.float32)
    if reverse:
        positions, colours = 1.0 - positions[::-1], colours[::-1]
    return Ramp(positions, colours)


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


def colour(values: np.ndarray, low: float, high: float, colours: Ramp | None = None) -> np.ndarray:
    """(H, W, 3) float RGB of the ramp for values between low and high."""
    colours = colours or ramp(DEFAULT_COLOR_MAP)
    t = np.clip((np.nan_to_num(values, nan=low) - low) / (high - low), 0.0, 1.0)
    return np.stack([np.interp(t, colours.positions, colours.colours[:, band]) for band in range(3)], axis=-1)


def style_elevation(values: np.ndarray, resolution: float, low: float, high: float, colours: Ramp | None = None,
                    shade: float | None = 1.0) -> np.ndarray:
    """(H, W, 4) uint8 RGBA: the ramp, shaded by a hillshade of that exaggeration (none when None), transparent
    where there is no value."""
    rgb = colour(values, low, high, colours)
    if shade is not None:
        rgb = rgb * (0.35 + 0.65 * hillshade(values, resolution, exaggeration=shade))[..., None]
    return _transparent_where_missing(rgb, values)


def style_index(values: np.ndarray, low: float, high: float, colours: Ramp) -> np.ndarray:
    """(H, W, 4) uint8 RGBA of a vegetation index: the ramp over [low, high], transparent where there is no
    value."""
    return _transparent_where_missing(colour(values, low, high, colours), values)


def _transparent_where_missing(rgb: np.ndarray, values: np.ndarray) -> np.ndarray:
    alpha = np.where(np.isfinite(values), 255, 0)
    return np.dstack([np.clip(rgb, 0, 255), alpha]).astype(np.uint8)


def rescale_bands(rgba: np.ndarray, low: float, high: float) -> np.ndarray:
    """The colour bands stretched linearly from [low, high] to [0, 255]; the alpha band kept."""
    rgb = (rgba[..., :3].astype(np.float32) - low) * (255.0 / max(high - low, 1e-6))
    return np.dstack([np.clip(rgb, 0, 255).round(), rgba[..., 3]]).astype(np.uint8)
