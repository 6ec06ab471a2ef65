"""True orthophoto: every ground cell coloured from the image that sees it most nearly from above.

The surface comes from the filtered point cloud (dense, or sparse with fast-orthophoto), built here whether or
not a DSM was asked for. Per tile, each cell is projected into the images; a z-buffer of the surface around the
tile tells which images actually see it (not hidden by trees or buildings); the most nadir of those colours it,
and views are blended across their seams. Only tiles that hold some of the surveyed area are rendered, and a
tile asks only the views whose frame, cast onto the ground, reaches it. Writes odm_orthophoto/odm_orthophoto.tif
(RGBA, transparent outside the surveyed area) and, with orthophoto-png, odm_orthophoto/odm_orthophoto.png.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pycolmap

from ..cloud.area import SurveyArea
from ..cloud.filters import median_spacing
from ..cloud.tiled import TiledCloud
from ..dem.grid import Grid, Window, resample
from ..dem.surface import CoarseSurface, SurfaceSettings, surface
from ..dense.views import SparseModel, View, sparse_model
from ..georef import Georef
from ..io.geotiff import RasterFormat, TiledRaster
from ..io.images import Levels, load_levels, read_scaled
from ..log import log
from ..options import Option
from ..photometry import Photometry
from ..ortho.footprint import footprints
from ..ortho.mosaic import Mosaic
from ..ortho.visibility import Projection, off_nadir, visible, zbuffer
from .odm_dem import COARSE_FACTOR, area_mask, output_resolution
from .odm_filterpoints import filtered_cloud_path, load_boundary
from .openmvs import photometry_of, reconstruction_dir

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

COMPRESSIONS = ("JPEG", "LZW", "PACKBITS", "DEFLATE", "LZMA", "NONE")
OPTIONS: list[Option] = [
    Option("orthophoto-resolution", "float", 5.0, "Orthophoto resolution in cm per pixel. It is never finer than "
           "the images' ground sampling distance allows, unless ignore-gsd is set.", "odm_orthophoto",
           minimum=0.1),
    Option("orthophoto-compression", "enum", "DEFLATE", "Compression of the orthophoto GeoTIFF. With JPEG, a "
           "Cloud-Optimized GeoTIFF holds the transparency as a mask instead of an alpha band.", "odm_orthophoto",
           choices=COMPRESSIONS),
    Option("orthophoto-png", "bool", False, "Also write the orthophoto as a PNG image.", "odm_orthophoto"),
    Option("build-overviews", "bool", False, "Add overviews (reduced copies for fast display) to the orthophoto "
           "when it is a plain GeoTIFF; a Cloud-Optimized GeoTIFF always has them.", "odm_orthophoto"),
]
WEIGHT = 1.5

TILE = 1024  # orthophoto pixels per tile side
OCCLUSION_MARGIN = 12.0  # metres of surface around a tile that may hide it from a camera
OCCLUSION_POOL = 3  # the z-buffer surface is this many cells coarser (highest of each block: occluders kept)
SURFACE_CELLS = 4  # orthophoto pixels per cell of the surface, at least
SPACING_SAMPLE = 20_000  # points drawn to measure the cloud's spacing
SAMPLING = 1.5  # image pixels per orthophoto pixel at least, before a finer decoding of the image is used
IMAGE_CACHE_BYTES = 768 * 2**20
PROBE_STRIDE = 61  # every so many cells tell whether a view reaches a tile at all
HIDDEN = np.float32(1e6)  # score added to views that the surface hides a cell from (used only if none sees it)


def orthophoto_path(project: "Project", extension: str = "tif") -> Path:
    return project.path("odm_orthophoto", f"odm_orthophoto.{extension}")


@dataclass
class ViewImages:
    """Decoded images at the scale the orthophoto needs, with a memory-bounded cache."""

    images_dir: Path
    levels: Levels | None
    photometry: Photometry | None
    _cache: OrderedDict = field(default_factory=OrderedDict)
    _bytes: int = 0

    def get(self, view: View, scale: float) -> np.ndarray:
        if view.name in self._cache:
            self._cache.move_to_end(view.name)
            return self._cache[view.name]
        image = read_scaled(self.images_dir / view.name, scale, self.levels)
        if self.photometry is not None:
            image = self.photometry.correct(image, view.name)
        self._cache[view.name] = image
        self._bytes += image.nbytes
        while self._bytes > IMAGE_CACHE_BYTES and len(self._cache) > 1:
            self._bytes -= self._cache.popitem(last=False)[1].nbytes
        return image


def view_scales(model: SparseModel, resolution: float) -> dict[str, float]:
    """Per view, the decoding scale (a power of two) that still gives SAMPLING image pixels per orthophoto
    pixel: finer decoding would only cost time, coarser would blur."""
    scales = {}
    for view in model.views:
        depths = view.to_camera(model.xyz(view.point_ids))[:, 2] if len(view.point_ids) else np.array([])
        gsd = float(np.median(depths)) / view.camera.mean_focal_length() if len(depths) else resolution
        scale = 1.0
        while scale > 1 / 8 and gsd / (scale / 2) <= resolution / SAMPLING:
            scale /= 2
        scales[view.name] = scale
    return scales


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def surface_resolution(cloud: TiledCloud, resolution: float) -> float:
    """The surface the orthophoto is draped on is smoother than the DSM: SURFACE_CELLS orthophoto pixels per
    cell at least (the detail of ODM's decimated 2.5D mesh; finer height noise would only warp the texture),
    and twice the points' spacing (sparse points would each raise a bump)."""
    return max(SURFACE_CELLS * resolution, 2 * median_spacing(cloud.sample(SPACING_SAMPLE), total=len(cloud)))


@dataclass(frozen=True)
class SurfaceModel:
    """The surface the orthophoto is draped on: the tiled points and the gap-filling coarse surface."""

    cloud: TiledCloud
    coarse: CoarseSurface
    resolution: float
    settings: SurfaceSettings

    def heights(self, grid: Grid) -> np.ndarray:
        """Surface heights at the cells of `grid`, computed at the surface's own resolution."""
        native = Grid.covering(grid.bounds, self.resolution)
        margin = 4 * self.resolution
        xmin, ymin, xmax, ymax = native.bounds
        values = surface(self.cloud.near((xmin - margin, ymin - margin, xmax + margin, ymax + margin)).xyz, native,
                         self.coarse, self.settings)
        return resample(native, values, grid)


def _world(grid: Grid, heights: np.ndarray) -> np.ndarray:
    x, y = grid.centers()
    xx, yy = np.broadcast_arrays(x, y)
    return np.c_[xx.ravel(), yy.ravel(), heights.ravel()].astype(np.float64)


def _pooled(grid: Grid, heights: np.ndarray, factor: int) -> tuple[Grid, np.ndarray]:
    """A coarser grid with the highest value of each block (blocks cut at the edges are padded)."""
    h, w = -(-heights.shape[0] // factor) * factor, -(-heights.shape[1] // factor) * factor
    padded = np.pad(heights, ((0, h - heights.shape[0]), (0, w - heights.shape[1])), mode="edge")
    pooled = padded.reshape(h // factor, factor, w // factor, factor).max(axis=(1, 3))
    return Grid(grid.x0, grid.y1, grid.resolution * factor, w // factor, h // factor), pooled


def render_tile(grid: Grid, core: Window, padded: Window, surface_model: SurfaceModel, views: list[View],
                scales: dict[str, float], images: ViewImages, area: SurveyArea) -> np.ndarray:
    """RGBA (4, h, w) of one tile."""
    core_grid = grid.sub(core)
    rgba = np.zeros((4, core.height, core.width), np.uint8)
    inside = area_mask(area, core_grid)
    if not inside.any():
        return rgba
    padded_heights = surface_model.heights(grid.sub(padded))
    cells = _world(core_grid, padded_heights[core.inside(padded)])[inside.ravel()]
    occluder_grid, occluders = _pooled(grid.sub(padded), padded_heights, OCCLUSION_POOL)
    occluder_world = _world(occluder_grid, occluders)
    bucket_ground = 1.5 * occluder_grid.resolution

    seen_by = []  # (view, projection, visible) for the views whose frame holds some cell
    best_score = np.full(len(cells), np.inf, np.float32)
    labels = np.full(len(cells), -1, np.int32)
    probe = cells[::PROBE_STRIDE]
    for view in views:
        if not Projection.of(view, probe).in_image.any():
            continue  # the view does not reach this tile: skip projecting all its cells
        projection = Projection.of(view, cells)
        # Z-buffer buckets about 1.5 occluder cells wide, in this view's full-resolution pixels.
        bucket = max(1.0, bucket_ground * view.camera.mean_focal_length() / float(np.median(
            projection.depth[projection.in_image])))
        buffer = zbuffer(Projection.of(view, occluder_world), bucket, (view.camera.height, view.camera.width))
        sees = visible(projection, buffer, bucket)
        score = np.where(sees, 0, HIDDEN) + off_nadir(view, cells)
        better = projection.in_image & (score < best_score)
        best_score[better] = score[better]
        labels[better] = len(seen_by)
        seen_by.append((view, projection, sees))

    label_grid = np.full(inside.shape, -1, np.int32)
    label_grid[inside] = labels
    mosaic = Mosaic(inside.shape)
    for number, (view, projection, sees) in enumerate(seen_by):
        if not (labels == number).any():
            continue
        scale = scales[view.name]
        image = images.get(view, scale)
        sx, sy = image.shape[1] / view.camera.width, image.shape[0] / view.camera.height
        map_x = np.full(inside.shape, -1, np.float32)
        map_y = np.full(inside.shape, -1, np.float32)
        map_x[inside] = np.where(projection.in_image, (projection.u + 0.5) * sx - 0.5, -1)
        map_y[inside] = np.where(projection.in_image, (projection.v + 0.5) * sy - 0.5, -1)
        colour = cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        valid = np.zeros(inside.shape, bool)
        valid[inside] = projection.in_image & (sees | (labels == number))
        mosaic.add(colour[:, :, ::-1].astype(np.float32), valid, label_grid, number)
    rgb, covered = mosaic.result()
    rgba[:3] = rgb.transpose(2, 0, 1)
    rgba[3] = np.where(covered & inside, 255, 0)
    rgba[:3, rgba[3] == 0] = 0
    return rgba


def serpentine(tiles: list[tuple[Window, Window]]) -> list[tuple[Window, Window]]:
    """Tiles row by row, every other row right to left: a tile then mostly needs the images its predecessor
    decoded, also at the turns, where a plain row order would start over at the far side."""
    def key(tile: tuple[Window, Window]) -> tuple[int, int]:
        band = tile[0].row // TILE
        return band, tile[0].col if band % 2 == 0 else -tile[0].col

    return sorted(tiles, key=key)


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    cv2.setNumThreads(options.max_concurrency)
    georef = Georef.load(project)
    model = sparse_model(pycolmap.Reconstruction(str(reconstruction_dir(project))))
    cloud = TiledCloud.open(filtered_cloud_path(project))
    area = load_boundary(project, georef)
    resolution = output_resolution(project, options.orthophoto_resolution, options.ignore_gsd)
    grid = Grid.covering(area.bounds, resolution)
    surface_res = surface_resolution(cloud, resolution)
    xmin, ymin, xmax, ymax = grid.bounds
    reach = (xmin - OCCLUSION_MARGIN, ymin - OCCLUSION_MARGIN, xmax + OCCLUSION_MARGIN, ymax + OCCLUSION_MARGIN)
    surface_model = SurfaceModel(cloud, CoarseSurface.of(cloud.xyz_by_tile(), reach, surface_res * COARSE_FACTOR),
                                 surface_res, SurfaceSettings("max", options.dem_gapfill_steps))
    scales = view_scales(model, resolution)
    extents = footprints(model)
    images = ViewImages(project.images_dir, load_levels(project.radiometry_file), photometry_of(ctx))
    fmt = RasterFormat(options.orthophoto_compression, options.cog, options.build_overviews)
    png = orthophoto_path(project, "png")
    png.unlink(missing_ok=True)  # no stale PNG from a run with other options
    tiles = serpentine(list(area.tiles(grid, TILE, int(np.ceil(OCCLUSION_MARGIN / resolution)))))
    covered = 0
    with TiledRaster(orthophoto_path(project), grid, georef.crs, georef.offset, 4, "uint8", fmt, alpha=True,
                     png=png if options.orthophoto_png else None) as out:
        for n, (core, padded) in enumerate(tiles):
            reaching = [v for v, extent in zip(model.views, extents) if _overlaps(extent, grid.sub(core).bounds)]
            rgba = render_tile(grid, core, padded, surface_model, reaching, scales, images, area)
            covered += int(np.count_nonzero(rgba[3]))
            out.write(core, rgba)
            ctx.progress(0.95 * (n + 1) / len(tiles))
    area = covered * resolution**2
    project.update_stats("orthophoto", {"resolution_cm": round(resolution * 100, 3), "width": grid.width,
                                        "height": grid.height, "area_m2": round(area, 1),
                                        "surface_resolution_cm": round(surface_res * 100, 2),
                                        "bounds_wgs84": georef.wgs84_bounds(grid.bounds)})
    log.info("Orthophoto: %dx%d px at %.1f cm/px, %.0f m2", grid.width, grid.height, resolution * 100, area)
