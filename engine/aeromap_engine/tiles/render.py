"""Drawing a georeferenced raster on the Web Mercator tile grid: an area read at about the resolution it is drawn
at (the raster's overviews serve the coarse zooms, so a tile of the whole survey does not read every pixel) and
reprojected once with GDAL. Used for the pyramid's blocks and for single tiles in a style of the user's choice."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import rasterio
from affine import Affine
from rasterio.enums import Resampling
from rasterio.warp import reproject, transform_bounds
from rasterio.windows import Window, from_bounds

from ..errors import InputError
from .mercator import HALF, tile_bounds
from .style import DEFAULT_COLOR_MAP, ramp, rescale_bands, style_elevation, value_range

MERCATOR = "EPSG:3857"
Bounds = tuple[float, float, float, float]


def intersects(a: Bounds, b: Bounds) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def latitude_of(y: float) -> float:
    """The latitude in degrees of an EPSG:3857 northing."""
    return math.degrees(math.atan(math.sinh(y / HALF * math.pi)))


def check_georeferenced(src: rasterio.io.DatasetReader) -> None:
    if src.crs is None:
        raise InputError(f"{src.name} has no coordinate reference system: it cannot be placed on a map")


def mercator_bounds(src: rasterio.io.DatasetReader) -> Bounds:
    return transform_bounds(src.crs, MERCATOR, *src.bounds, densify_pts=21)


def elevation_range(src: rasterio.io.DatasetReader) -> tuple[float, float]:
    """The range the colour ramp spans by default, from the elevation at about 512 px across."""
    step = max(1, max(src.width, src.height) // 512)
    band = src.read(1, out_shape=(max(1, src.height // step), max(1, src.width // step)), masked=True,
                    resampling=Resampling.nearest)
    return value_range(band.astype(np.float32).filled(np.nan))


def _source_window(src: rasterio.io.DatasetReader, bounds: Bounds) -> Window | None:
    """The raster's pixels under bounds in its own CRS, with a margin for the resampling kernel; None when none."""
    inner = from_bounds(*bounds, transform=src.transform)
    col0 = max(0, math.floor(inner.col_off) - 2)
    row0 = max(0, math.floor(inner.row_off) - 2)
    col1 = min(src.width, math.ceil(inner.col_off + inner.width) + 2)
    row1 = min(src.height, math.ceil(inner.row_off + inner.height) + 2)
    if col1 <= col0 or row1 <= row0:
        return None
    return Window(col0, row0, col1 - col0, row1 - row0)


def warp(src: rasterio.io.DatasetReader, elevation: bool, bounds: Bounds, size: int, pad: int = 0) -> np.ndarray:
    """The raster over EPSG:3857 bounds drawn on size x size pixels, with `pad` more on each side: float32 heights
    (NaN where there are none) for an elevation model, else (H, W, 4) RGBA uint8."""
    pixel = (bounds[2] - bounds[0]) / size
    full = size + 2 * pad
    padded = (bounds[0] - pad * pixel, bounds[1] - pad * pixel, bounds[2] + pad * pixel, bounds[3] + pad * pixel)
    dst_transform = Affine(pixel, 0, padded[0], 0, -pixel, padded[3])
    bands = 1 if elevation else (4 if src.count >= 4 else 3)
    out = (np.full((1, full, full), np.nan, dtype=np.float32) if elevation
           else np.zeros((4, full, full), dtype=np.uint8))
    source_bounds = transform_bounds(MERCATOR, src.crs, *padded, densify_pts=21)
    window = _source_window(src, source_bounds)
    if window is None:
        return out[0] if elevation else np.moveaxis(out, 0, -1)
    # Read no finer than the tile needs, where that saves at least half: GDAL takes the overview that fits, and
    # averages within it. Anything finer is read whole, so the warp sees every pixel.
    factor = (source_bounds[2] - source_bounds[0]) / full / abs(src.res[0])
    factor = factor if factor >= 2 else 1.0
    shape = (max(1, round(window.height / factor)), max(1, round(window.width / factor)))
    resampling = Resampling.average
    src_transform = src.window_transform(window) @ Affine.scale(window.width / shape[1], window.height / shape[0])
    if elevation:
        data = src.read([1], window=window, out_shape=(1, *shape), masked=True, resampling=resampling)
        source = data.astype(np.float32).filled(np.nan)
        reproject(source, out, src_transform=src_transform, src_crs=src.crs, src_nodata=np.nan,
                  dst_transform=dst_transform, dst_crs=MERCATOR, dst_nodata=np.nan, resampling=Resampling.bilinear)
        return out[0]
    source = src.read(list(range(1, bands + 1)), window=window, out_shape=(bands, *shape), resampling=resampling)
    if bands == 3:
        mask = src.dataset_mask(window=window, out_shape=shape, resampling=resampling)
        source = np.concatenate([source, mask[None]])
    reproject(source, out, src_transform=src_transform, src_crs=src.crs, dst_transform=dst_transform,
              dst_crs=MERCATOR, resampling=Resampling.bilinear)
    return np.moveaxis(out, 0, -1)


def shade_elevation(values: np.ndarray, bounds: Bounds, size: int, low: float, high: float,
                    color_map: str = DEFAULT_COLOR_MAP, shade: float | None = 1.0) -> np.ndarray:
    """RGBA of heights warped with one pixel of padding (the hillshade needs neighbours at the edges, so that
    neighbouring tiles and blocks meet without seams), the padding cut off."""
    ground = (bounds[2] - bounds[0]) / size * math.cos(math.radians(latitude_of((bounds[1] + bounds[3]) / 2)))
    return style_elevation(values, ground, low, high, ramp(color_map), shade)[1:-1, 1:-1]


@dataclass(frozen=True)
class TileStyle:
    """A style other than the pyramid's: WebODM's `rescale`, `color_map` and `hillshade` parameters."""
    rescale: tuple[float, float] | None = None
    color_map: str | None = None
    hillshade: float | None = None


def render_tile(src: rasterio.io.DatasetReader, elevation: bool, z: int, x: int, y: int, size: int,
                style: TileStyle, default_range: tuple[float, float] | None) -> np.ndarray | None:
    """The (size x size) RGBA tile (z, x, y) in that style; None where the raster has nothing there."""
    bounds = tile_bounds(z, x, y)
    if not intersects(bounds, mercator_bounds(src)):
        return None
    if elevation:
        values = warp(src, True, bounds, size, 1)
        if not np.isfinite(values).any():
            return None
        low, high = style.rescale or default_range or (0.0, 1.0)
        return shade_elevation(values, bounds, size, low, high, style.color_map or DEFAULT_COLOR_MAP, style.hillshade)
    rgba = warp(src, False, bounds, size)
    if not rgba[..., 3].any():
        return None
    return rescale_bands(rgba, *style.rescale) if style.rescale else rgba
