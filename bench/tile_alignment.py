"""Do a layer's tiles sit where its GeoTIFF says? At three zooms, the pyramid's tiles over the whole area are put
side by side and compared with the GeoTIFF reprojected to Web Mercator independently, by rasterio alone, on the
same grid: the shift between the two (phase correlation, in pixels of that zoom) and their mean difference are
printed, and each pair is written as a PNG to look at.

    engine/.venv/bin/python bench/tile_alignment.py RASTER MBTILES [--zooms 17 19 21] [--out DIR]
"""

from __future__ import annotations

import argparse
import io
import math
import sqlite3
from pathlib import Path

import cv2
import numpy as np
import rasterio
from PIL import Image
from rasterio.enums import Resampling
from rasterio.transform import from_origin
from rasterio.warp import reproject, transform_bounds

HALF = 20037508.342789244  # half the Web Mercator world, in metres
TILE = 256


def tile_range(z: int, bounds: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    span = 2 * HALF / 2**z
    return (math.floor((bounds[0] + HALF) / span), math.floor((HALF - bounds[3]) / span),
            math.floor((bounds[2] + HALF) / span), math.floor((HALF - bounds[1]) / span))


def mosaic(db: sqlite3.Connection, z: int, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    out = np.zeros(((y1 - y0 + 1) * TILE, (x1 - x0 + 1) * TILE, 4), dtype=np.uint8)
    for x in range(x0, x1 + 1):
        for y in range(y0, y1 + 1):
            row = db.execute("SELECT tile_data FROM tiles WHERE zoom_level=? AND tile_column=? AND tile_row=?",
                             (z, x, 2**z - 1 - y)).fetchone()
            if row:
                tile = np.asarray(Image.open(io.BytesIO(row[0])).convert("RGBA"))
                out[(y - y0) * TILE:(y - y0 + 1) * TILE, (x - x0) * TILE:(x - x0 + 1) * TILE] = tile
    return out


def reference(src: rasterio.io.DatasetReader, z: int, x0: int, y0: int, shape: tuple[int, int]) -> np.ndarray:
    span = 2 * HALF / 2**z
    transform = from_origin(-HALF + x0 * span, HALF - y0 * span, span / TILE, span / TILE)
    bands = min(src.count, 4)
    out = np.zeros((bands, *shape), dtype=np.float32)
    reproject(src.read(list(range(1, bands + 1))).astype(np.float32), out, src_transform=src.transform,
              src_crs=src.crs, src_nodata=src.nodata, dst_transform=transform, dst_crs="EPSG:3857",
              resampling=Resampling.average, dst_nodata=np.nan)
    return np.moveaxis(np.nan_to_num(out), 0, -1)


def drawn(heights: np.ndarray, z: int, latitude: float, value_range: tuple[float, float]) -> np.ndarray:
    """Elevation in the pyramid's style (where it lies comes from rasterio alone; the colours only make it comparable)."""
    from aeromap_engine.tiles.style import style_elevation

    ground = 2 * HALF / 2**z / TILE * math.cos(math.radians(latitude))
    return style_elevation(np.where(heights == 0, np.nan, heights), ground, *value_range).astype(np.float32)


def compare(tiles: np.ndarray, ref: np.ndarray) -> tuple[float, float, float]:
    both = (tiles[..., 3] > 0) & (ref[..., 3] > 0)
    a, b = tiles[..., :3].astype(np.float32).mean(axis=-1), ref[..., :3].mean(axis=-1)
    a = np.where(both, a - a[both].mean(), 0)
    b = np.where(both, b - b[both].mean(), 0)
    window = cv2.createHanningWindow(a.shape[::-1], cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(b.astype(np.float32), a.astype(np.float32), window)
    return dx, dy, float(np.abs(a - b)[both].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raster")
    parser.add_argument("mbtiles")
    parser.add_argument("--zooms", type=int, nargs="+")
    parser.add_argument("--out", default="tile-alignment")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(args.mbtiles)
    maxzoom = int(db.execute("SELECT value FROM metadata WHERE name='maxzoom'").fetchone()[0])
    zooms = args.zooms or [maxzoom - 4, maxzoom - 2, maxzoom]
    found = db.execute("SELECT value FROM metadata WHERE name='value_range'").fetchone()
    value_range = tuple(map(float, found[0].split(","))) if found else (0.0, 1.0)
    with rasterio.open(args.raster) as src:
        bounds = transform_bounds(src.crs, "EPSG:3857", *src.bounds, densify_pts=21)
        print(f"{'zoom':>4} {'tiles':>6} {'shift x px':>11} {'shift y px':>11} {'mean diff':>10}")
        for z in zooms:
            x0, y0, x1, y1 = tile_range(z, bounds)
            tiles = mosaic(db, z, x0, y0, x1, y1)
            ref = reference(src, z, x0, y0, tiles.shape[:2])
            if ref.shape[-1] == 1:
                latitude = transform_bounds(src.crs, "EPSG:4326", *src.bounds)[1]
                ref = drawn(ref[..., 0], z, latitude, value_range)
            dx, dy, diff = compare(tiles, ref)
            print(f"{z:>4} {(x1 - x0 + 1) * (y1 - y0 + 1):>6} {dx:>11.2f} {dy:>11.2f} {diff:>10.2f}")
            over_black = [image[..., :3] * (image[..., 3:4] / 255.0) for image in (tiles.astype(np.float32), ref)]
            side = np.clip(np.concatenate(over_black, axis=1), 0, 255).astype(np.uint8)
            Image.fromarray(side).save(out / f"zoom{z}.png")
    print(f"tiles (left) and rasterio's reprojection (right) in {out}/")


if __name__ == "__main__":
    main()
