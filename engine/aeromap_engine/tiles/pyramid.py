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
from rasterio.warp import transform_bounds

from ..errors import InputError
from ..io.mbtiles import MBTilesWriter
from .mercator import TILE, native_zoom, tile_bounds, top_tile
from .render import check_georeferenced, elevation_range, intersects, mercator_bounds, shade_elevation, warp

BLOCK_LEVELS = 3  # a block is 2^3 x 2^3 tiles at the native zoom

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


class Pyramid:
    def __init__(self, src: rasterio.io.DatasetReader, elevation: bool) -> None:
        check_georeferenced(src)
        self.src = src
        self.elevation = elevation
        self.lonlat = transform_bounds(src.crs, "EPSG:4326", *src.bounds, densify_pts=21)
        self.mercator = mercator_bounds(src)
        latitude = (self.lonlat[1] + self.lonlat[3]) / 2
        resolution = abs(src.res[0]) * (111_320 * math.cos(math.radians(latitude)) if src.crs.is_geographic else 1)
        self.max_zoom = native_zoom(resolution, latitude)
        self.top = top_tile(self.mercator, self.max_zoom)
        self.range = elevation_range(src) if elevation else None

    def _block(self, z: int, x: int, y: int) -> np.ndarray:
        """The tiles under (z, x, y) at the native zoom, as one image."""
        bounds = tile_bounds(z, x, y)
        size = TILE * 2 ** (self.max_zoom - z)
        if not self.elevation:
            return warp(self.src, False, bounds, size)
        low, high = self.range or (0.0, 1.0)
        return shade_elevation(warp(self.src, True, bounds, size, 1), bounds, size, low, high)

    def render(self, z: int, x: int, y: int, emit: Emit) -> np.ndarray | None:
        """Emits the tiles of (z, x, y) and everything under it; answers the tile itself (None when empty)."""
        if not intersects(tile_bounds(z, x, y), self.mercator):
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
            "name": name, "format": "png", "type": "overlay", "version": "1.0",
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
