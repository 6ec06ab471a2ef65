"""Map tile pyramids (MBTiles) of the orthophoto and of the elevation models, made once per run so that the
service answers tile requests with lookups: `odm_orthophoto/odm_orthophoto.mbtiles` (also the orthophoto.mbtiles
download) and `odm_dem/dsm.mbtiles`, `odm_dem/dtm.mbtiles` (colour ramp and hillshade over the real range)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..crs_offset import Georef
from ..log import log
from ..options import Option
from ..tiles.pyramid import build_pyramid

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = []
WEIGHT = 0.3


def tile_layers(project: "Project") -> list[tuple[str, Path, Path, bool]]:
    """(layer, raster, pyramid, is elevation) of every layer a run may have."""
    layers = [("orthophoto", project.orthophoto(), project.orthophoto("mbtiles"), False)]
    for kind in ("dsm", "dtm"):
        raster = project.dem(kind)
        layers.append((kind, raster, raster.with_suffix(".mbtiles"), True))
    return layers


def run(ctx: "StageContext") -> None:
    project = ctx.project
    layers = tile_layers(project)
    figures = {}
    georeferenced = Georef.load(project).georeferenced
    if not georeferenced:
        log.info("The reconstruction is in a local frame: no map tiles (they need a place on the Earth)")
    for n, (layer, raster, pyramid, elevation) in enumerate(layers):
        pyramid.unlink(missing_ok=True)  # no stale pyramid of a raster a later run did not make
        if not (georeferenced and raster.exists()):
            continue
        info = build_pyramid(raster, pyramid, elevation, layer, ctx.options.max_concurrency)
        figures[layer] = {"min_zoom": info.min_zoom, "max_zoom": info.max_zoom, "tiles": info.tiles,
                          "value_range": info.value_range}
        log.info("Tiles of the %s: zoom %d to %d, %d tiles", layer, info.min_zoom, info.max_zoom, info.tiles)
        ctx.progress((n + 1) / len(layers))
    project.update_stats("tiles", figures)
