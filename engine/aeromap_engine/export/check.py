"""What the service asks before it starts an export: whether the request can be met (a CRS PROJ knows, a product
with a CRS when another is asked for, a colour map and a formula the product's bands can feed) and the
product's own EPSG code, so that an export that changes nothing is answered with the product's download
instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rasterio

from ..errors import InputError
from ..io.pointcloud import open_las
from ..tiles.formulas import band_math
from ..tiles.render import TileStyle, raster_bands
from ..tiles.style import COLOR_MAPS
from .target import target_crs


def check_color_map(name: str | None) -> None:
    if name is not None and name.lower().removesuffix("_r") not in COLOR_MAPS:
        raise InputError(f"unknown color_map {name}")


def check_export(path: Path, pointcloud: bool, epsg: int | None, proj: str | None,
                 style: TileStyle) -> dict[str, Any]:
    """{"epsg": the product's own EPSG code or None}; InputError for a request that cannot be met."""
    crs = target_crs(epsg, proj)
    check_color_map(style.color_map)
    if pointcloud:
        with open_las(path) as reader:
            own = reader.header.parse_crs()
    else:
        with rasterio.open(path) as src:
            own = src.crs
            if style.formula is not None and style.bands is not None:
                band_math(style.formula, style.bands, raster_bands(src))
    if crs is not None and own is None:
        raise InputError("Cannot use epsg on non-georeferenced dataset")
    return {"epsg": None if own is None else own.to_epsg()}
