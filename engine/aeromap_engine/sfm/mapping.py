"""Camera poses and sparse points from the verified matches: COLMAP's incremental or global (GLOMAP) mapper.
The planar and triangulation algorithms start from known poses instead (posed.py), and come here when those
fail."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pycolmap

from ..log import log
from .cameras import Refinement

SFM_ALGORITHMS = ("incremental", "global", "planar", "triangulation")
MIN_REGISTRATION_INLIERS = 15
SEED = 1  # fixed, so that runs on the same data differ only by the order of parallel sums


@dataclass(frozen=True)
class MappingSettings:
    algorithm: str  # one of SFM_ALGORITHMS; reconstruct maps planar and triangulation incrementally
    threads: int
    refine: Refinement
    use_position_priors: bool
    images: tuple[str, ...] = ()  # the images to map (a submodel's); all in the database when empty


def reconstruct(database: Path, images_dir: Path, work_dir: Path, settings: MappingSettings,
                on_registered: Callable[[], None]) -> tuple[list[pycolmap.Reconstruction], str]:
    """Every reconstruction found, largest first (several when the photographs fall into groups that share no
    view; none when no pair of images could start one), and the algorithm that found them."""
    work_dir.mkdir(parents=True, exist_ok=True)
    if settings.algorithm == "global":
        models = pycolmap.global_mapping(database, images_dir, work_dir, _global_options(settings))
        if models:
            return _by_size(models), "global"
        # Rotation averaging can fail on small or weakly linked view graphs, and on flat ground seen straight
        # down (two-view geometry is then a plane's, with two readings), where adding images one by one works.
        log.warning("Global mapping found no model; mapping incrementally instead")
    models = pycolmap.incremental_mapping(database, images_dir, work_dir, _incremental_options(settings),
                                          next_image_callback=on_registered)
    return _by_size(models), "incremental"


def _by_size(models: dict[int, pycolmap.Reconstruction]) -> list[pycolmap.Reconstruction]:
    return sorted(models.values(), key=lambda r: (r.num_reg_images(), r.num_points3D()), reverse=True)


def _incremental_options(settings: MappingSettings) -> pycolmap.IncrementalPipelineOptions:
    options = pycolmap.IncrementalPipelineOptions()
    options.num_threads = settings.threads
    options.random_seed = SEED
    options.extract_colors = False  # done once, on the final model
    options.image_names = list(settings.images)
    options.min_model_size = 3  # a group of three photographs still covers ground worth mapping
    # Global adjustment after every 25 % growth of the model instead of 10 %: it is the mapper's main cost on
    # large surveys, local adjustments keep the model in shape in between, and the last one is always run.
    options.ba_global_frames_ratio = 1.25
    options.ba_global_points_ratio = 1.25
    # Adjustments are the mapper's time, and each image is adjusted with its neighbours once it is added. These
    # settings cut that time while keeping the same images, points and camera accuracy against the truth
    # (bench/NOTES.md): global adjustments leave out points that add no coverage to their images (a survey's
    # overlap makes most of them redundant), and one refinement of a local adjustment (two of a global one)
    # follows the re-triangulation instead of up to two (five).
    options.mapper.ba_global_ignore_redundant_points3D = True
    options.ba_local_max_refinements = 1
    options.ba_global_max_refinements = 2
    options.ba_local_max_num_iterations = 25
    options.ba_global_max_num_iterations = 50
    # As in our own adjustments (alignment.py), a global adjustment also stops once an iteration changes the
    # cost by less than a millionth: the iterations after that take time and leave the cameras as close to the
    # truth.
    options.ba_global_function_tolerance = 1e-6
    # An image joins the model on 15 inlier correspondences with its points, as OpenSfM's resection asks, not
    # COLMAP's 30: on low-texture surveys (thermal frames over canopy) neighbours share few verified matches, and
    # at 30 the model broke into groups that only the GPS could place. The absolute pose is still solved by
    # RANSAC with a quarter of the correspondences as inliers, and the quality checks judge the model.
    options.mapper.abs_pose_min_num_inliers = MIN_REGISTRATION_INLIERS
    options.ba_refine_focal_length = settings.refine.focal
    options.ba_refine_extra_params = settings.refine.distortion
    options.use_prior_position = settings.use_position_priors
    # GPS fixes can be wildly wrong; a robust loss keeps them from bending the model. Its scale, in standard
    # deviations, is the 95 % bound of 3D Gaussian noise, as in the final adjustment with priors (COLMAP's
    # mapper default is that bound squared, which leaves a fix four deviations off with 80 % of its pull).
    options.use_robust_loss_on_prior_position = True
    options.prior_position_loss_scale = pycolmap.CeresPosePriorBundleAdjustmentOptions().prior_position_loss_scale
    return options


def _global_options(settings: MappingSettings) -> pycolmap.GlobalPipelineOptions:
    options = pycolmap.GlobalPipelineOptions()
    options.num_threads = settings.threads
    options.random_seed = SEED
    options.min_model_size = 3
    options.image_names = list(settings.images)
    options.mapper.num_threads = settings.threads
    options.mapper.random_seed = SEED
    options.mapper.bundle_adjustment.refine_focal_length = settings.refine.focal
    options.mapper.bundle_adjustment.refine_extra_params = settings.refine.distortion
    return options
