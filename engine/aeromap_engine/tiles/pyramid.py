"""A tile pyramid of a georeferenced raster, built once: blocks of 8 x 8 tiles are reprojected to Web Mercator at
the native zoom (one GDAL warp each, so memory stays bounded whatever the raster's size), cut into 256 px tiles,
and each lower zoom is made from the four tiles under it, down to the one tile that holds the whole area.
Orthophotos keep their colours and transparency; elevation models are drawn with a colour ramp and hillshade
over their real range."""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import rasterio
import rasterio.errors
from PIL import Image
from rasterio.enums import Resampling
from rasterio.transform import from_origin
from rasterio.warp import reproject, transform_bounds

from ..errors import InputError
from ..io.mbtiles import MBTilesWriter
from .mercator import TILE, native_zoom, tile_bounds, tile_span, top_tile
from .style import style_elevation, value_range

BLOCK_LEVELS = 3  # a block is 2^3 x 2^3 tiles at the native zoom
MERCATOR = "EPSG:3857"

Emit = Callable[[int, int, int, np.ndarray], None]


@dataclass(frozen=True)
class PyramidInfo:
    min_zoom: int
    max_zoom: int
    bounds: tuple[float, float, float, float]  # west, south, east, north in degrees
    tiles: int
    value_range: tuple[float, float] | None  # elevation only


def downsample(rgba: np.ndarray) -> np.ndarray:
    """Half the size: each pixel the alpha-weighted mean of four, so transparent pixels do not darken edges."""
    h, w = rgba.shape[0] // 2, rgba.shape[1] // 2
    blocks = rgba.astype(np.float32).reshape(h, 2, w, 2, 4)
    alpha = blocks[..., 3]
    weight = alpha.sum(axis=(1, 3))
    rgb = (blocks[..., :3] * alpha[..., None]).sum(axis=(1, 3)) / np.maximum(weight, 1)[..., None]
    return np.dstack([rgb, weight / 4]).round().astype(np.uint8)


def encode_png(rgba: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buffer, "PNG", compress_level=2)
    return buffer.getvalue()


def _intersects(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class Pyramid:
    def __init__(self, src: rasterio.io.DatasetReader, elevation: bool) -> None:
        if src.crs is None:
            raise InputError(f"{src.name} has no coordinate reference system: it cannot be placed on a map")
        self.src = src
        self.elevation = elevation
        self.lonlat = transform_bounds(src.crs, "EPSG:4326", *src.bounds, densify_pts=21)
        self.mercator = transform_bounds(src.crs, MERCATOR, *src.bounds, densify_pts=21)
        latitude = (self.lonlat[1] + self.lonlat[3]) / 2
        self.latitude = latitude
        resolution = abs(src.res[0]) * (111_320 * math.cos(math.radians(latitude)) if src.crs.is_geographic else 1)
        self.max_zoom = native_zoom(resolution, latitude)
        self.top = top_tile(self.mercator, self.max_zoom)
        self.range = value_range(self._overview()) if elevation else None

    def _overview(self) -> np.ndarray:
        """The elevation at about 512 px across, for the colour range."""
        step = max(1, max(self.src.width, self.src.height) // 512)
        band = self.src.read(1, out_shape=(max(1, self.src.height // step), max(1, self.src.width // step)),
                             masked=True, resampling=Resampling.nearest)
        return band.astype(np.float32).filled(np.nan)

    def _warp(self, z: int, x: int, y: int, pad: int) -> np.ndarray:
        """The block under tile (z, x, y) at the native zoom, with `pad` extra pixels on each side."""
        size = TILE * 2 ** (self.max_zoom - z) + 2 * pad
        pixel = tile_span(self.max_zoom) / TILE
        minx, _, _, maxy = tile_bounds(z, x, y)
        transform = from_origin(minx - pad * pixel, maxy + pad * pixel, pixel, pixel)
        if self.elevation:
            out = np.full((1, size, size), np.nan, dtype=np.float32)
            reproject(rasterio.band(self.src, 1), out, dst_transform=transform, dst_crs=MERCATOR,
                      src_nodata=self.src.nodata, dst_nodata=np.nan, resampling=Resampling.bilinear)
            return out[0]
        bands = [1, 2, 3, 4] if self.src.count >= 4 else [1, 2, 3]
        out = np.zeros((len(bands), size, size), dtype=np.uint8)
        reproject(rasterio.band(self.src, bands), out, dst_transform=transform, dst_crs=MERCATOR,
                  resampling=Resampling.bilinear)
        if len(bands) == 3:
            alpha = np.zeros((1, size, size), dtype=np.uint8)
            reproject(self.src.dataset_mask(), alpha, src_transform=self.src.transform, src_crs=self.src.crs,
                      dst_transform=transform, dst_crs=MERCATOR, resampling=Resampling.nearest)
            out = np.concatenate([out, alpha])
        return np.moveaxis(out, 0, -1)

    def _block(self, z: int, x: int, y: int) -> np.ndarray:
        if not self.elevation:
            return self._warp(z, x, y, 0)
        # One pixel more on each side, so that the hillshade has neighbours at the block's edges (no seams).
        values = self._warp(z, x, y, 1)
        ground = tile_span(self.max_zoom) / TILE * math.cos(math.radians(self.latitude))
        low, high = self.range or (0.0, 1.0)
        return style_elevation(values, ground, low, high)[1:-1, 1:-1]

    def render(self, z: int, x: int, y: int, emit: Emit) -> np.ndarray | None:
        """Emits the tiles of (z, x, y) and everything under it; answers the tile itself (None when empty)."""
        if not _intersects(tile_bounds(z, x, y), self.mercator):
            return None
        if z >= self.max_zoom - BLOCK_LEVELS:
            data = self._block(z, x, y)
            for level in range(self.max_zoom, z - 1, -1):
                per_side = 2 ** (level - z)
                for row in range(per_side):
                    for col in range(per_side):
                        emit(level, x * per_side + col, y * per_side + row,
                             data[row * TILE:(row + 1) * TILE, col * TILE:(col + 1) * TILE])
                if level > z:
                    data = downsample(data)
            return data
        mosaic = np.zeros((2 * TILE, 2 * TILE, 4), dtype=np.uint8)
        found = False
        for row in range(2):
            for col in range(2):
                child = self.render(z + 1, 2 * x + col, 2 * y + row, emit)
                if child is not None:
                    mosaic[row * TILE:(row + 1) * TILE, col * TILE:(col + 1) * TILE] = child
                    found = True
        if not found:
            return None
        tile = downsample(mosaic)
        emit(z, x, y, tile)
        return tile


def build_pyramid(source: Path, target: Path, elevation: bool, name: str) -> PyramidInfo:
    """Writes the pyramid of a GeoTIFF as MBTiles 1.3 (PNG tiles; fully transparent tiles are left out)."""
    try:
        src = rasterio.open(source)
    except rasterio.errors.RasterioIOError as exc:
        raise InputError(f"{source} is not a raster that can be read: {exc}") from None
    with src:
        pyramid = Pyramid(src, elevation)
        west, south, east, north = pyramid.lonlat
        z, x, y = pyramid.top
        metadata = {
            "name": name, "format": "png", "type": "overlay", "version": "1.0", "scheme": "xyz",
            "bounds": f"{west:.8f},{south:.8f},{east:.8f},{north:.8f}",
            "center": f"{(west + east) / 2:.8f},{(south + north) / 2:.8f},{min(pyramid.max_zoom, z + 2)}",
            "minzoom": str(z), "maxzoom": str(pyramid.max_zoom),
            "description": f"{name}, made by Aeromap",
        }
        if pyramid.range:
            metadata.update({"value_range": f"{pyramid.range[0]:.3f},{pyramid.range[1]:.3f}",
                             "color_map": "viridis", "hillshade": "315,45"})
        count = 0

        with MBTilesWriter(target, metadata) as out:
            def emit(level: int, col: int, row: int, rgba: np.ndarray) -> None:
                nonlocal count
                if rgba[..., 3].any():
                    out.add(level, col, row, encode_png(np.ascontiguousarray(rgba)))
                    count += 1

            pyramid.render(z, x, y, emit)
    return PyramidInfo(z, pyramid.max_zoom, pyramid.lonlat, count, pyramid.range)
