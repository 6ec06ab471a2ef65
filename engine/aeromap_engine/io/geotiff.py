"""GeoTIFF outputs written tile by tile, then turned into a Cloud-Optimized GeoTIFF (or a tiled GeoTIFF).

Tiles go to a temporary GeoTIFF beside the output, so memory holds one tile at a time; GDAL then rewrites it
with the requested compression and overviews, and the result is renamed into place.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import numpy as np
import rasterio
from rasterio.enums import ColorInterp, Resampling
from rasterio.shutil import copy as gdal_copy
from rasterio.transform import Affine
from rasterio.windows import Window as RasterWindow

from ..atomic_files import atomic_path
from ..dem.grid import Grid, Window

BLOCK = 512
OVERVIEW_LEVELS = [2, 4, 8, 16, 32]


def transform(grid: Grid, offset: tuple[float, float]) -> Affine:
    """The grid's geotransform in the CRS (the world frame plus the offset)."""
    return Affine(grid.resolution, 0.0, grid.x0 + offset[0], 0.0, -grid.resolution, grid.y1 + offset[1])


@dataclass(frozen=True)
class RasterFormat:
    compress: str = "DEFLATE"  # JPEG, LZW, PACKBITS, DEFLATE, LZMA or NONE
    cog: bool = True
    overviews: bool = False  # for plain GeoTIFFs; a COG always has them

    def creation_options(self, dtype: str) -> dict[str, str]:
        options = {"COMPRESS": self.compress, "BIGTIFF": "IF_SAFER"}
        if self.compress in ("DEFLATE", "LZW", "LZMA"):
            options["PREDICTOR"] = "YES" if self.cog else ("3" if dtype.startswith("float") else "2")
        if self.cog:
            options.update({"BLOCKSIZE": str(BLOCK), "OVERVIEW_RESAMPLING": "AVERAGE"})
        else:
            options.update({"TILED": "YES", "BLOCKXSIZE": str(BLOCK), "BLOCKYSIZE": str(BLOCK)})
        return options


class TiledRaster:
    """Write a raster over `grid` one window at a time: `with TiledRaster(...) as out: out.write(window, a)`.
    RGBA rasters (alpha=True) get their fourth band marked as alpha; a JPEG-compressed COG cannot hold it, so
    GDAL stores it as the transparency mask instead; other counts with alpha (a multispectral camera's bands)
    get their last band marked as alpha. `png`: also write a PNG copy there. `tags`: GDAL metadata items to store
    in the file. `descriptions`: the bands' names."""

    def __init__(self, path: Path, grid: Grid, crs: str | None, offset: tuple[float, float], count: int,
                 dtype: str, fmt: RasterFormat, nodata: float | None = None, alpha: bool = False,
                 png: Path | None = None, tags: dict[str, str] | None = None,
                 descriptions: list[str] | None = None) -> None:
        self.path, self.grid, self.fmt, self.dtype, self.png, self.tags = path, grid, fmt, dtype, png, tags or {}
        self.descriptions, self.alpha = descriptions or [], alpha
        self._profile = {"driver": "GTiff", "width": grid.width, "height": grid.height, "count": count,
                         "dtype": dtype, "crs": crs, "transform": transform(grid, offset), "nodata": nodata,
                         "tiled": True, "blockxsize": BLOCK, "blockysize": BLOCK, "compress": "LZW",
                         "BIGTIFF": "IF_SAFER"}
        if alpha and count == 4:
            self._profile.update({"photometric": "RGB", "alpha": "YES"})
        self._tmpdir: tempfile.TemporaryDirectory | None = None
        self._dataset = None

    def __enter__(self) -> "TiledRaster":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmpdir = tempfile.TemporaryDirectory(prefix=f".{self.path.stem}.", dir=self.path.parent)
        self._scratch = Path(self._tmpdir.name) / "tiles.tif"
        self._dataset = rasterio.open(self._scratch, "w", **self._profile)
        self._dataset.update_tags(**self.tags)  # GDAL's copy carries them over
        for number, description in enumerate(self.descriptions, start=1):
            self._dataset.set_band_description(number, description)
        count = self._profile["count"]
        if self.alpha and count != 4:  # bands of a multispectral camera, then alpha
            self._dataset.colorinterp = [ColorInterp.gray] + [ColorInterp.undefined] * (count - 2) + [ColorInterp.alpha]
        return self

    def write(self, window: Window, values: np.ndarray) -> None:
        """Write (bands, h, w) or (h, w) values at a window of the grid."""
        data = values if values.ndim == 3 else values[None]
        self._dataset.write(data.astype(self.dtype), window=RasterWindow(window.col, window.row, window.width,
                                                                          window.height))

    def __exit__(self, kind: type | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._dataset.close()
        try:
            if kind is None:
                self._finish()
        finally:
            self._tmpdir.cleanup()

    def _finish(self) -> None:
        options = self.fmt.creation_options(self.dtype)
        with atomic_path(self.path) as tmp:
            gdal_copy(self._scratch, tmp, driver="COG" if self.fmt.cog else "GTiff", **options)
            if not self.fmt.cog and self.fmt.overviews:
                with rasterio.open(tmp, "r+") as dataset:
                    levels = [f for f in OVERVIEW_LEVELS if min(dataset.width, dataset.height) // f >= BLOCK // 4]
                    dataset.build_overviews(levels or OVERVIEW_LEVELS[:1], Resampling.average)
        if self.png is not None:
            # PNG holds no georeferencing; without PAM, GDAL leaves no .aux.xml sidecar behind.
            with rasterio.Env(GDAL_PAM_ENABLED="NO"), atomic_path(self.png) as tmp:
                gdal_copy(self._scratch, tmp, driver="PNG")
