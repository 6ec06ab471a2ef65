"""A tile pyramid of a georeferenced raster, built once: blocks of 8 x 8 tiles are reprojected to Web Mercator at
the native zoom (one GDAL warp each, so memory stays bounded whatever the raster's size), cut into 256 px tiles,
and each lower zoom is made from the four tiles under it, down to the one tile that holds the whole area. Blocks
are cut and their PNGs encoded in several processes; this one writes them and makes the zooms above the blocks.
Orthophotos keep their colours and transparency; elevation models are drawn with a colour ramp and hillshade
over their real range. The same tiles can also go to a folder of static tiles (ODM's `tiles` option), which
reaches down to zoom 5 as ODM's does."""

from __future__ import annotations

import contextlib
import io
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import rasterio
import rasterio.errors
from PIL import Image
from rasterio.warp import transform_bounds

from ..errors import InputError
from ..io.mbtiles import MBTilesWriter
from ..io.tiledir import TileFolderWriter
from ..parallel import forked_map
from .mercator import TILE, native_zoom, tile_bounds, top_tile
from .render import check_georeferenced, elevation_range, intersects, mercator_bounds, shade_elevation, warp

BLOCK_LEVELS = 3  # a block is 2^3 x 2^3 tiles at the native zoom

BLOCK_CHUNK = 2  # blocks handed to a process at a time
FOLDER_MIN_ZOOM = 5  # the coarsest zoom of ODM's static tiles (gdal2tiles -z 5-...)
Emit = Callable[[int, int, int, bytes], None]


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


@dataclass
class Block:
    """The tiles of one block, encoded (empty ones left out), and its top tile for the zooms above it."""

    tiles: list[tuple[int, int, int, bytes]]  # zoom, column, row, PNG
    top: np.ndarray


class Pyramid:
    def __init__(self, source: Path, src: rasterio.io.DatasetReader, elevation: bool) -> None:
        check_georeferenced(src)
        self.source = source
        self.elevation = elevation
        self.lonlat = transform_bounds(src.crs, "EPSG:4326", *src.bounds, densify_pts=21)
        self.mercator = mercator_bounds(src)
        latitude = (self.lonlat[1] + self.lonlat[3]) / 2
        resolution = abs(src.res[0]) * (111_320 * math.cos(math.radians(latitude)) if src.crs.is_geographic else 1)
        self.max_zoom = native_zoom(resolution, latitude)
        self.top = top_tile(self.mercator, self.max_zoom)
        self.block_zoom = max(self.top[0], self.max_zoom - BLOCK_LEVELS)
        self.range = elevation_range(src) if elevation else None
        self._src: rasterio.io.DatasetReader | None = None  # this process's own: a forked worker opens its own
        self._pid = 0

    def blocks(self, z: int, x: int, y: int) -> Iterator[tuple[int, int, int]]:
        """The blocks under (z, x, y) that hold some of the raster, in the order `assemble` takes them."""
        if not intersects(tile_bounds(z, x, y), self.mercator):
            return
        if z >= self.block_zoom:
            yield z, x, y
            return
        for row in range(2):
            for col in range(2):
                yield from self.blocks(z + 1, 2 * x + col, 2 * y + row)

    def __call__(self, block: tuple[int, int, int]) -> Block:
        """Cuts a block: the tiles under it at the native zoom from one warp, and each zoom up to the block's own
        made from the one below."""
        z, x, y = block
        if self._pid != os.getpid():  # GDAL's file handles must not be shared across a fork
            self._src, self._pid = rasterio.open(self.source), os.getpid()
        bounds = tile_bounds(z, x, y)
        size = TILE * 2 ** (self.max_zoom - z)
        if self.elevation:
            low, high = self.range or (0.0, 1.0)
            data = shade_elevation(warp(self._src, True, bounds, size, 1), bounds, size, low, high)
        else:
            data = warp(self._src, False, bounds, size)
        tiles = []
        for level in range(self.max_zoom, z - 1, -1):
            per_side = 2 ** (level - z)
            for row in range(per_side):
                for col in range(per_side):
                    tile = data[row * TILE:(row + 1) * TILE, col * TILE:(col + 1) * TILE]
                    if tile[..., 3].any():
                        tiles.append((level, x * per_side + col, y * per_side + row,
                                      encode_png(np.ascontiguousarray(tile))))
            if level > z:
                data = downsample(data)
        return Block(tiles, data)

    def close(self) -> None:
        if self._src is not None and self._pid == os.getpid():
            self._src.close()
        self._src = None

    def assemble(self, z: int, x: int, y: int, blocks: Iterator[Block], emit: Emit) -> np.ndarray | None:
        """Emits the tiles of (z, x, y) and everything under it, taking the cut blocks in `blocks`' order; answers
        the tile itself (None where the raster does not reach)."""
        if not intersects(tile_bounds(z, x, y), self.mercator):
            return None
        if z >= self.block_zoom:
            block = next(blocks)
            for tile in block.tiles:
                emit(*tile)
            return block.top
        mosaic = np.zeros((2 * TILE, 2 * TILE, 4), dtype=np.uint8)
        found = False
        for row in range(2):
            for col in range(2):
                child = self.assemble(z + 1, 2 * x + col, 2 * y + row, blocks, emit)
                if child is not None:
                    mosaic[row * TILE:(row + 1) * TILE, col * TILE:(col + 1) * TILE] = child
                    found = True
        if not found:
            return None
        tile = downsample(mosaic)
        if tile[..., 3].any():
            emit(z, x, y, encode_png(tile))
        return tile


def coarser_tiles(z: int, x: int, y: int, tile: np.ndarray, min_zoom: int
                  ) -> Iterator[tuple[int, int, int, np.ndarray]]:
    """The tiles above (z, x, y) up to min_zoom, when `tile` holds everything the raster draws: each the one
    below it in its quarter, halved."""
    while z > min_zoom:
        mosaic = np.zeros((2 * TILE, 2 * TILE, 4), dtype=np.uint8)
        row, col = (y % 2) * TILE, (x % 2) * TILE
        mosaic[row:row + TILE, col:col + TILE] = tile
        z, x, y, tile = z - 1, x // 2, y // 2, downsample(mosaic)
        yield z, x, y, tile


def build_pyramid(source: Path, target: Path, elevation: bool, name: str, workers: int = 1,
                  folder: Path | None = None) -> PyramidInfo:
    """Writes the pyramid of a GeoTIFF as MBTiles 1.3 (PNG tiles; fully transparent tiles are left out), its
    blocks cut in `workers` processes; `folder`: also as static tiles there (TileFolderWriter), from zoom
    FOLDER_MIN_ZOOM."""
    try:
        src = rasterio.open(source)
    except rasterio.errors.RasterioIOError as exc:
        raise InputError(f"{source} is not a raster that can be read: {exc}") from None
    with src:
        pyramid = Pyramid(source, src, elevation)
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

    with contextlib.ExitStack() as stack:
        out = stack.enter_context(MBTilesWriter(target, metadata))
        static = stack.enter_context(TileFolderWriter(folder, source.name, pyramid.mercator)) if folder else None

        def emit(level: int, col: int, row: int, png: bytes) -> None:
            nonlocal count
            out.add(level, col, row, png)
            if static is not None:
                static.add(level, col, row, png)
            count += 1

        blocks = list(pyramid.blocks(z, x, y))
        try:
            top = pyramid.assemble(z, x, y, forked_map(pyramid, blocks, workers, chunk=BLOCK_CHUNK), emit)
        finally:
            pyramid.close()
        if static is not None and top is not None:
            for level, col, row, tile in coarser_tiles(z, x, y, top, FOLDER_MIN_ZOOM):
                static.add(level, col, row, encode_png(tile))
    return PyramidInfo(z, pyramid.max_zoom, pyramid.lonlat, count, pyramid.range)
