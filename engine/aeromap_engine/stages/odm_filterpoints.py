"""Point cloud filtering: outliers, thinning and cropping to the surveyed area.

Reads the dense cloud (or, with fast-orthophoto, the sparse points, opensfm/sparse.ply); writes
odm_filterpoints/point_cloud.ply (world frame), a tiled cloud (cloud/tiled.py) that the later stages read tile by
tile, and odm_filterpoints/bounds.geojson (the surveyed area, a Polygon or MultiPolygon in the output CRS), which
the elevation models and the orthophoto are cropped to. The area is where the cloud covers the ground
(cloud/area_tracing.py), with its scales taken from the images' ground footprint, kept within the boundary option's
polygons (or auto-boundary's, around the cameras) where one is given. With optimize-disk-space the dense cloud,
which only this stage reads, is deleted once the filtered cloud is written.

The cloud is never whole in memory: it is sorted into tiles first, then each tile is filtered with a margin of
its neighbours' points (the outlier statistic and the thinning look that far), counted on the area's occupancy
grid, and written; the crop is a second pass over the filtered tiles.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pycolmap

from .. import quality
from ..cloud.area import SurveyArea
from ..cloud.area_tracing import AreaSettings, GroundFrames, Occupancy, surveyed_area
from ..cloud.boundary import Region, camera_boundary
from ..cloud.filters import median_spacing, statistical_inliers, thin
from ..cloud.points import PointCloud
from ..cloud.tiled import TiledCloud, Tiling, tile_sorted, tiled_writer
from ..crs_offset import Georef
from ..dense.views import SparseModel, sparse_model
from ..errors import InputError
from ..io.geojson import check_boundary, parse_boundary, write_geometry
from ..io.ply import ply_chunks
from ..log import log
from ..options import Option, Options
from ..ortho.footprint import ground_outlines

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = [
    Option("pc-filter", "float", 5.0,
           "Remove points whose mean distance to their 16 nearest neighbours is more than this many standard "
           "deviations above the average among the points around them. 0 turns the filter off.",
           "odm_filterpoints", minimum=0),
    Option("pc-sample", "float", 0.0,
           "Thin the point cloud to about one point per N metres (removes duplicates, limits the cloud's "
           "resolution). 0 keeps every point.", "odm_filterpoints", minimum=0),
    Option("auto-boundary", "bool", False,
           "Limit the reconstruction to an area around the camera positions, which removes far-away background "
           "(sky, distant landscape) seen by oblique images.", "odm_filterpoints"),
    Option("auto-boundary-distance", "float", 0.0,
           "Distance in metres between the camera positions and the edge of the automatic boundary. 0 chooses "
           "it from the flight height and the cameras' field of view.", "odm_filterpoints", minimum=0),
    Option("boundary", "string", "",
           "GeoJSON polygon limiting the area of the reconstruction: a Polygon or MultiPolygon, or a Feature or "
           "FeatureCollection of them, in WGS84 longitude and latitude unless its crs member names another CRS. "
           "Outputs are cropped to it. It takes the place of auto-boundary.", "odm_filterpoints",
           check=check_boundary, domain="json"),
    Option("optimize-disk-space", "bool", False,
           "Delete heavy intermediate files once the later stages no longer need them (the dense point cloud, "
           "after filtering). Every product is kept, but re-running from openmvs's result (rerun-from "
           "odm_filterpoints) is no longer possible: re-run from openmvs instead.", "odm_filterpoints"),
    Option("crop", "float", 3.0,
           "Crop the outputs to the surveyed area shrunk by N metres, which removes the unreliable edges. "
           "0 turns cropping off.", "odm_filterpoints", minimum=0),
]
WEIGHT = 0.5

AREA_CELL = 0.5  # m: the finest cell of the occupancy grid the surveyed area is traced on...
AREA_CELL_SPACINGS = 4  # ...and at least this many point spacings (a sparse cloud's cells must hold points)
CLOSING_FOOTPRINT = 0.5  # gaps narrower than this fraction of an image footprint's shorter side, times two,
# belong to the survey: the photographs around them saw them (trees, water, plain roofs failed to match)
MAX_HOLE_FOOTPRINTS = 4  # enclosed holes up to this many image footprints are filled (a pond in a field); a
# larger one may never have been photographed (a survey ringing a lake)
MARGIN_SPACINGS = 64  # point spacings of neighbouring tiles a tile is filtered with: the outlier statistic's
# regions reach 48 (3 x 3 cells of 32)
SAMPLE_POINTS = 200_000  # points drawn from the cloud for its spacing and its height percentiles
FRAME_CELLS = 100  # cells across an image footprint's shorter side, at least, where the frames join the area


def _auto_boundary_distance(model: SparseModel) -> float:
    """Half the diagonal of an image's ground footprint, averaged over the views: the area the cameras see."""
    ground = float(np.median(model.points[:, 2]))
    radii = [max(v.center[2] - ground, 0.0) * 0.5 * np.hypot(v.camera.width, v.camera.height)
             / v.camera.mean_focal_length() for v in model.views]
    return float(np.mean(radii))


def footprint_sides(model: SparseModel) -> tuple[float, float]:
    """The median ground footprint of an image (longer side, shorter side; m), from its height above the median
    sparse point."""
    ground = float(np.median(model.points[:, 2])) if len(model.points) else 0.0
    sides = [sorted((v.camera.width, v.camera.height), reverse=True) for v in model.views]
    heights = [max(v.center[2] - ground, 0.0) / v.camera.mean_focal_length() for v in model.views]
    long, short = np.median(np.array(sides) * np.array(heights)[:, None], axis=0)
    return float(long), float(short)


def area_settings(spacing: float, footprint: tuple[float, float], crop: float) -> AreaSettings:
    """The scales of the surveyed area: its cell from the points' spacing, the gaps it closes and the holes it
    fills from the images' footprint."""
    long, short = footprint
    closing = max(CLOSING_FOOTPRINT * short, 1.0)
    return AreaSettings(cell=max(AREA_CELL, AREA_CELL_SPACINGS * spacing), closing=closing,
                        max_hole=MAX_HOLE_FOOTPRINTS * long * short, min_part=np.pi * closing**2, crop=crop)


def ground_frames(model: SparseModel, footprint: tuple[float, float]) -> GroundFrames | None:
    """The ground the placed photographs show, which joins the tie points' area (fast-orthophoto)."""
    rings = ground_outlines(model)
    return GroundFrames(tuple(rings), max(AREA_CELL, footprint[1] / FRAME_CELLS)) if rings else None


def union_bounds(a: tuple[float, float, float, float], b: tuple[float, float, float, float]
                 ) -> tuple[float, float, float, float]:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def cropped_area(occupancy: Occupancy, settings: AreaSettings, frames: GroundFrames | None,
                 limit: Region | None) -> SurveyArea:
    """The surveyed area within the limit, shrunk by the crop distance; uncropped, with a warning, where the crop
    would leave nothing: cropping trims unreliable edges, it must not discard all the photographs cover."""
    area = surveyed_area(occupancy, settings, frames, limit)
    if area is None and settings.crop > 0:
        area = surveyed_area(occupancy, replace(settings, crop=0.0), frames, limit)
        if area is not None:
            log.warning("Cropping %g m off the surveyed area's edges would leave nothing of it (%.0f m2): "
                        "kept uncropped", settings.crop, area.area)
    if area is None:
        raise InputError("The point cloud spans no area after filtering"
                         + (" within the boundary" if limit is not None else ""))
    return area


def reconstruction_limit(options: Options, model: SparseModel, georef: Georef) -> Region | None:
    """Where the reconstruction is kept: the boundary option's polygons, else auto-boundary's around the
    cameras (ODM's precedence), else anywhere."""
    if options.boundary.strip():
        if options.auto_boundary:
            log.warning("auto-boundary and boundary both set: using boundary")
        if not georef.georeferenced:
            log.warning("The reconstruction is in a local frame: the boundary cannot be placed and is ignored")
            return None
        limit = parse_boundary(options.boundary).area(georef.crs, georef.offset)
        log.info("Boundary: %.0f m2", limit.area)
        return limit
    if options.auto_boundary:
        distance = options.auto_boundary_distance or _auto_boundary_distance(model)
        log.info("Auto boundary: %.1f m around the cameras", distance)
        return camera_boundary(np.array([v.center[:2] for v in model.views]), distance)
    return None


def cloud_heights(xyz: np.ndarray, model: SparseModel) -> quality.Check:
    """Whether the cloud's heights, which the DSM is made of, are possible for the cameras (quality.py)."""
    nadir = quality.nadir_views(np.array([view.axis for view in model.views]))
    return quality.height_range(xyz, np.array([view.center for view in model.views]), nadir, "point cloud",
                                "cloud")


def filtered_tile(points: PointCloud, own: np.ndarray, limit: Region | None, options: Options,
                  counts: dict[str, int]) -> PointCloud:
    """What the filters keep of a tile's own points, given with a margin of their neighbours; `counts` gathers
    how many of its own points each filter left."""
    keep = np.ones(len(points), dtype=bool)
    if limit is not None:
        keep &= limit.contains(points.xyz[:, :2].astype(np.float64))
    if options.pc_filter > 0:
        kept = np.flatnonzero(keep)
        keep[kept] = statistical_inliers(points.xyz[kept], options.pc_filter, workers=options.max_concurrency)
        counts["after_outlier_filter"] = counts.get("after_outlier_filter", 0) + int((keep & own).sum())
    if options.pc_sample > 0:
        kept = np.flatnonzero(keep)
        keep[:] = False
        keep[kept[thin(points.xyz[kept], options.pc_sample)]] = True
        counts["after_sampling"] = counts.get("after_sampling", 0) + int((keep & own).sum())
    return points.subset(keep & own)


def filter_tiles(ctx: "StageContext", source: TiledCloud, path: Path, scratch: Path, limit: Region | None,
                 spacing: float, settings: AreaSettings, frames: GroundFrames | None
                 ) -> tuple[Occupancy, dict[str, int]]:
    """Every tile of the source filtered into the tiled cloud at `path`, its points counted for the area (whose
    grid reaches over the frames too)."""
    options = ctx.options
    margin = MARGIN_SPACINGS * spacing + 2 * options.pc_sample
    extent = source.extent if frames is None else union_bounds(source.extent, frames.bounds)
    occupancy = Occupancy(extent, settings.cell, settings.closing)
    counts: dict[str, int] = {}
    with tiled_writer(path, source.tiling, scratch) as write:
        for n, tile in enumerate(source.tiles):
            part = filtered_tile(*source.with_margin(tile, margin), limit, options, counts)
            write(tile.col, tile.row, part)
            occupancy.add(part.xyz[:, :2].astype(np.float64))
            ctx.progress(0.1 + 0.75 * (n + 1) / len(source.tiles))
    return occupancy, counts


def crop_tiles(filtered: TiledCloud, area: SurveyArea, path: Path, scratch: Path) -> TiledCloud:
    with tiled_writer(path, filtered.tiling, scratch) as write:
        for tile in filtered.tiles:
            part = filtered.read(tile)
            write(tile.col, tile.row, part.subset(area.contains(part.xyz[:, :2].astype(np.float64))))
    return TiledCloud.open(path)


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    georef = Georef.load(project)
    source_path = project.sparse_cloud if options.fast_orthophoto else project.dense_cloud
    model = sparse_model(pycolmap.Reconstruction(str(project.reconstruction_dir)))
    limit = reconstruction_limit(options, model, georef)
    if not source_path.exists():
        # optimize-disk-space deletes the dense cloud once this stage has filtered it.
        earlier = "openmvs" if source_path == project.dense_cloud else "opensfm"
        raise InputError(f"{source_path.relative_to(project.root)} is missing: re-run from {earlier}")
    output = project.filtered_cloud
    with tempfile.TemporaryDirectory(prefix="filterpoints.", dir=project.root) as tmp:
        scratch = Path(tmp)
        source = tile_sorted(ply_chunks(source_path), Tiling.fitting(ply_chunks(source_path)),
                             scratch / "source.ply", scratch)
        figures: dict = {"source": "sparse" if options.fast_orthophoto else "dense", "input_points": len(source),
                         "tile_m": source.tiling.side, "tiles": len(source.tiles)}
        if len(source) < 3:
            raise InputError("The point cloud is empty")
        ctx.progress(0.1)
        spacing = max(median_spacing(source.sample(SAMPLE_POINTS), total=len(source)), options.pc_sample)
        footprint = footprint_sides(model)
        settings = area_settings(spacing, footprint, options.crop)
        frames = ground_frames(model, footprint) if options.fast_orthophoto else None
        filtered_path = output if options.crop <= 0 else scratch / "filtered.ply"
        occupancy, counts = filter_tiles(ctx, source, filtered_path, scratch, limit, spacing, settings, frames)
        figures.update(counts)
        if occupancy.points < 3:
            raise InputError("The point cloud is empty or spans no area after filtering"
                             + (" within the boundary" if limit is not None else ""))
        area = cropped_area(occupancy, settings, frames, limit)
        cloud = TiledCloud.open(filtered_path)
        if options.crop > 0:
            cloud = crop_tiles(cloud, area, output, scratch)
    quality.record(project, [cloud_heights(cloud.sample(SAMPLE_POINTS), model)])
    write_geometry(project.bounds_file, area.geometry(georef.offset), georef.crs)
    figures.update({"points": len(cloud), "area_m2": round(area.area, 1), "area_parts": len(area.polygons),
                    "area_cell_m": round(settings.cell, 3), "area_closing_m": round(settings.closing, 2),
                    "density_per_m2": round(len(cloud) / max(area.area, 1e-9), 2)})
    project.update_stats("point_cloud", figures)
    if options.optimize_disk_space and source_path == project.dense_cloud:
        project.dense_cloud.unlink()
        log.info("optimize-disk-space: deleted the dense point cloud")
    log.info("Filtered point cloud: %d points over %.0f m2 in %d part(s), in %d tiles of %.0f m", len(cloud),
             area.area, len(area.polygons), len(cloud.tiles), cloud.tiling.side)
