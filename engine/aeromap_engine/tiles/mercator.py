"""The Web Mercator tile grid (EPSG:3857, XYZ scheme: y grows southwards, 256 px tiles)."""

from __future__ import annotations

import math

HALF = 20037508.342789244  # half the width of the world in EPSG:3857 metres
TILE = 256


def tile_span(z: int) -> float:
    """Width of one tile at zoom z, in EPSG:3857 metres."""
    return 2 * HALF / 2**z


def tile_bounds(z: int, x: int, y: int) -> tuple[float, float, float, float]:
    """(minx, miny, maxx, maxy) of a tile in EPSG:3857."""
    span = tile_span(z)
    return (-HALF + x * span, HALF - (y + 1) * span, -HALF + (x + 1) * span, HALF - y * span)


def tiles_covering(z: int, bounds: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    """The inclusive tile ranges (x0, y0, x1, y1) at zoom z that cover EPSG:3857 bounds."""
    span = tile_span(z)
    last = 2**z - 1
    x0 = min(last, max(0, math.floor((bounds[0] + HALF) / span)))
    x1 = min(last, max(0, math.ceil((bounds[2] + HALF) / span) - 1))
    y0 = min(last, max(0, math.floor((HALF - bounds[3]) / span)))
    y1 = min(last, max(0, math.ceil((HALF - bounds[1]) / span) - 1))
    return x0, y0, x1, y1


def native_zoom(ground_resolution: float, latitude: float) -> int:
    """The zoom whose pixels are at least as fine as the raster's on the ground (Mercator stretches by
    1/cos(latitude)); a level that is within 10 % coarser is taken rather than doubling the pixels."""
    world_pixels = 2 * HALF * math.cos(math.radians(latitude)) / ground_resolution
    return max(0, min(24, math.ceil(math.log2(world_pixels / TILE) - 0.15)))


def top_tile(bounds: tuple[float, float, float, float], max_zoom: int) -> tuple[int, int, int]:
    """The deepest tile (z, x, y), at max_zoom or above, that holds the whole of the bounds."""
    for z in range(max_zoom, -1, -1):
        x0, y0, x1, y1 = tiles_covering(z, bounds)
        if x0 == x1 and y0 == y1:
            return z, x0, y0
    return 0, 0, 0
