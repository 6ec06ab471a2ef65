"""The submodels' products merged into one set: orthophotos and elevation models blended across the cutlines,
point clouds cut along them.

Rasters are merged window by window over the union of the submodels' extents, at the finest of their
resolutions: each submodel's raster is warped onto the window (bilinear, GDAL honouring its nodata or alpha, so
missing cells neither count nor darken), then the submodels are weighted by `cutline_weights`. Memory thus holds
one window of every submodel at a time, whatever the survey's size. Points are not blended: each location keeps
the points of its owner only, so overlapping submodels do not double the cloud.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import rasterio
from rasterio.enums import ColorInterp, Resampling
from rasterio.io import DatasetReader
from rasterio.vrt import WarpedVRT
from rasterio.windows import Window as RasterWindow
from scipy import ndimage

from ..cloud.points import PointCloud
from ..cloud.tiled import TiledCloud, Tiling, tile_sorted
from ..dem.grid import Grid, Window
from ..dem.surface import NODATA
from ..io.geotiff import RasterFormat, TiledRaster, transform
from ..io.pointcloud import read_las
from .blend import Owners, cutline_weights

RasterKind = Literal["orthophoto", "dem"]
WINDOW = 1024  # output cells per window side
EDGE_BAND_M = 5.0  # how far inside its data a submodel's raster fades in (edge_factors)
# Spacing of the distances to the submodels' cameras, interpolated in between: off by less than this, against a
# blend over tens of metres.
DISTANCE_STEP_M = 0.5


@dataclass(frozen=True)
class _Source:
    """One submodel's raster, warped onto the output grid."""

    index: int  # the submodel's position in the Owners
    vrt: WarpedVRT
    bounds: tuple[float, float, float, float]


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def output_grid(datasets: list[DatasetReader]) -> Grid:
    """The grid, in CRS coordinates, over the union of the rasters' bounds at the finest of their resolutions."""
    bounds = np.array([tuple(d.bounds) for d in datasets])
    resolution = min(min(abs(d.res[0]), abs(d.res[1])) for d in datasets)
    return Grid.covering((bounds[:, 0].min(), bounds[:, 1].min(), bounds[:, 2].max(), bounds[:, 3].max()),
                         resolution)


def _warped(dataset: DatasetReader, grid: Grid, kind: RasterKind) -> WarpedVRT:
    """The dataset as seen on the output grid (GDAL warps only the windows that are read)."""
    options = {"crs": dataset.crs, "transform": transform(grid, (0.0, 0.0)), "width": grid.width,
               "height": grid.height, "resampling": Resampling.bilinear}
    if kind == "dem":
        options["nodata"] = NODATA
    elif ColorInterp.alpha not in dataset.colorinterp:
        # A JPEG-compressed COG keeps transparency as a mask rather than an alpha band: warp it into one.
        options["add_alpha"] = True
    return WarpedVRT(dataset, **options)


def _read(vrt: WarpedVRT, window: Window, kind: RasterKind) -> tuple[np.ndarray, np.ndarray]:
    """(bands, h, w) float32 values and (h, w) validity of a warped source over a window of the grid."""
    raster_window = RasterWindow(window.col, window.row, window.width, window.height)
    if kind == "dem":
        values = vrt.read(1, window=raster_window).astype(np.float32)
        return values[None], (values != NODATA) & np.isfinite(values)
    colour = vrt.read([1, 2, 3], window=raster_window).astype(np.float32)
    alpha = vrt.read(vrt.count, window=raster_window)
    return colour, alpha > 0


def _blend(values: list[np.ndarray], valid: np.ndarray, weights: np.ndarray, kind: RasterKind) -> np.ndarray:
    """Weighted sum of the sources' values: RGBA uint8 or heights with NODATA where no source has data."""
    covered = valid.any(axis=0)
    total = np.zeros_like(values[0])
    for v, ok, w in zip(values, valid, weights):
        total += np.where(ok, v, 0.0) * w  # an invalid cell's value (nodata, black) must not leak in
    if kind == "dem":
        return np.where(covered, total[0], NODATA).astype(np.float32)
    rgba = np.zeros((4, *covered.shape), np.uint8)
    rgba[:3] = np.where(covered, np.clip(np.rint(total), 0, 255), 0).astype(np.uint8)
    rgba[3] = np.where(covered, 255, 0)
    return rgba


def _clipped(window: Window, grid: Grid) -> Window:
    row, col = max(0, window.row), max(0, window.col)
    return Window(row, col, min(grid.height, window.row + window.height) - row,
                  min(grid.width, window.col + window.width) - col)


def edge_factors(valid: np.ndarray, resolution: float, edge_band_m: float) -> np.ndarray:
    """(K, H, W) factors that fade each source in from 0 at the edge of its data to 1 at edge_band_m inside:
    where one submodel's raster ends inside another's, the other takes over gradually, not at a step."""
    inside = np.stack([ndimage.distance_transform_edt(ok) for ok in valid]) * resolution
    return np.clip(inside / edge_band_m, 0.0, 1.0)


def _merged_window(sources: list[_Source], owners: Owners, grid: Grid, core: Window, padded: Window,
                   kind: RasterKind, band_m: float) -> np.ndarray | None:
    """The blended values over one window, or None where no source has data. Sources are read over the padded
    window, so that the distance to the edge of their data is known across the window's edges."""
    sub = grid.sub(core)
    reaching = [s for s in sources if _overlaps(s.bounds, sub.bounds)]
    if not reaching:
        return None
    area = _clipped(padded, grid)
    inner = core.inside(area)
    reads = [_read(s.vrt, area, kind) for s in reaching]
    valid = np.stack([ok for _, ok in reads])
    if not valid[(slice(None), *inner)].any():
        return None
    # Without a blend (band_m 0) a submodel's raster ends where it ends: no fading in from its edges either.
    edges = edge_factors(valid, grid.resolution, EDGE_BAND_M)[(slice(None), *inner)] if band_m > 0 else None
    valid = valid[(slice(None), *inner)]
    distances = owners.grid_distances(sub, [s.index for s in reaching], DISTANCE_STEP_M)
    weights = cutline_weights(distances, valid, band_m, edges)
    return _blend([v[(slice(None), *inner)] for v, _ in reads], valid, weights, kind)


def merge_rasters(sources: list[Path | None], owners: Owners, out: Path, kind: RasterKind, fmt: RasterFormat,
                  band_m: float, png: Path | None = None) -> tuple[Grid, int] | None:
    """Merge the submodels' orthophotos (RGBA uint8) or elevation models (float32, nodata NODATA) into `out`.

    sources[k] is submodel k's raster (as in `owners`), None where it has none; all in one CRS. The output
    covers the union of their extents at the finest resolution, on cells aligned to multiples of it; windows
    that no source covers are left unwritten (nodata, or transparent). Writes nothing when no source exists.
    band_m: the width of the blend across the cutlines (see cutline_weights); 0 cuts without blending.
    `png`: also write a PNG copy of the orthophoto there. Returns the output grid (CRS coordinates) and the
    number of its cells that hold data."""
    present = [(k, path) for k, path in enumerate(sources) if path is not None]
    if not present:
        return None
    with contextlib.ExitStack() as stack:
        datasets = [stack.enter_context(rasterio.open(path)) for _, path in present]
        crss = {d.crs.to_wkt() if d.crs else None for d in datasets}
        if len(crss) > 1:
            raise ValueError(f"submodel rasters are in different CRSs: {[str(d.crs) for d in datasets]}")
        grid = output_grid(datasets)
        warped = [_Source(k, stack.enter_context(_warped(d, grid, kind)), tuple(d.bounds))
                  for (k, _), d in zip(present, datasets)]
        crs = datasets[0].crs.to_string() if datasets[0].crs else None
        count, dtype, nodata = (4, "uint8", None) if kind == "orthophoto" else (1, "float32", NODATA)
        # The grid is in CRS coordinates already: no engine-frame offset to add.
        with TiledRaster(out, grid, crs, (0.0, 0.0), count, dtype, fmt, nodata=nodata,
                         alpha=kind == "orthophoto", png=png) as raster:
            covered = 0
            for window, padded in grid.tiles(WINDOW, math.ceil(EDGE_BAND_M / grid.resolution)):
                merged = _merged_window(warped, owners, grid, window, padded, kind, band_m)
                if merged is not None:
                    raster.write(window, merged)
                    covered += int(np.count_nonzero(merged[3] if kind == "orthophoto" else merged != NODATA))
    return grid, covered


def _owned_chunks(path: Path, index: int, owners: Owners, classified: bool) -> Iterator[PointCloud]:
    """The points of submodel `index`'s LAS/LAZ that it owns, a chunk at a time (CRS coordinates, float64)."""
    for chunk in read_las(path, classified):
        keep = owners.owner(chunk.xyz[:, :2]) == index
        if keep.any():
            yield chunk.subset(keep)


def merged_cloud(sources: list[Path | None], owners: Owners, offset: tuple[float, float], path: Path,
                 scratch: Path, classified: bool = False) -> TiledCloud:
    """The submodels' georeferenced clouds (sources[k]: submodel k's LAS/LAZ, None where it has none) cut along
    the cutlines: each location keeps only the points of the submodel that owns it. Written at `path` as a tiled
    cloud in the world frame (the CRS less `offset`), the view counts taken from user_data (and the classes, when
    the submodels classified their points), ready for io/georeferenced.py's write_cloud."""
    shift = np.array([offset[0], offset[1], 0.0])

    def parts() -> Iterator[PointCloud]:
        for k, source in enumerate(sources):
            if source is not None:
                for part in _owned_chunks(source, k, owners, classified):
                    yield PointCloud((part.xyz - shift).astype(np.float32), part.rgb, part.views, part.classes)

    return tile_sorted(parts(), Tiling.fitting(parts()), path, scratch)
