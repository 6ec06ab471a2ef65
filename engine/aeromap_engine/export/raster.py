"""A raster product exported as WebODM exports it: `gtiff` keeps the values (or writes a vegetation index as one
float band); `gtiff-rgb`, `jpg`, `png` and `kmz` draw it as the map does, an elevation model on a colour map
shaded by a hillshade (viridis, exaggeration 6 unless told otherwise), an orthophoto as it is, rescaled, or as a
vegetation index on a colour map. Drawing happens in the raster's own grid (the hillshade needs its metric
cells), then GDAL warps the result into the target CRS; KMZ is always in WGS84, as KML requires."""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyproj
import rasterio
import rasterio.shutil
from affine import Affine
from rasterio.crs import CRS
from rasterio._err import CPLE_BaseError
from rasterio.enums import Resampling
from rasterio.io import MemoryFile
from rasterio.warp import calculate_default_transform, reproject

from ..atomic_files import atomic_path
from ..errors import InputError
from ..tiles.formulas import band_math
from .check import check_color_map
from ..tiles.render import TileStyle, check_georeferenced, index_from, raster_bands
from ..tiles.style import (DEFAULT_COLOR_MAP, INDEX_COLOR_MAP, INDEX_RANGE, ramp, rescale_bands, style_elevation,
                           style_index, value_range)

RASTER_FORMATS = ("gtiff", "gtiff-rgb", "jpg", "png", "kmz")
# WebODM's style of an elevation model drawn in colour when the request names none.
DEM_HILLSHADE = 6.0
_DRIVERS = {"gtiff": "GTiff", "gtiff-rgb": "GTiff", "jpg": "JPEG", "png": "PNG", "kmz": "KMLSUPEROVERLAY"}
_GTIFF = {"tiled": True, "blockxsize": 512, "blockysize": 512, "compress": "deflate", "bigtiff": "if_safer"}
_WGS84 = pyproj.CRS.from_epsg(4326)
# Metres of a degree of latitude: the ground size of a geographic raster's cells, for the hillshade.
_DEGREE = 111_320.0


@dataclass(frozen=True)
class RasterExport:
    format: str
    elevation: bool
    crs: pyproj.CRS | None  # None: the raster's own
    style: TileStyle


@dataclass(frozen=True)
class Drawn:
    """What is written, still in the raster's own grid: (bands, H, W) values, their no-data value (None where
    an alpha band or nothing marks the missing) and the colour interpretation of each band."""
    data: np.ndarray
    nodata: float | None
    colorinterp: tuple[str, ...] | None


def elevation_colours(values: np.ndarray, resolution: float, style: TileStyle) -> np.ndarray:
    """(4, H, W) uint8 RGBA of heights (NaN where none) on the colour map over `rescale` (else the heights' 2nd to
    98th percentile), shaded by a hillshade of that exaggeration."""
    low, high = style.rescale or value_range(values)
    shade = DEM_HILLSHADE if style.hillshade is None else style.hillshade
    rgba = style_elevation(values, resolution, low, high, ramp(style.color_map or DEFAULT_COLOR_MAP), shade or None)
    return np.moveaxis(rgba, -1, 0)


def index_colours(values: np.ndarray, style: TileStyle) -> np.ndarray:
    """(4, H, W) uint8 RGBA of a vegetation index on its colour map (grey over -1..1 unless told otherwise)."""
    low, high = style.rescale or INDEX_RANGE
    return np.moveaxis(style_index(values, low, high, ramp(style.color_map or INDEX_COLOR_MAP)), -1, 0)


def photo_colours(rgb: np.ndarray, alpha: np.ndarray, style: TileStyle) -> np.ndarray:
    """(4, H, W) uint8 RGBA of an orthophoto's colour bands and mask, stretched over `rescale` when given."""
    rgba = np.moveaxis(np.concatenate([rgb, alpha[None]]), 0, -1)
    if style.rescale:
        rgba = rescale_bands(rgba, *style.rescale)
    return np.moveaxis(rgba.astype(np.uint8), -1, 0)


def _clear_transparent(rgba: np.ndarray) -> np.ndarray:
    """Black where transparent, as an orthophoto's outside is, so that a JPEG (which drops the alpha band) shows
    no colour of the ramp's low end there."""
    rgba[:3, rgba[3] == 0] = 0
    return rgba


def _ground_resolution(src: rasterio.io.DatasetReader) -> float:
    resolution = abs(src.res[0])
    return resolution * _DEGREE if src.crs.is_geographic else resolution


def _values(src: rasterio.io.DatasetReader, band: int = 1) -> np.ndarray:
    return src.read(band, masked=True).astype(np.float32).filled(np.nan)


def draw(src: rasterio.io.DatasetReader, request: RasterExport) -> Drawn:
    """The raster's values, index or colours, as the format wants them."""
    style = request.style
    index = None
    if style.formula is not None and style.bands is not None:
        if request.elevation:
            raise InputError("formula and bands apply to orthophotos, not to elevation models")
        index = band_math(style.formula, style.bands, raster_bands(src))
    if index is not None:
        values = index_from(src, index, lambda numbers: np.stack([_values(src, n) for n in numbers]))
        if request.format == "gtiff":
            return Drawn(values[None].astype(np.float32), float("nan"), None)
        return Drawn(_clear_transparent(index_colours(values, style)), None, ("red", "green", "blue", "alpha"))
    if request.format == "gtiff":
        return Drawn(src.read(), src.nodata, tuple(c.name for c in src.colorinterp))
    if request.elevation:
        return Drawn(_clear_transparent(elevation_colours(_values(src), _ground_resolution(src), style)), None,
                     ("red", "green", "blue", "alpha"))
    colour = raster_bands(src).numbers[:3]
    if len(colour) < 3:
        raise InputError(f"{request.format} draws three colour bands, and this raster has {len(colour)}")
    rgba = photo_colours(src.read(list(colour)), src.dataset_mask(), style)
    return Drawn(rgba, None, ("red", "green", "blue", "alpha"))


@dataclass(frozen=True)
class TargetGrid:
    crs: CRS
    transform: Affine
    width: int
    height: int


def target_grid(src: rasterio.io.DatasetReader, crs: pyproj.CRS | None) -> TargetGrid:
    """The grid GDAL picks for the raster in that CRS: the same number of cells across, north up."""
    if crs is None:
        return TargetGrid(src.crs, src.transform, src.width, src.height)
    dst_crs = CRS.from_wkt(crs.to_wkt())
    outside = InputError(f"The raster cannot be drawn in {crs.name}: it lies outside the area that CRS covers")
    try:
        transform, width, height = calculate_default_transform(src.crs, dst_crs, src.width, src.height, *src.bounds)
    except CPLE_BaseError:
        raise outside from None
    if not width or not height or not all(math.isfinite(v) for v in transform[:6]):
        raise outside
    return TargetGrid(dst_crs, transform, width, height)


def warp(src: rasterio.io.DatasetReader, drawn: Drawn, grid: TargetGrid) -> np.ndarray:
    """The drawn bands on the target grid (bilinear; no-data or transparent outside the raster)."""
    if grid.crs == src.crs and grid.transform == src.transform:
        return drawn.data
    fill = 0 if drawn.nodata is None else drawn.nodata
    out = np.full((drawn.data.shape[0], grid.height, grid.width), fill, dtype=drawn.data.dtype)
    reproject(drawn.data, out, src_transform=src.transform, src_crs=src.crs, src_nodata=drawn.nodata,
              dst_transform=grid.transform, dst_crs=grid.crs, dst_nodata=drawn.nodata,
              resampling=Resampling.bilinear)
    return out


def _write_gtiff(path: Path, data: np.ndarray, grid: TargetGrid, nodata: float | None,
                 colorinterp: tuple[str, ...] | None, **options: object) -> None:
    profile = {"driver": "GTiff", "width": grid.width, "height": grid.height, "count": data.shape[0],
               "dtype": data.dtype.name, "crs": grid.crs, "transform": grid.transform, "nodata": nodata,
               **_GTIFF, **options}
    with rasterio.open(path, "w", **profile) as out:
        out.write(data)
        if colorinterp is not None:
            out.colorinterp = [rasterio.enums.ColorInterp[name] for name in colorinterp]


def write(path: Path, fmt: str, data: np.ndarray, grid: TargetGrid, drawn: Drawn) -> None:
    """The warped bands in the format's file: GeoTIFFs directly, JPEG (no alpha), PNG and KMZ through a GeoTIFF
    in memory, as GDAL makes those by copy only."""
    if fmt in ("gtiff", "gtiff-rgb"):
        _write_gtiff(path, data, grid, drawn.nodata, drawn.colorinterp,
                     **({"photometric": "RGB", "alpha": "YES"} if fmt == "gtiff-rgb" else {}))
        return
    if fmt == "jpg":
        data = data[:3]
    with MemoryFile() as memory:
        with memory.open(driver="GTiff", width=grid.width, height=grid.height, count=data.shape[0], dtype="uint8",
                         crs=grid.crs, transform=grid.transform) as tmp:
            tmp.write(data)
            if data.shape[0] == 4:
                tmp.colorinterp = [rasterio.enums.ColorInterp[n] for n in ("red", "green", "blue", "alpha")]
        with memory.open() as tmp, tempfile.TemporaryDirectory(dir=path.parent) as scratch:
            # GDAL's zip paths split at the first ".kmz" of a name, which a temporary name may hold twice.
            copy = Path(scratch) / f"export{path.suffix}"
            options = {"FORMAT": "AUTO"} if fmt == "kmz" else {"QUALITY": 90} if fmt == "jpg" else {}
            rasterio.shutil.copy(tmp, str(copy), driver=_DRIVERS[fmt], **options)
            os.replace(copy, path)


def export_raster(source: Path, output: Path, request: RasterExport) -> None:
    if request.format not in RASTER_FORMATS:
        raise InputError(f"Unsupported format: {request.format} (rasters export as {', '.join(RASTER_FORMATS)})")
    # No .aux.xml beside JPEG and PNG files: the download is the one file.
    check_color_map(request.style.color_map)
    with rasterio.Env(GDAL_PAM_ENABLED="NO"), rasterio.open(source) as src:
        crs = _WGS84 if request.format == "kmz" else request.crs
        if crs is not None or request.format == "kmz":
            check_georeferenced(src)
        drawn = draw(src, request)
        grid = target_grid(src, crs)
        with atomic_path(output) as partial:
            write(partial, request.format, warp(src, drawn, grid), grid, drawn)
