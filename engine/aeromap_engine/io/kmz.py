"""The orthophoto as a KMZ super-overlay (GDAL's KMLSUPEROVERLAY driver, PNG tiles keeping the transparency), as
ODM's orthophoto-kmz writes it for Google Earth. The raster is warped to WGS84 longitude and latitude first: from
a projected CRS GDAL would place its tiles with LatLonQuads, which Google Earth draws but GDAL cannot read
back."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import rasterio
from rasterio.enums import ColorInterp, Resampling
from rasterio.shutil import copy as gdal_copy
from rasterio.vrt import WarpedVRT


def write_kmz(raster: Path, target: Path) -> None:
    """A KMZ of an RGB(A) GeoTIFF (its transparency an alpha band or a mask), written in a temporary folder beside
    `target` and renamed into place. (Not atomic_files.atomic_path: GDAL's zip paths end at the first ".kmz" in
    a name, and its temporary names hold the target's whole name.)"""
    with rasterio.open(raster) as src, \
            WarpedVRT(src, crs="EPSG:4326", resampling=Resampling.bilinear,
                      add_alpha=ColorInterp.alpha not in src.colorinterp) as wgs84, \
            tempfile.TemporaryDirectory(prefix=f".{target.stem}.", dir=target.parent) as folder:
        tmp = Path(folder) / target.name
        gdal_copy(wgs84, tmp, driver="KMLSUPEROVERLAY", FORMAT="PNG")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
