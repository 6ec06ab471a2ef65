"""Bringing a reconstruction into the world frame: robust similarity to known positions, levelling by gravity,
bundle adjustment with position priors.

A few wild GPS fixes are common (a receiver still converging, a glitch at a turn), so alignments are robust:
least median of squares first (the similarity of three positions that leaves the smallest median residual over
all, which ignores anything less than half of the positions do), then least squares on the positions that agree
with the model to within a threshold that follows the data (a multiple of the median residual). A consensus
count within the stated GPS accuracy would not do: fixes 30 m off agree with a 10 m accuracy's bound. A survey flown along one line cannot fix the roll about that line
from positions alone: there the model is first levelled by the cameras' viewing directions, then turned only as
far as it takes to lay its line onto the positions' line.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pycolmap

from .cameras import Refinement
from .database import PositionPrior

MIN_INLIER_ERROR = 0.1  # m; residuals below this always count as agreeing (RTK fixes are this good)
# Residuals up to this many times the median agree with the model: about 6 standard deviations of Gaussian 3D
# noise, so that only fixes that are plainly wrong are left out.
INLIER_MEDIAN_FACTOR = 4.0
MIN_ALIGNMENT_POINTS = 3
MAX_SAMPLES = 500  # triples tried by least median of squares: all but certain to draw three good fixes
COLLINEAR_RATIO = 0.05  # median distance from the principal line, over the length, below which points are a line
# Observations an adjustment takes at once (the solver's memory grows with them, and a large survey's would take
# gigabytes; bench/NOTES.md), the grid over each image whose cells keep one point each when there are more, and the
# observations of the points then adjusted at once with the cameras held.
ADJUSTED_OBSERVATIONS = 600_000
COVERAGE_GRID = 12
POINT_CHUNK_OBSERVATIONS = 200_000
OBLIQUE_AXIS_DEG = 30.0  # a view without a stated pitch whose axis lies this far from the vertical is oblique
MAX_LEVELLING_ROUNDS = 10  # each leaves out the obliques that the previous vertical shows
# The least uncertainty granted the vertical that viewing directions give: gimbal-stabilised views average to
# within about half a degree of it, whatever their number.
VIEWS_VERTICAL_BIAS_DEG = 0.5


AlignmentMode = Literal["full", "line", "level"]


@dataclass(frozen=True)
class SimilarityFit:
    transform: pycolmap.Sim3d  # target from source
    inliers: np.ndarray  # bool per position
    mode: AlignmentMode


def apply(transform: pycolmap.Sim3d, points: np.ndarray) -> np.ndarray:
    """(N, 3) points through a similarity."""
    matrix = np.asarray(transform.matrix())
    return np.asarray(points, dtype=np.float64) @ matrix[:, :3].T + matrix[:, 3]


def is_collinear(points: np.ndarray) -> bool:
    """Whether points spread along one line only (a corridor flight), leaving the roll about it unknown. Judged
    by the median distance from the principal line, so that one point pulled aside does not make a plane."""
    centred = points - points.mean(axis=0)
    _, singular, axes = np.linalg.svd(centred, full_matrices=False)
    if singular[0] == 0:
        return True
    off_line = centred - np.outer(centred @ axes[0], axes[0])
    extent = np.ptp(centred @ axes[0])
    return float(np.median(np.linalg.norm(off_line, axis=1))) < COLLINEAR_RATIO * extent


def robust_similarity(source: np.ndarray, target: np.ndarray, max_error: float,
                      mode: AlignmentMode = "full", min_error: float = MIN_INLIER_ERROR) -> SimilarityFit | None:
    """Similarity taking `source` points onto `target` points, ignoring those that disagree: farther than a
    multiple of the median residual, but never within `min_error` nor beyond `max_error`.

    mode "full": all seven parameters from the points. "line": the points spread along one line; the source is
    levelled and keeps its roll about the line. "level": the source is levelled and the target heights are not
    trusted; heading, scale and horizontal position come from horizontal coordinates, the height offset from
    the median difference.
    """
    if len(source) < MIN_ALIGNMENT_POINTS:
        return None
    if mode == "full":
        transform = least_median_similarity(source, target)
    else:
        transform = _ESTIMATORS[mode](source, target)
    if transform is None:
        return None
    compared = slice(0, 2) if mode == "level" else slice(0, 3)
    everything = np.ones(len(source), dtype=bool)
    if len(source) == MIN_ALIGNMENT_POINTS:
        return SimilarityFit(transform, everything, mode)  # three positions cannot outvote one another
    # A similarity fits three positions exactly, so on few positions the median residual understates the noise:
    # Rousseeuw's finite-sample correction for least median of squares.
    small_sample = 1.0 + 5.0 / (len(source) - MIN_ALIGNMENT_POINTS)
    # Least squares on those that agree even when all do: the best triple alone leans with its three fixes' noise,
    # which all of them average out.
    inliers = None
    for _ in range(3):
        residuals = np.linalg.norm((apply(transform, source) - target)[:, compared], axis=1)
        spread = INLIER_MEDIAN_FACTOR * small_sample * float(np.median(residuals))
        threshold = min(max_error, max(min_error, spread))
        agreeing = residuals <= threshold
        if agreeing.sum() < MIN_ALIGNMENT_POINTS or (inliers is not None and np.array_equal(agreeing, inliers)):
            break
        inliers = agreeing
        refit = _ESTIMATORS[mode](source[inliers], target[inliers])
        if refit is None:
            break
        transform = refit
    return SimilarityFit(transform, everything if inliers is None else inliers, mode)


def least_median_similarity(source: np.ndarray, target: np.ndarray) -> pycolmap.Sim3d | None:
    """The similarity, among those of three source-target pairs, with the smallest median residual: every
    triple when there are few, else MAX_SAMPLES random ones (seeded, so that runs repeat)."""
    count = len(source)
    if count <= 12:
        triples = np.array(list(itertools.combinations(range(count), 3)))
    else:
        rng = np.random.default_rng(1)
        triples = np.array([rng.choice(count, 3, replace=False) for _ in range(MAX_SAMPLES)])
    best, best_median = None, np.inf
    for triple in triples:
        transform = similarity(source[triple], target[triple])
        if transform is None:
            continue
        median = float(np.median(np.linalg.norm(apply(transform, source) - target, axis=1)))
        if median < best_median:
            best, best_median = transform, median
    return best


def similarity(source: np.ndarray, target: np.ndarray) -> pycolmap.Sim3d | None:
    """Least-squares similarity from source to target points (Umeyama), None where the source has no extent or
    leaves the rotation undetermined (all on one line). Not pycolmap.estimate_sim3d: it fails on targets that
    all lie in the plane z = 0, as control points without surveyed heights do."""
    source_centre, target_centre = source.mean(axis=0), target.mean(axis=0)
    a, b = source - source_centre, target - target_centre
    variance = float(np.sum(a * a)) / len(source)
    u, singular, vt = np.linalg.svd(b.T @ a / len(source))
    if variance <= 0 or singular[1] <= 1e-12 * singular[0]:
        return None
    sign = np.diag([1.0, 1.0, np.sign(np.linalg.det(u) * np.linalg.det(vt)) or 1.0])
    rotation = u @ sign @ vt
    scale = float(np.trace(np.diag(singular) @ sign)) / variance
    translation = target_centre - scale * rotation @ source_centre
    return pycolmap.Sim3d(scale, pycolmap.Rotation3d(rotation), translation)


def similarity_about_vertical(source: np.ndarray, target: np.ndarray) -> pycolmap.Sim3d:
    """Least-squares heading, scale and horizontal shift between the horizontal coordinates of a levelled source
    and a target, with the median height difference as the vertical shift."""
    source_centre, target_centre = source[:, :2].mean(axis=0), target[:, :2].mean(axis=0)
    a, b = source[:, :2] - source_centre, target[:, :2] - target_centre
    h = a.T @ b
    angle = np.arctan2(h[0, 1] - h[1, 0], h[0, 0] + h[1, 1])
    rotation = pycolmap.Rotation3d(np.array([0.0, 0.0, angle])).matrix()
    scale = float(np.sum((a @ rotation[:2, :2].T) * b) / max(np.sum(a * a), 1e-12))
    shift = target_centre - scale * rotation[:2, :2] @ source_centre
    height = float(np.median(target[:, 2] - scale * source[:, 2]))
    return pycolmap.Sim3d(scale, pycolmap.Rotation3d(rotation), np.array([shift[0], shift[1], height]))


def similarity_along_line(source: np.ndarray, target: np.ndarray) -> pycolmap.Sim3d:
    """Least-squares similarity between points spread along a line, for a levelled source: it turns the source
    line's heading onto the target line's (about the vertical), then tilts it onto the target's slope about the
    horizontal axis across the line, so the roll about the line stays level."""
    source_centre, target_centre = source.mean(axis=0), target.mean(axis=0)
    a, b = source - source_centre, target - target_centre
    along_source, along_target = (np.linalg.svd(x, full_matrices=False)[2][0] for x in (a, b))
    if np.dot(a @ along_source, b @ along_target) < 0:
        along_target = -along_target
    heading = np.arctan2(along_target[1], along_target[0]) - np.arctan2(along_source[1], along_source[0])
    turn = pycolmap.Rotation3d(np.array([0.0, 0.0, heading])).matrix()
    rotation = rotation_between(turn @ along_source, along_target) @ turn
    scale = float(np.sum((a @ rotation.T) * b) / max(np.sum(a * a), 1e-12))
    translation = target_centre - scale * rotation @ source_centre
    return pycolmap.Sim3d(scale, pycolmap.Rotation3d(rotation), translation)


def rotation_between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The smallest rotation (3x3) taking unit vector u onto unit vector v."""
    axis = np.cross(u, v)
    angle = np.arctan2(np.linalg.norm(axis), float(np.dot(u, v)))
    if np.linalg.norm(axis) < 1e-12:  # parallel: nothing to do, or opposite: half a turn about any normal
        axis = np.cross(u, [1.0, 0.0, 0.0] if abs(u[0]) < 0.9 else [0.0, 1.0, 0.0])
    return pycolmap.Rotation3d(axis / np.linalg.norm(axis) * angle).matrix()


_ESTIMATORS = {"full": similarity, "line": similarity_along_line,
               "level": similarity_about_vertical}


@dataclass(frozen=True)
class ViewsVertical:
    """The downward direction that the cameras' viewing directions tell, and how well."""

    down: np.ndarray  # unit vector in the model's frame
    uncertainty_deg: float  # one standard deviation
    views: int  # the views that tell it: those stating their pitch, and the nadir ones among the others


def gravity_direction(reconstruction: pycolmap.Reconstruction, pitch_by_name: dict[str, float]) -> np.ndarray:
    """The model's downward direction from its cameras' viewing directions (views_vertical)."""
    return views_vertical(reconstruction, pitch_by_name).down


def views_vertical(reconstruction: pycolmap.Reconstruction, pitch_by_name: dict[str, float]) -> ViewsVertical:
    """The model's downward direction: each camera looks down at its pitch (degrees from nadir, from the
    metadata) with a level image x axis, which puts gravity at (0, sin p, cos p) in the camera frame. The average
    over all cameras is robust to gimbal wobble. A camera whose metadata give no pitch is taken to look straight
    down unless its axis lies more than OBLIQUE_AXIS_DEG from the average: an oblique of a camera that does not
    record its pitch, left out and the average taken again.

    Its uncertainty is the views' scatter about the average over the square root of their number, but never
    below VIEWS_VERTICAL_BIAS_DEG: what all views share (a gimbal's calibration) does not average out."""
    known, unknown = [], []
    for image in reconstruction.images.values():
        if not image.has_pose:
            continue
        world_from_camera = image.cam_from_world().rotation.matrix().T
        if image.name in pitch_by_name:
            pitch = np.deg2rad(pitch_by_name[image.name])
            known.append(world_from_camera @ [0.0, np.sin(pitch), np.cos(pitch)])
        else:
            unknown.append(world_from_camera[:, 2])  # the optical axis
    stated, axes = np.array(known).reshape(-1, 3), np.array(unknown).reshape(-1, 3)
    down = _mean_direction(np.r_[stated, axes])
    nadir = np.r_[stated, axes]
    for _ in range(MAX_LEVELLING_ROUNDS):
        nadir = np.r_[stated, axes[axes @ down >= np.cos(np.radians(OBLIQUE_AXIS_DEG))]]
        if not len(nadir):  # obliques all round and none looking down: their average is the vertical
            break
        refined = _mean_direction(nadir)
        if np.allclose(refined, down):
            break
        down = refined
    if not len(nadir):
        return ViewsVertical(down, 90.0, 0)
    scatter = np.degrees(np.sqrt(np.mean(np.arccos(np.clip(nadir @ down, -1.0, 1.0)) ** 2)))
    return ViewsVertical(down, max(VIEWS_VERTICAL_BIAS_DEG, float(scatter) / np.sqrt(len(nadir))), len(nadir))


def _mean_direction(vectors: np.ndarray) -> np.ndarray:
    total = vectors.sum(axis=0)
    norm = np.linalg.norm(total)
    return total / norm if norm > 0 else np.array([0.0, 0.0, -1.0])


def levelling_transform(down: np.ndarray) -> pycolmap.Sim3d:
    """The rotation that takes the unit direction `down` onto -Z."""
    rotation = rotation_between(np.asarray(down, dtype=np.float64), np.array([0.0, 0.0, -1.0]))
    return pycolmap.Sim3d(1.0, pycolmap.Rotation3d(rotation), np.zeros(3))


def adjust_with_priors(reconstruction: pycolmap.Reconstruction, priors: dict[str, PositionPrior],
                       refine: Refinement, threads: int) -> None:
    """Bundle adjustment in which the given camera positions pull on the cameras, each by its accuracy, through
    a robust loss (a fix far from the model loses its pull instead of bending the model).

    Its memory grows with the observations.
    Above ADJUSTED_OBSERVATIONS the cameras are adjusted with the points that cover every image (covering_points)
    on a copy of the model, and the other points are then adjusted a chunk at a time with the cameras held, so
    that the survey's size does not set the peak."""
    observations = reconstruction.compute_num_observations()
    if observations <= ADJUSTED_OBSERVATIONS:
        _adjust_with_priors(reconstruction, priors, refine, threads)
        return
    covering = covering_points(reconstruction)
    reduced = pycolmap.Reconstruction(reconstruction)
    others = [i for i in reconstruction.point3D_ids() if i not in covering]
    for point_id in others:
        reduced.delete_point3D(point_id)
    # The priors' pull weighed against as many observations as the whole model has: fewer observations would
    # otherwise let the priors bend the cameras further than the whole adjustment does.
    share = reduced.compute_num_observations() / observations
    _adjust_with_priors(reduced, {name: prior.loosened(1.0 / np.sqrt(share)) for name, prior in priors.items()},
                        refine, threads)
    for frame_id in reduced.reg_frame_ids():
        reconstruction.frame(frame_id).rig_from_world = reduced.frame(frame_id).rig_from_world
    for camera_id, camera in reduced.cameras.items():
        reconstruction.camera(camera_id).params = camera.params
    for point_id in covering:
        reconstruction.point3D(point_id).xyz = reduced.point3D(point_id).xyz
    del reduced
    adjust_points(reconstruction, others, threads)
    reconstruction.update_point_3d_errors()


def _adjust_with_priors(reconstruction: pycolmap.Reconstruction, priors: dict[str, PositionPrior],
                        refine: Refinement, threads: int) -> None:
    colmap_priors, config = [], pycolmap.BundleAdjustmentConfig()
    for image_id in reconstruction.reg_image_ids():
        image = reconstruction.image(image_id)
        config.add_image(image_id)
        if image.name in priors:
            colmap_priors.append(priors[image.name].to_colmap(image.data_id))
    options = _bundle_options(refine, threads)
    prior_options = pycolmap.PosePriorBundleAdjustmentOptions()
    prior_options.ceres.prior_position_loss_function_type = pycolmap.LossFunctionType.CAUCHY
    pycolmap.create_pose_prior_bundle_adjuster(options, prior_options, config, colmap_priors,
                                               reconstruction).solve()
    reconstruction.update_point_3d_errors()


def covering_points(reconstruction: pycolmap.Reconstruction) -> set[int]:
    """The points that keep every registered image covered: in each cell of a COVERAGE_GRID x COVERAGE_GRID grid
    over each image, the point seen there with the longest track (the fewest points that tie the most images
    together), the smaller error on a tie."""
    quality = {i: (p.track.length(), p.error) for i, p in reconstruction.points3D.items()}
    images, cells, point_ids = [], [], []
    for rank, image_id in enumerate(reconstruction.reg_image_ids()):
        image = reconstruction.image(image_id)
        observed = image.get_observation_points2D()
        if not observed:
            continue
        xy = np.array([p.xy for p in observed])
        size = np.array([image.camera.width, image.camera.height], dtype=np.float64)
        grid = np.clip((xy / size * COVERAGE_GRID).astype(int), 0, COVERAGE_GRID - 1)
        images.append(np.full(len(observed), rank))
        cells.append(grid[:, 1] * COVERAGE_GRID + grid[:, 0])
        point_ids.append(np.array([p.point3D_id for p in observed], dtype=np.int64))
    if not point_ids:
        return set()
    ids = np.concatenate(point_ids)
    lengths, errors = np.array([quality[int(i)] for i in ids]).T
    return set(best_per_cell(np.concatenate(images), np.concatenate(cells), lengths, errors, ids).tolist())


def best_per_cell(images: np.ndarray, cells: np.ndarray, lengths: np.ndarray, errors: np.ndarray,
                  point_ids: np.ndarray) -> np.ndarray:
    """Of observations (image, cell, the point's track length and error, its id), the distinct points that are
    the best of their image's cell: the longest track, then the smallest error."""
    if not len(point_ids):
        return point_ids
    order = np.lexsort((errors, -lengths, cells, images))
    group = np.stack([images[order], cells[order]], axis=1)
    first = np.ones(len(order), bool)
    first[1:] = np.any(group[1:] != group[:-1], axis=1)
    return np.unique(point_ids[order[first]])


def adjust_points(reconstruction: pycolmap.Reconstruction, point_ids: list[int], threads: int) -> None:
    """The given points adjusted to their observations with the cameras and their calibration held, in chunks of
    about POINT_CHUNK_OBSERVATIONS observations (each point is adjusted on its own, so chunks change nothing but
    the memory)."""
    options = _bundle_options(Refinement(focal=False, distortion=False), threads)  # the principal point is held too
    chunk, observations = pycolmap.BundleAdjustmentConfig(), 0
    for point_id in point_ids:
        chunk.add_variable_point(point_id)
        observations += reconstruction.point3D(point_id).track.length()
        if observations >= POINT_CHUNK_OBSERVATIONS:
            pycolmap.create_default_bundle_adjuster(options, chunk, reconstruction).solve()
            chunk, observations = pycolmap.BundleAdjustmentConfig(), 0
    if observations:
        pycolmap.create_default_bundle_adjuster(options, chunk, reconstruction).solve()


def _bundle_options(refine: Refinement, threads: int) -> pycolmap.BundleAdjustmentOptions:
    options = pycolmap.BundleAdjustmentOptions()
    options.print_summary = False
    options.refine_focal_length = refine.focal
    options.refine_extra_params = refine.distortion
    # Matches that survived mapping are mostly right; a soft loss keeps the rest from dragging the cameras.
    options.ceres.loss_function_type = pycolmap.LossFunctionType.SOFT_L1
    options.ceres.solver_options.num_threads = threads
    # COLMAP stops only on the gradient (function tolerance 0): from a mapped model that takes dozens of
    # iterations that each change the cost by less than a millionth, and that take time without bringing the
    # cameras measurably closer to the truth.
    options.ceres.solver_options.function_tolerance = 1e-6
    return options


def registered(model: pycolmap.Reconstruction, name: str) -> bool:
    image = model.find_image_with_name(name)
    return image is not None and image.has_pose
