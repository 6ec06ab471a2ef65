"""One tile of the true orthophoto: each ground cell of the surface projected into the views that frame it, a
z-buffer of the surface around the tile telling which of them see it, seamlines giving each cell a view that sees
it nearly from above (ortho/seams.py), and the views blended across them band by band (ortho/mosaic.py)."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..cloud.area import SurveyArea
from ..dem.grid import Grid, Window
from ..dense.views import View
from .images import ViewImages
from .mosaic import Mosaic
from .seams import FORBIDDEN, SeamSettings, place_seams
from .surface import SurfaceModel
from .visibility import Projection, off_nadir, visible, zbuffer

OCCLUSION_POOL = 3  # the z-buffer surface is this many cells coarser (highest of each block: occluders kept)
PROBE_STRIDE = 61  # every so many cells tell whether a view reaches a tile at all
HIDDEN = np.float32(1e6)  # score added to views that the surface hides a cell from (used only if none sees it)
HIDDEN_COST = np.float32(1e3)  # the same in the seam placement: dearer than any seam through the cell
NO_SOURCE = 65535  # odm_orthophoto_sources.tif's nodata


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


def tile_labels(candidates: list[Candidate], guides: list[np.ndarray], inside: np.ndarray,
                settings: SeamSettings) -> np.ndarray:
    """Per pixel of the tile, the index of the candidate that colours it (-1 outside the area): seams placed on
    a grid `factor` times coarser where the views' guides (their colours in [0, 1]) agree, the nearest-nadir view kept along the tile's rim so
    that neighbouring tiles meet on the same views, and wherever the coarse choice cannot see the pixel."""
    costs = seam_costs(candidates, inside, settings)
    nadir = np.argmin(costs, axis=0)
    f = settings.factor
    coarse_costs = np.stack([reduced(c, f) for c in costs])
    coarse_colours = np.stack([reduced(g, f) for g in guides])
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
    """The tile's colours and alpha (RGBA uint8 (4, h, w); for a multispectral survey its bands as float32, NaN
    where transparent, and alpha 0 or 255, (bands + 1, h, w)), and the index in `views` of the view that colours each pixel (-1 where
    none)."""
    core_grid = grid.sub(core)
    rgba = np.full((images.channels + 1, core.height, core.width), images.empty, images.dtype)
    rgba[-1] = 0
    sources = np.full((core.height, core.width), -1, np.int32)
    inside = area.covered_cells(core_grid)
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
        colours.append(images.as_channels(cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR,
                                                     borderMode=cv2.BORDER_CONSTANT)))
    labels = tile_labels(candidates, [images.guide(c) for c in colours], inside, settings)

    mosaic = Mosaic(inside.shape)
    for number, (candidate, colour) in enumerate(zip(candidates, colours)):
        own = labels == number
        if not own.any():
            continue
        valid = np.zeros(inside.shape, bool)
        valid[inside] = candidate.spread(candidate.sees, False)
        finite = np.isfinite(colour).all(axis=2)  # a band's frame may end short of the primary's
        mosaic.add(np.nan_to_num(colour), (valid | own) & finite, labels, number)
        sources[own] = views.index(candidate.view)
    values, covered = mosaic.result()
    rgba[:-1] = images.to_output(values).transpose(2, 0, 1)
    rgba[-1] = np.where(covered & inside, 255, 0)
    rgba[:-1, rgba[-1] == 0] = images.empty
    sources[rgba[-1] == 0] = -1
    return rgba, sources
