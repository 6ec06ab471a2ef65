"""Mapping from camera poses known before any point is (sfm-algorithm planar and triangulation): the points are
triangulated from the matches with the poses held, one bundle adjustment with the GPS priors refines poses,
points and calibration, and the points are triangulated and adjusted once more from the refined poses.

No image is added one at a time, so it takes a fraction of the incremental mapper's time, and it grows with the
survey instead of with its square. It is only as good as the poses it starts from: poses a few degrees and metres
off converge, poses farther off leave matches untriangulated and cameras with too few points. `checked` measures
that on the result and names the cause; the caller then maps incrementally instead.

Poses from the metadata (triangulation): the GPS position, and the camera's heading, pitch and roll (DJI gimbal
angles in the XMP, or the Camera:Yaw/Pitch/Roll tags).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pycolmap

from ..log import log
from ..photo import Photo
from .alignment import adjust_with_priors
from .database import PositionPrior
from .mapping import MIN_REGISTRATION_INLIERS, SEED, MappingSettings
from .planar import NotPlanar, MatchedPoints, planar_poses, read_matched_points

# The first triangulation starts from poses that may be a few degrees and metres off (GPS noise, tilts the poses
# do not know): rays are joined within this angle, and observations kept within this reprojection error, until
# the first adjustment has brought the poses in; then COLMAP's defaults (2 degrees, 4 px) apply.
LOOSE_ANGLE_DEG = 10.0
LOOSE_REPROJECTION_PX = 200.0
# A mapped survey's reprojection error is below a pixel; above this the poses did not converge.
MAX_REPROJECTION_PX = 2.0
MIN_POINTS_PER_IMAGE = 2 * MIN_REGISTRATION_INLIERS  # observations an image needs to count as placed
# A stated attitude this far (median over the image's verified pairs) from the relative rotations its matches
# show is wrong: gimbal angles are good to a few degrees, and the adjustment brings in no more than that.
MAX_ATTITUDE_DISAGREEMENT_DEG = 15.0
POSED_ALGORITHMS = ("planar", "triangulation")
NAMES = {"planar": "Planar reconstruction", "triangulation": "Triangulation from the images' poses"}


def map_posed(database: Path, work_dir: Path, settings: MappingSettings, photos: list[Photo],
              priors: dict[str, PositionPrior]) -> pycolmap.Reconstruction | None:
    """The model mapped from the poses that settings.algorithm (one of POSED_ALGORITHMS) gives, or None, with a
    warning that names the measured cause, where it cannot be made or is not worth keeping: the caller then
    maps incrementally."""
    try:
        if not priors:
            raise PosesFailed("it needs the photographs' GPS positions as priors, and this mapping uses none (no "
                              "GPS, ground control points without force-gps, or GPS that contradicts the "
                              "photographs' layout)")
        database_handle = pycolmap.Database.open(database)
        try:
            matches = read_matched_points(database_handle, set(settings.images))
        finally:
            database_handle.close()
        photos = [p for p in photos if p.filename in set(matches.names)]
        if settings.algorithm == "planar":
            planar = planar_poses(matches, priors)
            log.info("Planar mosaic: matches laid on one ground plane within a median %.1f px; cameras %.1f m "
                     "above it (median)", planar.misfit_px, float(np.median(list(planar.heights_m.values()))))
            poses = planar.poses
        else:
            poses = metadata_poses(photos, priors)
            check_attitudes(matches, poses)
        return map_from_poses(database, work_dir, settings, poses, priors)
    except (PosesFailed, NotPlanar) as failure:
        log.warning("%s cannot be used: %s. Mapping incrementally instead", NAMES[settings.algorithm], failure)
        return None


class PosesFailed(Exception):
    """The known poses did not give a model worth keeping; the message says what was measured."""


@dataclass(frozen=True)
class Orientation:
    """A camera's attitude from its metadata, in degrees: heading clockwise from north, pitch from straight
    down (90 at the horizon), roll about the optical axis."""
    yaw: float
    pitch: float
    roll: float


def metadata_poses(photos: list[Photo], priors: dict[str, PositionPrior]) -> dict[str, pycolmap.Rigid3d]:
    """cam_from_world of each photograph from its GPS position and its stated attitude; raises PosesFailed naming
    the photographs that lack either."""
    missing_position = [p.filename for p in photos if p.filename not in priors]
    missing_angles = [p.filename for p in photos if p.yaw is None or p.pitch is None]
    if missing_position or missing_angles:
        parts = []
        if missing_position:
            parts.append(f"{len(missing_position)} have no GPS position ({_some(missing_position)})")
        if missing_angles:
            parts.append(f"{len(missing_angles)} state no camera yaw and pitch, as DJI's gimbal angles or "
                         f"Camera:Yaw/Pitch/Roll in the XMP metadata ({_some(missing_angles)})")
        raise PosesFailed(f"of {len(photos)} photographs, {' and '.join(parts)}")
    poses = {}
    for photo in photos:
        world_from_camera = attitude_rotation(Orientation(photo.yaw, photo.pitch, photo.roll or 0.0))
        centre = np.asarray(priors[photo.filename].position, dtype=np.float64)
        poses[photo.filename] = pycolmap.Rigid3d(pycolmap.Rotation3d(world_from_camera.T),
                                                 -world_from_camera.T @ centre)
    return poses


def attitude_rotation(orientation: Orientation) -> np.ndarray:
    """World (east, north, up) from camera (x right, y down, z forward) of a camera at that attitude: looking
    straight down with the image's top ahead, tilted forward by the pitch, turned about the optical axis by the
    roll, the whole turned clockwise by the heading (the frame's grid north is taken for north: within a few
    degrees, which the adjustment corrects)."""
    heading, pitch, roll = np.deg2rad([orientation.yaw, orientation.pitch, orientation.roll])
    look_down = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])
    tilt = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(pitch), -np.sin(pitch)], [0.0, np.sin(pitch), np.cos(pitch)]])
    spin = np.array([[np.cos(roll), -np.sin(roll), 0.0], [np.sin(roll), np.cos(roll), 0.0], [0.0, 0.0, 1.0]])
    turn = np.array([[np.cos(-heading), -np.sin(-heading), 0.0], [np.sin(-heading), np.cos(-heading), 0.0],
                     [0.0, 0.0, 1.0]])
    return turn @ look_down @ tilt @ spin


def check_attitudes(matches: MatchedPoints, poses: dict[str, pycolmap.Rigid3d]) -> None:
    """Raise PosesFailed naming the photographs whose stated heading disagrees with their matches. For each
    verified pair: the turn about the optical axis between the two stated attitudes against the turn of the 2D
    similarity that lays the pair's matched points on one another (an essential matrix would not do: over flat
    ground seen straight down it has two readings). The photograph whose pairs disagree most (median) is set
    aside, and its pairs with it, until every other one's pairs agree: a wrong heading makes all its pairs
    disagree, and no others. Tilts that are wrong show after the adjustment, in `checked`."""
    pair_angles: dict[tuple[int, int], float] = {}
    for i, j, first, second in matches.pairs:
        similarity, _ = cv2.estimateAffinePartial2D(first.astype(np.float32), second.astype(np.float32),
                                                    method=cv2.RANSAC, ransacReprojThreshold=0.01)
        if similarity is None:
            continue
        stated = poses[matches.names[j]].rotation.matrix() @ poses[matches.names[i]].rotation.matrix().T
        turn = np.arctan2(similarity[1, 0], similarity[0, 0]) - np.arctan2(stated[1, 0], stated[0, 0])
        pair_angles[(i, j)] = float(abs(np.degrees(np.angle(np.exp(1j * turn)))))
    wrong: dict[str, float] = {}
    while pair_angles:
        by_image: dict[int, list[float]] = {}
        for (i, j), angle in pair_angles.items():
            by_image.setdefault(i, []).append(angle)
            by_image.setdefault(j, []).append(angle)
        worst, angles = max(by_image.items(), key=lambda item: float(np.median(item[1])))
        if np.median(angles) <= MAX_ATTITUDE_DISAGREEMENT_DEG:
            break
        wrong[matches.names[worst]] = float(np.median(angles))
        pair_angles = {pair: angle for pair, angle in pair_angles.items() if worst not in pair}
    if wrong:
        raise PosesFailed(f"the stated camera angles of {len(wrong)} of {len(matches.names)} photographs disagree "
                          f"with their matches by a median {np.median(list(wrong.values())):.0f} degrees "
                          f"({_some(sorted(wrong))}; at most {MAX_ATTITUDE_DISAGREEMENT_DEG:.0f})")


def map_from_poses(database: Path, work_dir: Path, settings: MappingSettings,
                   poses: dict[str, pycolmap.Rigid3d], priors: dict[str, PositionPrior]) -> pycolmap.Reconstruction:
    """The model of the images in `poses` (settings.images where given): triangulated with loose bounds from the
    poses, adjusted with the priors, triangulated again with the usual bounds, adjusted again and checked."""
    # triangulate_points reads every photograph for the points' colours, whatever its options say: given an empty
    # folder it reads none (record.py colours the final model once).
    no_images = work_dir / "no-images"
    no_images.mkdir(parents=True, exist_ok=True)
    model = _posed_model(database, poses, set(settings.images))
    for bounds in ("loose", "usual"):
        model = pycolmap.triangulate_points(model, database, no_images, work_dir, clear_points=True,
                                            options=_triangulation_options(settings, bounds))
        if model.num_points3D() == 0:
            raise PosesFailed("no match could be triangulated from the poses")
        adjust_with_priors(model, priors, settings.refine, settings.threads)
    return checked(model)


def checked(model: pycolmap.Reconstruction) -> pycolmap.Reconstruction:
    """The model when its poses converged: every image holds enough points and the reprojection error is that of
    a mapped survey; else PosesFailed with what was measured."""
    weak = sorted(model.image(i).name for i in model.reg_image_ids()
                  if model.image(i).num_points3D < MIN_POINTS_PER_IMAGE)
    if weak:
        raise PosesFailed(f"{len(weak)} of {model.num_reg_images()} photographs hold fewer than "
                          f"{MIN_POINTS_PER_IMAGE} triangulated points after adjustment ({_some(weak)})")
    error = model.compute_mean_reprojection_error()
    if not error <= MAX_REPROJECTION_PX:
        raise PosesFailed(f"the adjusted model's mean reprojection error is {error:.1f} px (at most "
                          f"{MAX_REPROJECTION_PX:.0f} px)")
    return model


def _posed_model(database: Path, poses: dict[str, pycolmap.Rigid3d], only: set[str]) -> pycolmap.Reconstruction:
    """A model holding the database's cameras and the posed images, without points."""
    model = pycolmap.Reconstruction()
    db = pycolmap.Database.open(database)
    try:
        for camera in db.read_all_cameras():
            model.add_camera_with_trivial_rig(camera)
        for image in db.read_all_images():
            if image.name not in poses or (only and image.name not in only):
                continue
            keypoints = db.read_keypoints(image.image_id)[:, :2].astype(np.float64)
            bare = pycolmap.Image(name=image.name, points2D=pycolmap.Point2DList(
                [pycolmap.Point2D(xy) for xy in keypoints]), camera_id=image.camera_id, image_id=image.image_id)
            model.add_image_with_trivial_frame(bare, poses[image.name])
    finally:
        db.close()
    return model


def _triangulation_options(settings: MappingSettings, bounds: str) -> pycolmap.IncrementalPipelineOptions:
    options = pycolmap.IncrementalPipelineOptions()
    options.num_threads = settings.threads
    options.random_seed = SEED
    options.extract_colors = False
    if bounds == "loose":
        options.triangulation.create_max_angle_error = LOOSE_ANGLE_DEG
        options.triangulation.continue_max_angle_error = LOOSE_ANGLE_DEG
        options.triangulation.merge_max_reproj_error = LOOSE_REPROJECTION_PX
        options.triangulation.complete_max_reproj_error = LOOSE_REPROJECTION_PX
        options.mapper.filter_max_reproj_error = LOOSE_REPROJECTION_PX
    return options


def _some(names: list[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
