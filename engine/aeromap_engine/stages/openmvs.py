"""Dense point cloud: stereo partners per image, rectification, semi-global matching, multi-view fusion.

Reads the sparse reconstruction (opensfm/reconstruction, a COLMAP model in the engine's world frame) and the
images; writes openmvs/scene_dense.ply (world frame, colour, number of agreeing views). Depth maps are kept on
disk between the two passes and fused points are written as each image is fused, so memory grows with the
working image size, not with the number of images.
"""

from __future__ import annotations

import tempfile
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pycolmap

from .. import photometry
from ..cloud.points import PointCloud
from ..dense.camera import QUALITY_SCALES, Pinhole, undistortion_maps, working_pinhole, working_scale
from ..dense.fusion import DepthMap, FusionSettings, fuse_pairs, fuse_views
from ..dense.pairs import ViewLinks, link_views
from ..dense.rectify import UnmatchablePair, rectify_pair
from ..dense.stereo import SgbmSettings, depth_range, match, matching_plan, rectified_images, ref_depth
from ..dense.views import SparseModel, View, sparse_model
from ..errors import InputError
from ..io.images import Levels, load_levels, read_scaled, resize_area
from ..io.ply import ply_writer
from ..parallel import forked_map
from ..resources import workers_within_memory
from ..photometry import Photometry
from ..log import log, log_count
from ..options import Option

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("pc-quality", "enum", "medium",
           "Point cloud quality: the scale at which images are matched densely (medium: a quarter of their size). "
           "Each step up doubles the image side, so gives about 4 times the points, time and memory.",
           "openmvs", choices=tuple(QUALITY_SCALES)),
    Option("fast-orthophoto", "bool", False,
           "Skip the dense point cloud: the orthophoto is draped on a surface made from the sparse points. Much "
           "faster; fine for flat ground, less true where buildings and trees stand.", "openmvs"),
    Option("photometric-correction", "bool", True,
           "Correct each camera's vignetting (corners darker than the centre) and each photograph's exposure, as "
           "estimated from the ground the photographs share, before the point cloud is coloured, the model "
           "textured and the orthophoto mosaicked. The survey's overall brightness is kept.", "openmvs"),
]
WEIGHT = 1.2

IMAGE_CACHE = 24  # working images each process keeps; partners and neighbours are mostly recent views
CHUNKS_PER_WORKER = 4
# What a process holds per pixel of its working image: its cache of colour and grey images, the rectified pairs,
# the matching buffers and the depth maps, with a margin over what was measured (bench/NOTES.md).
WORKING_BYTES_PER_PIXEL = 250


@dataclass
class WorkingImages:
    """Undistorted working images (colour and grey) of the views, decoded on demand and cached."""

    images_dir: Path
    views: list[View]
    pinholes: list[Pinhole]
    levels: Levels | None
    photometry: Photometry | None
    _maps: dict = field(default_factory=dict)
    _cache: OrderedDict = field(default_factory=OrderedDict)

    def get(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if index in self._cache:
            self._cache.move_to_end(index)
            return self._cache[index]
        view, pinhole = self.views[index], self.pinholes[index]
        scale = pinhole.width / view.camera.width
        image = read_scaled(self.images_dir / view.name, scale, self.levels)
        if self.photometry is not None:
            image = self.photometry.correct(image, view.name)
        image = resize_area(image, pinhole.width, pinhole.height)
        key = (view.camera.camera_id, image.shape[1], image.shape[0])
        if key not in self._maps:
            self._maps[key] = undistortion_maps(view.camera, pinhole, (image.shape[1], image.shape[0]))
        map_x, map_y = self._maps[key]
        color = cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        entry = (color, cv2.cvtColor(color, cv2.COLOR_BGR2GRAY))
        self._cache[index] = entry
        if len(self._cache) > IMAGE_CACHE:
            self._cache.popitem(last=False)
        return entry


def _pair_depth(model: SparseModel, images: WorkingImages, i: int, j: int, settings: SgbmSettings,
                depths: tuple[float, float]) -> tuple[np.ndarray, float] | None:
    """The depth map of view i from its pair with view j, kept within `depths` (the nearest and farthest)."""
    ref, other = model.views[i], model.views[j]
    shared = np.intersect1d(ref.point_ids, other.point_ids, assume_unique=True)
    try:
        pair = rectify_pair(ref, images.pinholes[i], other, images.pinholes[j])
        pair, search = matching_plan(pair, pair.disparity(ref.center, model.xyz(shared)), settings)
    except UnmatchablePair as reason:
        log.info("No depth from %s with %s: %s", ref.name, other.name, reason)
        return None
    ref_rect, ref_mask, other_rect, other_mask = rectified_images(pair, images.get(i)[1], images.get(j)[1])
    disparity = match(ref_rect, ref_mask, other_rect, other_mask, search, settings)
    depth = ref_depth(pair, disparity, images.pinholes[i], ref.rotation)
    depth[~((depth >= depths[0]) & (depth <= depths[1]))] = np.nan
    return depth, pair.focal * pair.baseline


def _depth_map(model: SparseModel, images: WorkingImages, i: int, partners: list[int],
               sgbm: SgbmSettings, fusion: FusionSettings) -> DepthMap | None:
    view = model.views[i]
    depths = depth_range(view.to_camera(model.xyz(view.point_ids))[:, 2], sgbm)
    results = [r for j in partners if (r := _pair_depth(model, images, i, j, sgbm, depths)) is not None]
    if not results:
        return None
    return fuse_pairs([d for d, _ in results], [fb for _, fb in results], fusion)


@dataclass(frozen=True)
class DenseViews:
    """The views being densified: the sparse model, their working images (each forked worker fills its own cache)
    and their stereo partners and fusion neighbours."""

    model: SparseModel
    images: WorkingImages
    links: list[ViewLinks]


@dataclass(frozen=True)
class DepthJob:
    """One image's depth map from its stereo partners, saved in `folder` (its path answered; None where no pair
    gave depth). Inherited by forked workers."""

    dense: DenseViews
    sgbm: SgbmSettings
    fusion: FusionSettings
    folder: Path

    def __call__(self, i: int) -> Path | None:
        dense = self.dense
        depth = _depth_map(dense.model, dense.images, i, dense.links[i].partners, self.sgbm, self.fusion)
        if depth is None:
            return None
        path = self.folder / f"{i}.npz"
        _save(path, depth)
        return path


@dataclass(frozen=True)
class FusionJob:
    """The points of one image's depth map that its neighbours' depth maps confirm. Inherited by forked workers."""

    dense: DenseViews
    depth_maps: dict[int, Path]
    fusion: FusionSettings

    def __call__(self, i: int) -> PointCloud:
        views, pinholes = self.dense.model.views, self.dense.images.pinholes
        neighbours = [(views[j], pinholes[j], _load(self.depth_maps[j])) for j in self.dense.links[i].neighbours
                      if j in self.depth_maps]
        color = self.dense.images.get(i)[0]
        return fuse_views(views[i], pinholes[i], _load(self.depth_maps[i]), color[:, :, ::-1], neighbours,
                          self.fusion)


def dense_workers(concurrency: int, pinholes: list[Pinhole]) -> int:
    """Processes matching and fusing images: max-concurrency's, fewer where memory would not hold each one's
    image cache and matching buffers (WORKING_BYTES_PER_PIXEL of its largest working image)."""
    largest = max(p.width * p.height for p in pinholes)
    return workers_within_memory(concurrency, WORKING_BYTES_PER_PIXEL * largest)


def _chunk(items: int, workers: int) -> int:
    """Runs of neighbouring images per process: partners and neighbours are mostly recent views, which its image
    cache then holds."""
    return max(1, items // (CHUNKS_PER_WORKER * workers))


def _save(path: Path, depth: DepthMap) -> None:
    np.savez(path, depth=depth.depth, focal_baseline=depth.focal_baseline)


def _load(path: Path) -> DepthMap:
    with np.load(path) as data:
        return DepthMap(data["depth"], float(data["focal_baseline"]))


def densify(project: "Project", quality: str, corrections: Photometry | None, concurrency: int = 1,
            progress: Callable[[float], None] = lambda fraction: None) -> dict:
    """Write the fused dense cloud of the project's reconstruction (image by image, in `concurrency` processes at
    most: neither the depth maps nor the points are held together in memory); figures about it."""
    model = sparse_model(pycolmap.Reconstruction(str(project.reconstruction_dir)))
    if len(model.views) < 2:
        raise InputError("The reconstruction has fewer than 2 registered images: nothing to match densely")
    links: list[ViewLinks] = link_views(model)
    pinholes = [working_pinhole(v.camera, working_scale(v.camera.width, v.camera.height, quality))
                for v in model.views]
    images = WorkingImages(project.images_dir, model.views, pinholes, load_levels(project.radiometry_file),
                           corrections)
    alone = [v.name for v, link in zip(model.views, links) if not link.partners]
    if len(alone) == len(model.views):
        raise InputError("No two images overlap enough for dense matching (too little overlap between images)")
    if alone:
        log.warning("%d image(s) have no stereo partner with enough overlap and add no dense points: %s",
                    len(alone), ", ".join(alone))
    sgbm, fusion = SgbmSettings(), FusionSettings()
    workers = dense_workers(concurrency, pinholes)
    log.info("Dense matching in %d process%s", workers, "es" if workers > 1 else "")
    points = 0
    with tempfile.TemporaryDirectory(prefix="depthmaps.", dir=project.root) as tmp:
        paired = [i for i, link in enumerate(links) if link.partners]
        dense = DenseViews(model, images, links)
        depth_job = DepthJob(dense, sgbm, fusion, Path(tmp))
        paths: dict[int, Path] = {}
        for n, (i, path) in enumerate(zip(paired, forked_map(depth_job, paired, workers,
                                                             _chunk(len(paired), workers)))):
            if path is not None:
                paths[i] = path
            progress(0.7 * (n + 1) / len(paired))
            log_count("Images with a depth map", n + 1, len(paired), every=10)
        fused = list(paths)
        fusion_job = FusionJob(dense, paths, fusion)
        with ply_writer(project.dense_cloud, Path(tmp)) as append:
            for n, part in enumerate(forked_map(fusion_job, fused, workers, _chunk(len(fused), workers),
                                                spill=Path(tmp))):
                append(part)
                points += len(part)
                progress(0.7 + 0.3 * (n + 1) / len(fused))
                log_count("Depth maps fused", n + 1, len(fused), every=10)
            if points == 0:
                raise InputError("Dense matching found no surface that several images agree on")
    return {"images": len(model.views), "images_without_partner": alone, "depth_maps": len(paths),
            "working_size": max(pinholes[0].width, pinholes[0].height), "points": points}


def run(ctx: "StageContext") -> None:
    project = ctx.project
    cv2.setNumThreads(ctx.options.max_concurrency)
    if ctx.options.fast_orthophoto:
        log.info("fast-orthophoto: skipping the dense point cloud, the sparse points will be used")
        project.dense_cloud.unlink(missing_ok=True)
        return
    corrections = photometry.applied(project.photometry_file, ctx.options.photometric_correction)
    figures = densify(project, ctx.options.pc_quality, corrections, ctx.options.max_concurrency, ctx.progress)
    log.info("Dense point cloud: %d points from %d depth maps", figures["points"], figures["depth_maps"])
    project.update_stats("dense", figures)
