"""Elevation models: odm_dem/dsm.tif (the highest surface) and odm_dem/dtm.tif (the bare terrain, from the
ground points SMRF finds), float32 GeoTIFFs with nodata outside the surveyed area, built tile by tile: only the
tiles that hold some of the area are computed (the others stay nodata), so the work follows the area rather than
its bounding box. The points are read from the tiled filtered cloud a tile at a time, and the ground points
SMRF finds go to a tiled cloud of their own, so memory does not grow with the survey."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..cloud.area import SurveyArea
from ..cloud.points import PointCloud
from ..cloud.tiled import Tile, TiledCloud, tiled_writer
from ..crs_offset import Georef
from ..dem.grid import Grid, Window, output_resolution
from ..dem.smrf import TILE_WORKING_BYTES, SmrfSettings, classify, terrain_margin
from ..dem.surface import COARSE_FACTOR, CONTEXT_CELLS, NODATA, CoarseSurface, SurfaceSettings, surface
from ..io.geojson import read_survey_area
from ..io.geotiff import RasterFormat, TiledRaster
from ..log import log
from ..options import Option
from ..parallel import forked_map
from ..resources import workers_within_memory

if TYPE_CHECKING:
    from ..pipeline import StageContext

# pc-classify finds the ground with SMRF in the georeferencing stage: a change of its settings re-runs from there.
SMRF_STAGE = "odm_georeferencing"
OPTIONS: list[Option] = [
    Option("dsm", "bool", False, "Build a Digital Surface Model (the ground and everything on it).", "odm_dem"),
    Option("dtm", "bool", False, "Build a Digital Terrain Model (the bare ground: the points a simple "
           "morphological filter classifies as ground). Tune with the smrf-* options.", "odm_dem"),
    Option("dem-resolution", "float", 5.0, "Resolution of the DSM and DTM in cm per pixel. It is never finer "
           "than the images' ground sampling distance allows, unless ignore-gsd is set.", "odm_dem", minimum=0.1),
    Option("dem-gapfill-steps", "int", 3, "Rings of cells grown into small gaps of the elevation models, before "
           "larger gaps are interpolated. 0 grows none.", "odm_dem", minimum=0),
    Option("smrf-scalar", "float", 1.25, "Simple Morphological Filter: extra ground threshold per unit of "
           "terrain slope.", SMRF_STAGE, minimum=0),
    Option("smrf-slope", "float", 0.15, "Simple Morphological Filter: the steepest terrain slope (rise over "
           "run) still taken as ground.", SMRF_STAGE, minimum=0),
    Option("smrf-threshold", "float", 0.5, "Simple Morphological Filter: height in metres above or below the "
           "terrain within which a point is ground.", SMRF_STAGE, minimum=0),
    Option("smrf-window", "float", 18.0, "Simple Morphological Filter: radius in metres of the largest object "
           "(tree, building) to remove from the terrain.", SMRF_STAGE, minimum=1),
    Option("ignore-gsd", "bool", False, "Do not limit the resolution of the elevation models and the "
           "orthophoto to what the images' ground sampling distance supports (slower, more memory).", "odm_dem"),
    Option("cog", "bool", True, "Write the elevation models and the orthophoto as Cloud-Optimized GeoTIFFs "
           "(false: plain tiled GeoTIFFs).", "odm_dem"),
]
WEIGHT = 0.6

TILE = 2048  # cells per tile side


@dataclass(frozen=True)
class ModelTile:
    """Computes one tile of an elevation model (None where the area leaves it empty); inherited by forked
    workers."""

    grid: Grid
    cloud: TiledCloud
    coarse: CoarseSurface
    area: SurveyArea
    settings: SurfaceSettings

    def __call__(self, tile: tuple[Window, Window]) -> np.ndarray | None:
        core, padded = tile
        inside = self.area.covered_cells(self.grid.sub(core))
        if not inside.any():
            return None
        padded_grid = self.grid.sub(padded)
        values = surface(self.cloud.near(padded_grid.bounds).xyz, padded_grid, self.coarse,
                         self.settings)[core.inside(padded)]
        values[~inside] = NODATA
        return values


def write_model(path: Path, cloud: TiledCloud, area: SurveyArea, resolution: float, settings: SurfaceSettings,
                georef: Georef, fmt: RasterFormat, workers: int) -> Grid:
    """One elevation model of the cloud's points over the area, written tile by tile, the tiles computed in
    `workers` processes; tiles outside the area are left unwritten (nodata)."""
    grid = Grid.covering(area.bounds, resolution)
    coarse = CoarseSurface.of(cloud.xyz_by_tile(), grid.bounds, resolution * COARSE_FACTOR)
    tiles = list(area.tiles(grid, TILE, CONTEXT_CELLS))
    with TiledRaster(path, grid, georef.crs, georef.offset, 1, "float32", fmt, nodata=NODATA) as out:
        for (core, _), values in zip(tiles, forked_map(ModelTile(grid, cloud, coarse, area, settings), tiles,
                                                       workers)):
            if values is not None:
                out.write(core, values)
    return grid


@dataclass(frozen=True)
class GroundTile:
    """SMRF on one tile of the cloud with a margin of its neighbours' points, over the extent of those points;
    answers the tile's own ground points. Inherited by forked workers."""

    cloud: TiledCloud
    settings: SmrfSettings

    def __call__(self, tile: Tile) -> PointCloud:
        points, own = self.cloud.with_margin(tile, terrain_margin(self.settings) * self.settings.cell)
        xy = points.xyz[:, :2]
        ground = classify(points.xyz, (*xy.min(axis=0), *xy.max(axis=0)), self.settings)
        return points.subset(ground & own)


def find_ground(cloud: TiledCloud, settings: SmrfSettings, path: Path, scratch: Path, workers: int) -> TiledCloud:
    """SMRF's ground points, written as a tiled cloud at `path`, the tiles classified in `workers` processes (a
    sparse cloud's tiles are large, and mostly empty where the survey has gaps: hence each tile's own extent)."""
    with tiled_writer(path, cloud.tiling, scratch) as write:
        for tile, ground in zip(cloud.tiles, forked_map(GroundTile(cloud, settings), cloud.tiles, workers)):
            write(tile.col, tile.row, ground)
    return TiledCloud.open(path)


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    for kind in ("dsm", "dtm"):
        project.dem(kind).unlink(missing_ok=True)  # no stale model from a run with other options
    if not (options.dsm or options.dtm):
        log.info("Neither dsm nor dtm requested: no elevation models")
        return
    georef = Georef.load(project)
    cloud = TiledCloud.open(project.filtered_cloud)
    area = read_survey_area(project.bounds_file, georef.offset)
    resolution = output_resolution(options.dem_resolution, project.mean_gsd_cm(), options.ignore_gsd)
    fmt = RasterFormat(cog=options.cog)
    # SMRF's cloud tiles (a tile with its margin) hold more than the model tiles: their budget serves both.
    workers = workers_within_memory(options.max_concurrency, TILE_WORKING_BYTES)
    figures: dict = {"resolution_cm": round(resolution * 100, 3)}
    if options.dsm:
        grid = write_model(project.dem("dsm"), cloud, area, resolution,
                           SurfaceSettings("max", options.dem_gapfill_steps), georef, fmt, workers)
        figures["dsm"] = {"width": grid.width, "height": grid.height}
        ctx.progress(0.4)
    if options.dtm:
        smrf = SmrfSettings.of(options)
        with tempfile.TemporaryDirectory(prefix="dem.", dir=project.root) as tmp:
            ground = find_ground(cloud, smrf, Path(tmp) / "ground.ply", Path(tmp), workers)
            ctx.progress(0.7)
            grid = write_model(project.dem("dtm"), ground, area, resolution,
                               SurfaceSettings("mean", options.dem_gapfill_steps), georef, fmt, workers)
        figures["dtm"] = {"width": grid.width, "height": grid.height, "ground_points": len(ground),
                          "ground_fraction": round(len(ground) / max(len(cloud), 1), 3)}
    figures["bounds_wgs84"] = georef.wgs84_bounds(grid.bounds)
    project.update_stats("dem", figures)
    log.info("Elevation models at %.1f cm/px: %s", resolution * 100,
             ", ".join(k for k in ("dsm", "dtm") if options.values[k]))
