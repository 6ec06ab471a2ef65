"""True orthophoto: every ground cell coloured from an image that sees it nearly from above.

The surface comes from the filtered point cloud (dense, or sparse with fast-orthophoto), built here whether or
not a DSM was asked for. Per tile, each cell is projected into the images; a z-buffer of the surface around the
tile tells which images actually see it (not hidden by trees or buildings); seamlines give each cell a view that
sees it nearly from above, bending around what neighbouring views disagree on (ortho/seams.py), and views are
blended across them band by band (ortho/mosaic.py). Only tiles that hold some of the surveyed area are rendered,
and a tile asks only the views whose frame, cast onto the ground, reaches it. Writes odm_orthophoto/odm_orthophoto.tif
(RGBA, transparent outside the surveyed area), odm_orthophoto/odm_orthophoto_sources.tif (which photograph colours
each pixel) and, with orthophoto-png, odm_orthophoto/odm_orthophoto.png.
"""

from __future__ import annotations

import json
import tempfile
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
from ..parallel import forked_map
from ..photometry import Photometry
from ..resources import release_free_memory, workers_within_memory
from ..ortho.coverage import check_coverage, measure_coverage
from ..ortho.footprint import cast_frames, footprints, ground_outlines
from ..ortho.mosaic import Mosaic
from ..ortho.seams import FORBIDDEN, SeamSettings, place_seams
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
IMAGE_CACHE_BYTES = 384 * 2**20  # shared among the processes that render tiles
# What a process rendering tiles holds beside its images: measured up to 0.68 GB on a 153-image synthetic survey
# at 75 % and 65 % overlap (about 27 views reach a tile).
TILE_WORKING_BYTES = 800 * 2**20
TILE_CHUNKS = 4  # runs of neighbouring tiles per process: fewer keep more cached images useful, more balance the load
PROBE_STRIDE = 61  # every so many cells tell whether a view reaches a tile at all
HIDDEN = np.float32(1e6)  # score added to views that the surface hides a cell from (used only if none sees it)
NO_SOURCE = 65535  # odm_orthophoto_sources.tif's nodata
HIDDEN_COST = np.float32(1e3)  # the same in the seam placement: dearer than any seam through the cell


def orthophoto_path(project: "Project", extension: str = "tif") -> Path:
    return project.path("odm_orthophoto", f"odm_orthophoto.{extension}")


def sources_path(project: "Project") -> Path:
    """Which photograph colours each orthophoto pixel: its index in the `images` tag (a JSON list of names),
    NO_SOURCE where none; the seamlines run where the index changes."""
    return project.path("odm_orthophoto", "odm_orthophoto_sources.tif")


@dataclass
class ViewImages:
    """Decoded images at the scale the orthophoto needs, with a memory-bounded cache."""

    images_dir: Path
    levels: Levels | None
    photometry: Photometry | None
    budget: int = IMAGE_CACHE_BYTES
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
        while self._bytes > self.budget and len(self._cache) > 1:
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


@dataclass
class Candidate:
    """A view that may colour some of a tile's cells, and what it sees there. Its figures are kept for the cells
    in its frame only: a tile has a few dozen candidates, most of which frame part of it, and per-cell arrays of
    each were most of what a tile held."""

    view: View
    in_image: np.ndarray  # per cell: inside the view's frame
    u: np.ndarray  # per framed cell: image position, full-resolution pixels
    v: np.ndarray
    sees: np.ndarray  # per framed cell: not hidden from the view by the surface
    off: np.ndarray  # per framed cell: tan^2 of the off-nadir angle

    @staticmethod
    def of(view: View, projection: Projection, sees: np.ndarray, cells: np.ndarray) -> "Candidate":
        framed = projection.in_image
        return Candidate(view, framed, projection.u[framed], projection.v[framed], sees[framed],
                         off_nadir(view, cells[framed]))

    def spread(self, framed: np.ndarray, fill: float | bool) -> np.ndarray:
        """Values of the framed cells on every cell, `fill` elsewhere."""
        full = np.full(len(self.in_image), fill, dtype=framed.dtype)
        full[self.in_image] = framed
        return full

    @property
    def score(self) -> np.ndarray:
        """The nearest-nadir rule's ranking per cell: lower is better, HIDDEN added where the view is hidden, inf
        outside its frame."""
        return self.spread(np.where(self.sees, 0, HIDDEN) + self.off, np.inf)


def seam_costs(candidates: list[Candidate], inside: np.ndarray, settings: SeamSettings) -> np.ndarray:
    """(views, h, w) data costs of the seam placement on the full grid of the tile: the nadir preference, a
    hidden cell dearer than any seam, outside the frame forbidden. Cells outside the surveyed area cost 0."""
    costs = np.zeros((len(candidates), *inside.shape), np.float32)
    for k, candidate in enumerate(candidates):
        cost = settings.nadir_weight * candidate.off + np.where(candidate.sees, 0, HIDDEN_COST)
        costs[k][inside] = candidate.spread(cost, FORBIDDEN)
    return costs


def reduced(values: np.ndarray, factor: int) -> np.ndarray:
    """Block means (float32) over factor x factor pixels of (h, w) or (h, w, bands) values, the edge blocks
    padded by repetition."""
    h, w = values.shape[:2]
    padded = cv2.copyMakeBorder(values.astype(np.float32), 0, -h % factor, 0, -w % factor, cv2.BORDER_REPLICATE)
    return cv2.resize(padded, (padded.shape[1] // factor, padded.shape[0] // factor), interpolation=cv2.INTER_AREA)


def tile_labels(candidates: list[Candidate], colours: list[np.ndarray], inside: np.ndarray,
                settings: SeamSettings) -> np.ndarray:
    """Per pixel of the tile, the index of the candidate that colours it (-1 outside the area): seams placed on
    a grid `factor` times coarser where the views agree, the nearest-nadir view kept along the tile's rim so
    that neighbouring tiles meet on the same views, and wherever the coarse choice cannot see the pixel."""
    costs = seam_costs(candidates, inside, settings)
    nadir = np.argmin(costs, axis=0)
    f = settings.factor
    coarse_costs = np.stack([reduced(c, f) for c in costs])
    coarse_colours = np.stack([reduced(c.astype(np.float32) / 255, f) for c in colours])
    rim = np.ones(coarse_costs.shape[1:], bool)
    rim[1:-1, 1:-1] = False
    coarse = place_seams(coarse_costs, coarse_colours, rim, settings)
    labels = np.repeat(np.repeat(coarse, f, axis=0), f, axis=1)[:inside.shape[0], :inside.shape[1]]
    ii, jj = np.indices(inside.shape)
    chosen = costs[labels, ii, jj]
    worse = (chosen >= FORBIDDEN) | ((chosen >= HIDDEN_COST) & (costs[nadir, ii, jj] < HIDDEN_COST))
    edge = np.ones(inside.shape, bool)
    edge[f:-f, f:-f] = False
    labels = np.where(worse | edge, nadir, labels)
    return np.where(inside & (costs[nadir, ii, jj] < FORBIDDEN), labels, -1)


def render_tile(grid: Grid, core: Window, padded: Window, surface_model: SurfaceModel, views: list[View],
                scales: dict[str, float], images: ViewImages, area: SurveyArea,
                settings: SeamSettings) -> tuple[np.ndarray, np.ndarray]:
    """RGBA (4, h, w) of one tile, and the index in `views` of the view that colours each pixel (-1 where
    none)."""
    core_grid = grid.sub(core)
    rgba = np.zeros((4, core.height, core.width), np.uint8)
    sources = np.full((core.height, core.width), -1, np.int32)
    inside = area_mask(area, core_grid)
    if not inside.any():
        return rgba, sources
    padded_heights = surface_model.heights(grid.sub(padded))
    cells = _world(core_grid, padded_heights[core.inside(padded)])[inside.ravel()]
    occluder_grid, occluders = _pooled(grid.sub(padded), padded_heights, OCCLUSION_POOL)
    occluder_world = _world(occluder_grid, occluders)
    bucket_ground = 1.5 * occluder_grid.resolution

    seen_by: list[Candidate] = []  # the views whose frame holds some cell
    best = np.full(len(cells), np.inf, np.float32)  # the best score per cell
    probe = cells[::PROBE_STRIDE]
    for view in views:
        if not Projection.of(view, probe).in_image.any():
            continue  # the view does not reach this tile: skip projecting all its cells
        projection = Projection.of(view, cells)
        if not projection.in_image.any():
            continue
        # Z-buffer buckets about 1.5 occluder cells wide, in this view's full-resolution pixels.
        bucket = max(1.0, bucket_ground * view.camera.mean_focal_length() / float(np.median(
            projection.depth[projection.in_image])))
        buffer = zbuffer(Projection.of(view, occluder_world), bucket, (view.camera.height, view.camera.width))
        sees = visible(projection, buffer, bucket)
        seen_by.append(Candidate.of(view, projection, sees, cells))
        np.minimum(best, seen_by[-1].score, out=best)
    # Scores are recomputed rather than kept: a tile's cells times its views, they would be its largest arrays.
    candidates = [c for c in seen_by if (c.score <= best + settings.corridor).any()]
    del seen_by, best
    if not candidates:
        return rgba, sources

    colours = []
    for candidate in candidates:
        view = candidate.view
        image = images.get(view, scales[view.name])
        sx, sy = image.shape[1] / view.camera.width, image.shape[0] / view.camera.height
        map_x = np.full(inside.shape, -1, np.float32)
        map_y = np.full(inside.shape, -1, np.float32)
        map_x[inside] = candidate.spread((candidate.u + 0.5) * sx - 0.5, -1)
        map_y[inside] = candidate.spread((candidate.v + 0.5) * sy - 0.5, -1)
        colours.append(cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT))
    labels = tile_labels(candidates, colours, inside, settings)

    mosaic = Mosaic(inside.shape)
    for number, (candidate, colour) in enumerate(zip(candidates, colours)):
        own = labels == number
        if not own.any():
            continue
        valid = np.zeros(inside.shape, bool)
        valid[inside] = candidate.spread(candidate.sees, False)
        mosaic.add(colour[:, :, ::-1].astype(np.float32), valid | own, labels, number)
        sources[own] = views.index(candidate.view)
    rgb, covered = mosaic.result()
    rgba[:3] = rgb.transpose(2, 0, 1)
    rgba[3] = np.where(covered & inside, 255, 0)
    rgba[:3, rgba[3] == 0] = 0
    sources[rgba[3] == 0] = -1
    return rgba, sources


def serpentine(tiles: list[tuple[Window, Window]]) -> list[tuple[Window, Window]]:
    """Tiles row by row, every other row right to left: a tile then mostly needs the images its predecessor
    decoded, also at the turns, where a plain row order would start over at the far side."""
    def key(tile: tuple[Window, Window]) -> tuple[int, int]:
        band = tile[0].row // TILE
        return band, tile[0].col if band % 2 == 0 else -tile[0].col

    return sorted(tiles, key=key)


@dataclass
class TileJob:
    """Renders one tile; what it holds is inherited by the forked workers, each with its own image cache."""

    grid: Grid
    surface_model: SurfaceModel
    views: list[View]
    extents: list[tuple[float, float, float, float]]
    scales: dict[str, float]
    images: ViewImages
    area: SurveyArea

    def __call__(self, tile: tuple[Window, Window]) -> tuple[np.ndarray, np.ndarray]:
        """The tile's RGBA and, per pixel, the index in `views` of the photograph that colours it (NO_SOURCE
        where none)."""
        core, padded = tile
        reaching = [k for k, extent in enumerate(self.extents) if _overlaps(extent, self.grid.sub(core).bounds)]
        rgba, sources = render_tile(self.grid, core, padded, self.surface_model, [self.views[k] for k in reaching],
                                    self.scales, self.images, self.area, SeamSettings())
        release_free_memory()  # what the tile freed, so that the next one does not start from its high-water mark
        return rgba, np.array(reaching + [NO_SOURCE], np.uint16)[sources]  # -1 picks the last


def tile_workers(concurrency: int, tiles: int) -> int:
    """Processes rendering tiles: max-concurrency's, fewer where memory would not hold each one's working set
    beside its share of the image cache."""
    return workers_within_memory(min(concurrency, tiles),
                                 TILE_WORKING_BYTES + IMAGE_CACHE_BYTES // max(1, concurrency))


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
    fmt = RasterFormat(options.orthophoto_compression, options.cog, options.build_overviews)
    png = orthophoto_path(project, "png")
    for stale in (orthophoto_path(project), sources_path(project), png):
        stale.unlink(missing_ok=True)  # no product of an earlier run stands in for one this run refuses
    tiles = serpentine(list(area.tiles(grid, TILE, int(np.ceil(OCCLUSION_MARGIN / resolution)))))
    workers = tile_workers(options.max_concurrency, len(tiles))
    images = ViewImages(project.images_dir, load_levels(project.radiometry_file), photometry_of(ctx),
                        IMAGE_CACHE_BYTES // workers)
    frames = cast_frames(model)
    job = TileJob(grid, surface_model, model.views, footprints(frames), scales, images, area)
    log.info("Orthophoto: %d tiles in %d process%s", len(tiles), workers, "es" if workers > 1 else "")
    names = [view.name for view in model.views]
    covered = 0
    with TiledRaster(orthophoto_path(project), grid, georef.crs, georef.offset, 4, "uint8", fmt, alpha=True,
                     png=png if options.orthophoto_png else None) as out, \
            TiledRaster(sources_path(project), grid, georef.crs, georef.offset, 1, "uint16",
                        RasterFormat("DEFLATE", cog=False), nodata=NO_SOURCE,
                        tags={"images": json.dumps(names)}) as sources_out, \
            tempfile.TemporaryDirectory(prefix="ortho.", dir=project.root) as spill:
        rendered = forked_map(job, tiles, workers, chunk=max(1, len(tiles) // (TILE_CHUNKS * workers)),
                              spill=Path(spill))
        for n, ((core, _), (rgba, sources)) in enumerate(zip(tiles, rendered)):
            covered += int(np.count_nonzero(rgba[3]))
            out.write(core, rgba)
            sources_out.write(core, sources)
            ctx.progress(0.95 * (n + 1) / len(tiles))
        coverage = measure_coverage(covered * resolution**2, area, ground_outlines(model, frames), resolution)
        check_coverage(coverage)  # inside the writers: a refused orthophoto is never written
    project.update_stats("orthophoto", {"resolution_cm": round(resolution * 100, 3), "width": grid.width,
                                        "height": grid.height, "covered_m2": round(coverage.covered_m2, 1),
                                        "ground_share": round(coverage.share, 3),
                                        "surface_resolution_cm": round(surface_res * 100, 2),
                                        "bounds_wgs84": georef.wgs84_bounds(grid.bounds)})
    log.info("Orthophoto: %dx%d px at %.1f cm/px, %.0f m2 coloured, %.0f%% of the ground the photographs show",
             grid.width, grid.height, resolution * 100, coverage.covered_m2, 100 * coverage.share)
