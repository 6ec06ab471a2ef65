"""True orthophoto: every ground cell coloured from an image that sees it nearly from above.

The surface comes from the filtered point cloud (dense, or sparse with fast-orthophoto), built here whether or
not a DSM was asked for. Per tile, each cell is projected into the images; a z-buffer of the surface around the
tile tells which images actually see it (not hidden by trees or buildings); seamlines give each cell a view that
sees it nearly from above, bending around what neighbouring views disagree on (ortho/seams.py), and views are
blended across them band by band (ortho/mosaic.py); ortho/render.py renders a tile. Only tiles that hold some
of the surveyed area are rendered, and a tile asks only the views whose frame, cast onto the ground, reaches it. Writes odm_orthophoto/odm_orthophoto.tif
(RGBA, transparent outside the surveyed area), odm_orthophoto/odm_orthophoto_sources.tif (which photograph colours
each pixel) and, with orthophoto-png, odm_orthophoto/odm_orthophoto.png; with orthophoto-kmz,
odm_orthophoto/odm_orthophoto.kmz (Google Earth); with orthophoto-cutline, odm_orthophoto/cutline.gpkg (the polygon
the orthophoto is cut to: the surveyed area, cropped). With skip-orthophoto, none of them.

A multispectral survey's orthophoto holds every band (float32, named Green, Red, RedEdge, NIR, ... as ODM names
them) and alpha: each capture's bands calibrated by radiometric-calibration and aligned to the primary band by
the rig's homographies and the lenses' differences (bands/), unless skip-band-alignment. A thermal survey's holds
its temperatures in °C (float32, the band LWIR), blended from the dataset stage's temperature files.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pycolmap

from .. import photometry
from ..atomic_files import read_json
from ..bands.radiometry import CALIBRATIONS
from ..bands.alignment import BandAlignment
from ..bands.stack import BandStack
from ..bands.view_angle import band_view_terms, view_angle_figures
from ..cloud.area import SurveyArea
from ..cloud.tiled import TiledCloud
from ..crs_offset import Georef
from ..dem.grid import Grid, Window, output_resolution
from ..dem.surface import COARSE_FACTOR, CoarseSurface, SurfaceSettings
from ..dense.views import View, sparse_model
from ..io.geojson import read_survey_area
from ..io.geotiff import RasterFormat, TiledRaster
from ..io.gpkg import write_polygons
from ..io.kmz import write_kmz
from ..io.images import load_levels
from ..log import log
from ..options import Option
from ..ortho.coverage import check_coverage, measure_coverage
from ..ortho.footprint import cast_frames, footprints, ground_outlines
from ..ortho.images import IMAGE_CACHE_BYTES, ViewImages, view_scales
from ..ortho.render import NO_SOURCE, render_tile
from ..ortho.seams import SeamSettings
from ..ortho.surface import SurfaceModel, surface_resolution
from ..parallel import forked_map
from ..resources import release_free_memory, workers_within_memory

if TYPE_CHECKING:
    from ..pipeline import StageContext

COMPRESSIONS = ("JPEG", "LZW", "PACKBITS", "DEFLATE", "LZMA", "NONE")
OPTIONS: list[Option] = [
    Option("orthophoto-resolution", "float", 5.0, "Orthophoto resolution in cm per pixel. It is never finer than "
           "the images' ground sampling distance allows, unless ignore-gsd is set.", "odm_orthophoto",
           minimum=0.1),
    Option("orthophoto-compression", "enum", "DEFLATE", "Compression of the orthophoto GeoTIFF. With JPEG, a "
           "Cloud-Optimized GeoTIFF holds the transparency as a mask instead of an alpha band.", "odm_orthophoto",
           choices=COMPRESSIONS),
    Option("orthophoto-png", "bool", False, "Also write the orthophoto as a PNG image.", "odm_orthophoto"),
    Option("orthophoto-kmz", "bool", False, "Also write the orthophoto as a KMZ file for Google Earth.",
           "odm_orthophoto"),
    Option("orthophoto-cutline", "bool", False, "Also write the polygon the orthophoto is cut to (the surveyed "
           "area, shrunk by crop, within boundary) as odm_orthophoto/cutline.gpkg, a GeoPackage in the "
           "orthophoto's CRS.", "odm_orthophoto"),
    Option("skip-orthophoto", "bool", False, "Do not make an orthophoto (nor its tiles, KMZ or cutline).",
           "odm_orthophoto"),
    Option("radiometric-calibration", "enum", "none", "Multispectral surveys: none keeps each band's digital "
           "numbers; camera corrects them for black level, gain, exposure and vignetting, on the survey's typical "
           "sunlight; camera+sun divides by the sunlight sensor's irradiance of each capture as well, giving "
           "reflectance.", "odm_orthophoto", choices=CALIBRATIONS),
    Option("skip-band-alignment", "bool", False, "Multispectral surveys: do not align the bands to the primary "
           "band (use when the camera aligns them itself).", "odm_orthophoto"),
    Option("build-overviews", "bool", False, "Add overviews (reduced copies for fast display) to the orthophoto "
           "when it is a plain GeoTIFF; a Cloud-Optimized GeoTIFF always has them.", "odm_orthophoto"),
]
WEIGHT = 1.5

TILE = 1024  # orthophoto pixels per tile side
OCCLUSION_MARGIN = 12.0  # metres of surface around a tile that may hide it from a camera
# What a process rendering tiles holds beside its images, with a margin over the most measured where a usual
# survey's overlap brings a few dozen views to a tile (bench/NOTES.md).
TILE_WORKING_BYTES = 800 * 2**20
TILE_CHUNKS = 4  # runs of neighbouring tiles per process: fewer keep more cached images useful, more balance the load


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


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


LENS_SOURCES = {"images": "measured in the images", "metadata": "as the metadata state it, which the images bear out",
                "metadata, refined": "as the metadata state it, refined in the images"}


def band_stack(ctx: "StageContext") -> BandStack | None:
    """A multispectral survey's bands, calibrated as asked and aligned (logged); None for other surveys."""
    document = read_json(ctx.project.bands_file)
    if document is None:
        return None
    options = ctx.options
    stack = BandStack.load(ctx.project.band_files_dir(document), document, options.radiometric_calibration)
    stack.measure_unit()
    if options.radiometric_calibration == "camera+sun" and stack.reference is None:
        log.warning("radiometric-calibration camera+sun: the photographs record no sunlight sensor irradiance, so "
                    "the bands are calibrated for the camera alone")
    found: dict[str, BandAlignment | None] = {}
    if options.skip_band_alignment:
        log.info("skip-band-alignment: the bands are taken as aligned by the camera")
    else:
        found = stack.align()
    for band, alignment in found.items():
        if alignment is None:
            log.warning("Band %s could not be aligned to %s (its gradients do not correlate): it is used as the "
                        "camera frames it", band, stack.survey.primary)
        elif alignment.stated:
            log.info("Band %s aligned to %s as the lenses' metadata state (the gradients do not correlate)", band,
                     stack.survey.primary)
        elif alignment.lens is None:
            log.info("Band %s aligned to %s (gradient correlation %.2f)", band, stack.survey.primary,
                     alignment.correlation)
        else:
            source = LENS_SOURCES[alignment.lens_source]
            log.info("Band %s aligned to %s (gradient correlation %.2f); its lens differs by up to %.1f px, %s "
                     "(tile shifts %.2f px RMS before the images' measure, %.2f px after)", band,
                     stack.survey.primary, alignment.correlation, alignment.lens.largest(), source,
                     *alignment.residual_px)
    if options.photometric_correction:
        primary = photometry.load(ctx.project.photometry_file)
        stack.view_terms = band_view_terms(stack, pycolmap.Reconstruction(str(ctx.project.reconstruction_dir)),
                                           primary.hotspot if primary is not None else None, options.max_concurrency)
    view_angle = {band: view_angle_figures(terms) for band, terms in stack.view_terms.items()}
    for band, figures in view_angle.items():
        log.info("Band %s brightens with the viewing angle, divided out: %s", band, json.dumps(figures))
    ctx.project.update_stats("bands", {"primary": stack.survey.primary, "bands": list(stack.survey.bands),
                                       "calibration": options.radiometric_calibration,
                                       "alignment": {band: "stated" if a and a.stated else
                                                     round(a.correlation, 3) if a else None
                                                     for band, a in found.items()},
                                       "lens_difference_px": {band: round(a.lens.largest(), 2)
                                                              for band, a in found.items() if a and a.lens},
                                       "lens_source": {band: a.lens_source for band, a in found.items()
                                                       if a and a.lens},
                                       "view_angle": view_angle})
    return stack


def multispectral_format(fmt: RasterFormat) -> RasterFormat:
    """JPEG cannot hold float32 bands: DEFLATE instead."""
    if fmt.compress != "JPEG":
        return fmt
    log.warning("orthophoto-compression JPEG cannot hold a multispectral orthophoto's float32 bands: DEFLATE is used")
    return RasterFormat("DEFLATE", fmt.cog, fmt.overviews)


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    png = project.orthophoto("png")
    for stale in (project.orthophoto(), project.orthophoto_sources, png, project.orthophoto("kmz"),
                  project.orthophoto_cutline):
        stale.unlink(missing_ok=True)  # no product of an earlier run stands in for one this run refuses
    if options.skip_orthophoto:
        log.info("skip-orthophoto: no orthophoto")
        return
    cv2.setNumThreads(options.max_concurrency)
    georef = Georef.load(project)
    model = sparse_model(pycolmap.Reconstruction(str(project.reconstruction_dir)))
    cloud = TiledCloud.open(project.filtered_cloud)
    area = read_survey_area(project.bounds_file, georef.offset)
    resolution = output_resolution(options.orthophoto_resolution, project.mean_gsd_cm(), options.ignore_gsd)
    grid = Grid.covering(area.bounds, resolution)
    surface_res = surface_resolution(cloud, resolution)
    xmin, ymin, xmax, ymax = grid.bounds
    reach = (xmin - OCCLUSION_MARGIN, ymin - OCCLUSION_MARGIN, xmax + OCCLUSION_MARGIN, ymax + OCCLUSION_MARGIN)
    surface_model = SurfaceModel(cloud, CoarseSurface.of(cloud.xyz_by_tile(), reach, surface_res * COARSE_FACTOR),
                                 surface_res, SurfaceSettings("max", options.dem_gapfill_steps))
    scales = view_scales(model, resolution)
    fmt = RasterFormat(options.orthophoto_compression, options.cog, options.build_overviews)
    tiles = serpentine(list(area.tiles(grid, TILE, int(np.ceil(OCCLUSION_MARGIN / resolution)))))
    workers = tile_workers(options.max_concurrency, len(tiles))
    corrections = photometry.applied(project.photometry_file, options.photometric_correction)
    stack = band_stack(ctx)
    images = ViewImages(project.images_dir, load_levels(project.radiometry_file), corrections,
                        IMAGE_CACHE_BYTES // workers, stack)
    if stack is not None:
        fmt = multispectral_format(fmt)
    frames = cast_frames(model)
    job = TileJob(grid, surface_model, model.views, footprints(frames), scales, images, area)
    log.info("Orthophoto: %d tiles in %d process%s", len(tiles), workers, "es" if workers > 1 else "")
    names = [view.name for view in model.views]
    covered = 0
    png_wanted = options.orthophoto_png and stack is None
    with TiledRaster(project.orthophoto(), grid, georef.crs, georef.offset, images.channels + 1,
                     np.dtype(images.dtype).name, fmt, alpha=True, png=png if png_wanted else None,
                     nodata=images.empty if stack is not None else None,
                     descriptions=list(stack.survey.bands) if stack is not None else None) as out, \
            TiledRaster(project.orthophoto_sources, grid, georef.crs, georef.offset, 1, "uint16",
                        RasterFormat("DEFLATE", cog=False), nodata=NO_SOURCE,
                        tags={"images": json.dumps(names)}) as sources_out, \
            tempfile.TemporaryDirectory(prefix="ortho.", dir=project.root) as spill:
        rendered = forked_map(job, tiles, workers, chunk=max(1, len(tiles) // (TILE_CHUNKS * workers)),
                              spill=Path(spill))
        for n, ((core, _), (rgba, sources)) in enumerate(zip(tiles, rendered)):
            covered += int(np.count_nonzero(rgba[-1]))
            out.write(core, rgba)
            sources_out.write(core, sources)
            ctx.progress(0.95 * (n + 1) / len(tiles))
        coverage = measure_coverage(covered * resolution**2, area, ground_outlines(model, frames), resolution)
        check_coverage(coverage)  # inside the writers: a refused orthophoto is never written
    if stack is not None and (options.orthophoto_png or options.orthophoto_kmz):
        log.warning("orthophoto-png and orthophoto-kmz are made of 8-bit colour: not for this multispectral "
                    "orthophoto of %s bands", np.dtype(images.dtype).name)
    elif options.orthophoto_kmz:
        write_kmz(project.orthophoto(), project.orthophoto("kmz"))
    if options.orthophoto_cutline:
        write_polygons(project.orthophoto_cutline, "cutline", area.geometry(georef.offset), georef.crs)
    project.update_stats("orthophoto", {"resolution_cm": round(resolution * 100, 3), "width": grid.width,
                                        "height": grid.height, "covered_m2": round(coverage.covered_m2, 1),
                                        "ground_share": round(coverage.share, 3),
                                        "surface_resolution_cm": round(surface_res * 100, 2),
                                        "bounds_wgs84": georef.wgs84_bounds(grid.bounds)})
    log.info("Orthophoto: %dx%d px at %.1f cm/px, %.0f m2 coloured, %.0f%% of the ground the photographs show",
             grid.width, grid.height, resolution * 100, coverage.covered_m2, 100 * coverage.share)
