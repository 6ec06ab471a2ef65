"""Drawing a georeferenced raster on the Web Mercator tile grid: an area read at about the resolution it is drawn
at (the raster's overviews serve the coarse zooms, so a tile of the whole survey does not read every pixel) and
reprojected once with GDAL. Used for the pyramid's blocks and for single tiles in a style of the user's choice."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import rasterio
from affine import Affine
from rasterio.enums import Resampling
from rasterio.warp import reproject, transform_bounds
from rasterio.windows import Window, from_bounds

from ..errors import InputError
from .formulas import BandMath, RasterBands, band_math, colour_bands, unit_scale
from .mercator import HALF, tile_bounds
from .style import (DEFAULT_COLOR_MAP, INDEX_COLOR_MAP, INDEX_RANGE, ramp, rescale_bands, style_elevation, style_index,
                    value_range)

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


def preview(src: rasterio.io.DatasetReader, numbers: Sequence[int], size: int) -> np.ndarray:
    """Bands `numbers` of the whole raster read at about `size` px across: (bands, h, w) float32, NaN where the
    raster holds no value."""
    step = max(1, max(src.width, src.height) // size)
    shape = (len(numbers), max(1, src.height // step), max(1, src.width // step))
    data = src.read(list(numbers), out_shape=shape, masked=True, resampling=Resampling.nearest)
    return data.astype(np.float32).filled(np.nan)


def elevation_range(src: rasterio.io.DatasetReader) -> tuple[float, float]:
    """The range the colour ramp spans by default, from the elevation at about 512 px across."""
    return value_range(preview(src, [1], 512)[0])


def raster_bands(src: rasterio.io.DatasetReader) -> RasterBands:
    """The raster's colour bands and the letters its band descriptions or colour interpretations give them."""
    return colour_bands([(number, src.descriptions[number - 1], src.colorinterp[number - 1].name)
                         for number in range(1, src.count + 1)])


def index_from(src: rasterio.io.DatasetReader, index: BandMath,
               read: Callable[[list[int]], np.ndarray]) -> np.ndarray:
    """The formula's values over the bands that `read` answers for a list of band numbers (float, NaN where there
    is no value), each band scaled to 0..1 by its type first."""
    letters = list(index.numbers)
    numbers = [index.numbers[letter] for letter in letters]
    data = read(numbers)
    return index.formula.evaluate({letter: band * np.float32(unit_scale(src.dtypes[number - 1]))
                                  for letter, band, number in zip(letters, data, numbers)})


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


@dataclass(frozen=True)
class _Footprint:
    """What a tile takes from the raster: the source window (None where the raster has nothing there), read at
    `shape` with transform `src_transform`, and the tile's own transform and width in pixels, padding included."""
    window: Window | None
    shape: tuple[int, int]
    src_transform: Affine
    dst_transform: Affine
    full: int


def _footprint(src: rasterio.io.DatasetReader, bounds: Bounds, size: int, pad: int) -> _Footprint:
    pixel = (bounds[2] - bounds[0]) / size
    full = size + 2 * pad
    padded = (bounds[0] - pad * pixel, bounds[1] - pad * pixel, bounds[2] + pad * pixel, bounds[3] + pad * pixel)
    dst_transform = Affine(pixel, 0, padded[0], 0, -pixel, padded[3])
    source_bounds = transform_bounds(MERCATOR, src.crs, *padded, densify_pts=21)
    window = _source_window(src, source_bounds)
    if window is None:
        return _Footprint(None, (0, 0), dst_transform, dst_transform, full)
    # Read no finer than the tile needs, where that saves at least half: GDAL takes the overview that fits, and
    # averages within it. Anything finer is read whole, so the warp sees every pixel.
    factor = (source_bounds[2] - source_bounds[0]) / full / abs(src.res[0])
    factor = factor if factor >= 2 else 1.0
    shape = (max(1, round(window.height / factor)), max(1, round(window.width / factor)))
    src_transform = src.window_transform(window) @ Affine.scale(window.width / shape[1], window.height / shape[0])
    return _Footprint(window, shape, src_transform, dst_transform, full)


def warp_values(src: rasterio.io.DatasetReader, numbers: Sequence[int], bounds: Bounds, size: int,
                pad: int = 0) -> np.ndarray:
    """Bands `numbers` over EPSG:3857 bounds drawn on size x size pixels, with `pad` more on each side:
    (bands, H, W) float32, NaN where the raster holds no value."""
    at = _footprint(src, bounds, size, pad)
    out = np.full((len(numbers), at.full, at.full), np.nan, dtype=np.float32)
    if at.window is None:
        return out
    data = src.read(list(numbers), window=at.window, out_shape=(len(numbers), *at.shape), masked=True,
                    resampling=Resampling.average)
    reproject(data.astype(np.float32).filled(np.nan), out, src_transform=at.src_transform, src_crs=src.crs,
              src_nodata=np.nan, dst_transform=at.dst_transform, dst_crs=MERCATOR, dst_nodata=np.nan,
              resampling=Resampling.bilinear)
    return out


# The bands an orthophoto that is not 8-bit colour (a multispectral camera's) is shown in: its visible bands,
# else a false-colour composite of near infrared, red and green, else its first band as grey.
_DISPLAY_ORDERS = (("R", "G", "B"), ("N", "R", "G"))


def display_bands(raster: RasterBands) -> list[int]:
    for order in _DISPLAY_ORDERS:
        if all(letter in raster.letters for letter in order):
            return [raster.numbers[raster.letters.index(letter)] for letter in order]
    return [raster.numbers[0]] * 3


@functools.lru_cache(maxsize=16)
def _display_range(path: str, modified: float) -> tuple[tuple[float, float], ...]:
    """Per display band, the 2nd and 98th percentiles over a preview of the whole raster (cached per file)."""
    with rasterio.open(path) as src:
        return tuple(value_range(band) for band in preview(src, display_bands(raster_bands(src)), 512))


def is_colour(src: rasterio.io.DatasetReader) -> bool:
    """Whether the raster is an 8-bit colour orthophoto: red, green, blue and perhaps alpha."""
    interpretations = [interpretation.name for interpretation in src.colorinterp]
    return (src.dtypes[0] == "uint8" and interpretations[:3] == ["red", "green", "blue"]
            and interpretations[3:] in ([], ["alpha"]))


def warp_display(src: rasterio.io.DatasetReader, bounds: Bounds, size: int, pad: int = 0) -> np.ndarray:
    """(H, W, 4) RGBA uint8 of an orthophoto that is not 8-bit colour (a multispectral camera's bands, grey): its
    display bands stretched over their range across the whole raster, so that neighbouring tiles match."""
    values = warp_values(src, display_bands(raster_bands(src)), bounds, size, pad)
    alpha = np.where(np.isfinite(values).all(axis=0), 255, 0).astype(np.uint8)
    return np.dstack([stretch_display(src, values), alpha])


def stretch_display(src: rasterio.io.DatasetReader, values: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 of the display bands' values (3, H, W), each stretched over its range in the raster."""
    ranges = _display_range(src.name, os.path.getmtime(src.name))
    rgb = np.zeros((*values.shape[1:], 3), np.uint8)
    for k, (band, (low, high)) in enumerate(zip(values, ranges)):
        scaled = (band - np.float32(low)) * np.float32(255 / max(high - low, 1e-12))
        rgb[..., k] = np.nan_to_num(np.clip(scaled, 0, 255), nan=0)
    return rgb


def preview_rgb(src: rasterio.io.DatasetReader, shape: tuple[int, int]) -> np.ndarray:
    """(h, w, 3) uint8 of the whole orthophoto read at `shape`, as the map shows it."""
    if is_colour(src):
        return src.read([1, 2, 3], out_shape=(3, *shape), resampling=Resampling.bilinear).transpose(1, 2, 0)
    values = src.read(display_bands(raster_bands(src)), out_shape=(3, *shape), masked=True,
                      resampling=Resampling.bilinear)
    return stretch_display(src, values.astype(np.float32).filled(np.nan))


def warp(src: rasterio.io.DatasetReader, elevation: bool, bounds: Bounds, size: int, pad: int = 0) -> np.ndarray:
    """The raster over EPSG:3857 bounds drawn on size x size pixels, with `pad` more on each side: float32 heights
    (NaN where there are none) for an elevation model, else (H, W, 4) RGBA uint8."""
    if elevation:
        return warp_values(src, [1], bounds, size, pad)[0]
    if not is_colour(src):
        return warp_display(src, bounds, size, pad)
    at = _footprint(src, bounds, size, pad)
    out = np.zeros((4, at.full, at.full), dtype=np.uint8)
    if at.window is None:
        return np.moveaxis(out, 0, -1)
    bands = 4 if src.count >= 4 else 3
    resampling = Resampling.average
    source = src.read(list(range(1, bands + 1)), window=at.window, out_shape=(bands, *at.shape),
                      resampling=resampling)
    if bands == 3:
        mask = src.dataset_mask(window=at.window, out_shape=at.shape, resampling=resampling)
        source = np.concatenate([source, mask[None]])
    reproject(source, out, src_transform=at.src_transform, src_crs=src.crs, dst_transform=at.dst_transform,
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
    """A style other than the pyramid's: WebODM's `rescale`, `color_map` and `hillshade` parameters, and for an
    orthophoto a vegetation index (`formula` over the bands in the order `bands`)."""
    rescale: tuple[float, float] | None = None
    color_map: str | None = None
    hillshade: float | None = None
    formula: str | None = None
    bands: str | None = None

    def __post_init__(self) -> None:
        if (self.formula is None) != (self.bands is None):
            raise InputError("formula and bands go together: give both, or neither")


def index_tile(src: rasterio.io.DatasetReader, index: BandMath, bounds: Bounds, size: int,
               style: TileStyle) -> np.ndarray | None:
    """The RGBA tile of a vegetation index: its values over `rescale` (WebODM's -1..1 by default) on the colour
    map (grey by default), transparent where the index has no value; None where it has none at all."""
    values = index_from(src, index, lambda numbers: warp_values(src, numbers, bounds, size))
    if not np.isfinite(values).any():
        return None
    low, high = style.rescale or INDEX_RANGE
    return style_index(values, low, high, ramp(style.color_map or INDEX_COLOR_MAP))


def render_tile(src: rasterio.io.DatasetReader, elevation: bool, z: int, x: int, y: int, size: int,
                style: TileStyle, default_range: tuple[float, float] | None) -> np.ndarray | None:
    """The (size x size) RGBA tile (z, x, y) in that style; None where the raster has nothing there. A formula
    the raster's bands cannot feed is an InputError."""
    index = None
    if style.formula is not None and style.bands is not None and not elevation:
        index = band_math(style.formula, style.bands, raster_bands(src))
    bounds = tile_bounds(z, x, y)
    if not intersects(bounds, mercator_bounds(src)):
        return None
    if elevation:
        values = warp(src, True, bounds, size, 1)
        if not np.isfinite(values).any():
            return None
        low, high = style.rescale or default_range or (0.0, 1.0)
        return shade_elevation(values, bounds, size, low, high, style.color_map or DEFAULT_COLOR_MAP, style.hillshade)
    if index is not None:
        return index_tile(src, index, bounds, size, style)
    rgba = warp(src, False, bounds, size)
    if not rgba[..., 3].any():
        return None
    return rescale_bands(rgba, *style.rescale) if style.rescale else rgba
