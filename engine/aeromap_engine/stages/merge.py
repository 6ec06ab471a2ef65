"""Merge: a split survey's submodel products joined into the survey's own (split/mosaic.py), in the places and
formats an unsplit run writes them, so that the report, the map tiles and the processing node find them there.

Each place belongs to the submodel whose own cameras are nearest (the plan written by the split stage). Point
clouds are cut along those cutlines; orthophotos and elevation models are blended across a band around them,
so that what is left of the submodels' misalignment after they were joined shows as a gentle ramp, not a step
(with merge-skip-blending, orthophotos are cut along the cutlines without blending, as in ODM). The merged
orthophoto's KMZ and cutline (orthophoto-kmz, orthophoto-cutline) are written here, the cutline traced around the
merged orthophoto's opaque pixels.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import rasterio

from ..atomic_files import read_json
from ..cloud.area_tracing import SIMPLIFY, vectorize
from ..cloud.classes import class_counts
from ..crs_offset import Georef
from ..dem.grid import Grid
from ..io.georeferenced import write_cloud
from ..io.geotiff import RasterFormat
from ..io.gpkg import write_polygons
from ..io.kmz import write_kmz
from ..log import log
from ..options import Option
from ..parallel import forked_map, shared_progress
from ..resources import workers_within_memory
from ..split.blend import Owners
from ..split.mosaic import merge_rasters, merged_cloud

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("merge", "enum", "all",
           "What to merge of a split survey's submodels (see split): all, or only the pointcloud, orthophoto or "
           "dem.", "merge", choices=("all", "pointcloud", "orthophoto", "dem")),
    Option("merge-skip-blending", "bool", False,
           "Merge a split survey's orthophotos by cutting them along the cutlines, without blending them across "
           "(faster; seams may show).", "merge"),
]
WEIGHT = 0.5
# Width of the blend around a cutline, in metres of difference between the distances to the two submodels'
# nearest cameras: about a third of a photograph's footprint at usual heights, wide enough to hide a few
# centimetres of offset between submodels, narrow enough to stay inside their shared ground.
BLEND_BAND_M = 20.0
# The products merged, longest first so that the shorter ones fill in beside it, and the value of the merge
# option that selects each.
PRODUCTS = ("pointcloud", "orthophoto", "dsm", "dtm")
PRODUCT_OPTION = {"pointcloud": "pointcloud", "orthophoto": "orthophoto", "dsm": "dem", "dtm": "dem"}
# What one merging process holds: a window of every submodel's raster with its blend weights, or a chunk of
# points being sorted into tiles.
MERGE_WORKING_BYTES = 1 << 30
OUTLINE_CELLS = 2000  # cells at most across the grid the merged orthophoto's outline is traced on


@dataclass(frozen=True)
class ProductMerge:
    """Merges one product of the submodels, in a forked process beside the others' (the products are independent,
    and each merge keeps about one core busy); answers the figures it adds to the survey's statistics, by
    section, which the parent records. Progress goes through shared memory (parallel.shared_progress)."""

    ctx: "StageContext"
    submodels: list["Project"]
    owners: Owners
    georef: Georef
    done: Sequence[float]  # each product's fraction merged

    def __call__(self, item: tuple[int, str]) -> dict[str, dict]:
        index, product = item
        ctx = self.ctx.reporting_to(lambda fraction: self.done.__setitem__(index, fraction))
        if product == "pointcloud":
            figures = merge_cloud(ctx, self.submodels, self.owners, self.georef)
        elif product == "orthophoto":
            figures = merge_orthophoto(ctx, self.submodels, self.owners, self.georef)
        else:
            figures = merge_dem(ctx, product, self.submodels, self.owners, self.georef)
        self.done[index] = 1.0
        return figures


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    plan = read_json(project.submodel_plan)
    if plan is None:
        return
    submodels = [project.submodel(s["name"]) for s in plan["submodels"]]
    owners = Owners([np.array(s["core_cameras"], np.float64).reshape(-1, 2) for s in plan["submodels"]])
    georef = Georef.load(project)
    wanted = [p for p in PRODUCTS if options.merge in ("all", PRODUCT_OPTION[p])]
    workers = workers_within_memory(options.max_concurrency, MERGE_WORKING_BYTES)
    with shared_progress(len(wanted), ctx.progress) as done:
        job = ProductMerge(ctx, submodels, owners, georef, done)
        merged = list(forked_map(job, list(enumerate(wanted)), workers))
    record(project, merged)


def record(project: "Project", merged: list[dict[str, dict]]) -> None:
    """The merges' figures in the survey's statistics, section by section (the elevation models share one); the
    area the orthophoto covers is the survey's area, in the point cloud's section, where the report and the
    service read it."""
    sections: dict[str, dict] = {}
    for figures in merged:
        for section, values in figures.items():
            sections.setdefault(section, {}).update(values)
    for section, values in sections.items():
        project.update_stats(section, values)
    if "orthophoto" in sections:
        point_cloud = project.read_stats().get("point_cloud", {})
        project.update_stats("point_cloud", {**point_cloud, "area_m2": sections["orthophoto"]["covered_m2"]})


def merge_cloud(ctx: "StageContext", submodels: list["Project"], owners: Owners, georef: Georef) -> dict[str, dict]:
    project = ctx.project
    with tempfile.TemporaryDirectory(prefix="merge.", dir=project.root) as tmp:
        cloud = merged_cloud(existing([s.georeferenced_model("laz") for s in submodels]), owners, georef.offset,
                             Path(tmp) / "merged.ply", Path(tmp), ctx.options.pc_classify)
        ctx.progress(0.5)
        write_cloud(project, ctx.options, cloud, georef, ctx.part(0.5, 1.0).progress)
        counts = class_counts(cloud.parts()) if cloud.classified else {}
    log.info("Merged point cloud: %d points from %d submodels", len(cloud), len(submodels))
    return {"point_cloud": {"points": len(cloud), "source": "dense", "submodels": len(submodels)},
            "classification": counts}


def opaque_outline(orthophoto: Path) -> dict:
    """The outline of an orthophoto's opaque pixels (GeoJSON geometry in its CRS), traced on a grid of at most
    OUTLINE_CELLS cells across."""
    with rasterio.open(orthophoto) as dataset:
        step = max(1, -(-max(dataset.width, dataset.height) // OUTLINE_CELLS))
        shape = (-(-dataset.height // step), -(-dataset.width // step))
        opaque = dataset.dataset_mask(out_shape=shape) > 0
        left, _, _, top = dataset.bounds
        resolution = abs(dataset.res[0]) * dataset.width / shape[1]
    area = vectorize(opaque, Grid(left, top, resolution, shape[1], shape[0]), SIMPLIFY * resolution)
    if area is None:
        raise ValueError(f"{orthophoto} has no opaque pixel")
    return area.geometry()


def existing(paths: list[Path]) -> list[Path | None]:
    return [p if p.exists() else None for p in paths]


def wgs84_bounds(grid: Grid, georef: Georef) -> list[float] | None:
    """The bounds of a grid in CRS coordinates (the merged rasters'), in degrees."""
    xmin, ymin, xmax, ymax = grid.bounds
    return georef.wgs84_bounds((xmin - georef.offset[0], ymin - georef.offset[1], xmax - georef.offset[0],
                                ymax - georef.offset[1]))


def merge_dem(ctx: "StageContext", kind: str, submodels: list["Project"], owners: Owners,
              georef: Georef) -> dict[str, dict]:
    project = ctx.project
    project.dem(kind).unlink(missing_ok=True)
    merged = merge_rasters(existing([s.dem(kind) for s in submodels]), owners, project.dem(kind),
                           "dem", RasterFormat(cog=ctx.options.cog), BLEND_BAND_M)
    if merged is None:
        return {}
    grid, _ = merged
    log.info("Merged %s: %dx%d cells at %.1f cm", kind, grid.width, grid.height, grid.resolution * 100)
    return {"dem": {"resolution_cm": round(grid.resolution * 100, 3), kind: {"width": grid.width,
                                                                             "height": grid.height},
                    "bounds_wgs84": wgs84_bounds(grid, georef)}}


def merge_orthophoto(ctx: "StageContext", submodels: list["Project"], owners: Owners,
                     georef: Georef) -> dict[str, dict]:
    project, options = ctx.project, ctx.options
    png = project.orthophoto("png")
    for stale in (png, project.orthophoto("kmz"), project.orthophoto_cutline):
        stale.unlink(missing_ok=True)
    fmt = RasterFormat(options.orthophoto_compression, options.cog, options.build_overviews)
    band = 0.0 if options.merge_skip_blending else BLEND_BAND_M
    merged = merge_rasters(existing([s.orthophoto() for s in submodels]), owners, project.orthophoto(),
                           "orthophoto", fmt, band, png if options.orthophoto_png else None)
    if merged is None:
        return {}
    grid, covered = merged
    if options.orthophoto_kmz:
        write_kmz(project.orthophoto(), project.orthophoto("kmz"))
    if options.orthophoto_cutline:
        write_polygons(project.orthophoto_cutline, "cutline", opaque_outline(project.orthophoto()), georef.crs)
    area = covered * grid.resolution ** 2
    log.info("Merged orthophoto: %dx%d px at %.1f cm/px, %.0f m2", grid.width, grid.height,
             grid.resolution * 100, area)
    return {"orthophoto": {"resolution_cm": round(grid.resolution * 100, 3), "width": grid.width,
                           "height": grid.height, "covered_m2": round(area, 1),
                           "bounds_wgs84": wgs84_bounds(grid, georef)}}
