"""The COLMAP database that matching and mapping read: cameras, images, features, position priors, matches."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pycolmap

from .features import Features

# Lowe's ratio test: COLMAP's default, then a looser one for the pairs that it leaves weak (low texture, little
# overlap), where only matches that fit a calibrated two-view geometry are kept (see rematch_weak_pairs).
MAX_RATIO = 0.8
LOOSE_MAX_RATIO = 0.9
PROGRESS_STEPS = 20  # batches of pairs matched, for progress between them...
MIN_BATCH = 50  # ...unless that makes them smaller than this


@dataclass(frozen=True)
class PositionPrior:
    """A camera position in the world frame and its standard deviations (metres)."""

    position: np.ndarray
    horizontal_stddev: float
    vertical_stddev: float

    def to_colmap(self, data_id: pycolmap.data_t) -> pycolmap.PosePrior:
        prior = pycolmap.PosePrior()
        prior.position = np.asarray(self.position, dtype=np.float64)
        prior.position_covariance = np.diag([self.horizontal_stddev ** 2] * 2 + [self.vertical_stddev ** 2])
        prior.coordinate_system = pycolmap.PosePriorCoordinateSystem.CARTESIAN
        prior.corr_data_id = data_id
        return prior

    def loosened(self, factor: float) -> "PositionPrior":
        """The same position with its standard deviations multiplied by `factor`."""
        return replace(self, horizontal_stddev=self.horizontal_stddev * factor,
                       vertical_stddev=self.vertical_stddev * factor)


def keypoint_counts(path: Path) -> dict[str, int]:
    """How many keypoints each image of the database has."""
    database = pycolmap.Database.open(path)
    try:
        return {image.name: database.num_keypoints_for_image(image.image_id) for image in database.read_all_images()}
    finally:
        database.close()


@contextlib.contextmanager
def open_database(path: Path, cameras: list[pycolmap.Camera]) -> Iterator["ImageWriter"]:
    """A fresh database holding the cameras, open for images to be added one by one (so that features need not
    all be held in memory). Each camera is its own rig, and each image its own frame, as COLMAP models
    single-camera photographs."""
    path.unlink(missing_ok=True)
    database = pycolmap.Database.open(path)
    try:
        camera_ids, rig_ids = [], []
        for camera in cameras:
            camera_id = database.write_camera(camera)
            rig = pycolmap.Rig()
            rig.add_ref_sensor(pycolmap.sensor_t(pycolmap.SensorType.CAMERA, camera_id))
            camera_ids.append(camera_id)
            rig_ids.append(database.write_rig(rig))
        yield ImageWriter(database, camera_ids, rig_ids)
    finally:
        database.close()


@dataclass(frozen=True)
class ImageWriter:
    database: pycolmap.Database
    camera_ids: list[int]  # database id of each camera, in the order given
    rig_ids: list[int]

    def add(self, name: str, camera_index: int, features: Features, prior: PositionPrior | None) -> None:
        camera_id = self.camera_ids[camera_index]
        image_id = self.database.write_image(pycolmap.Image(name=name, camera_id=camera_id))
        data_id = pycolmap.Image(name=name, camera_id=camera_id, image_id=image_id).data_id
        frame = pycolmap.Frame()
        frame.rig_id = self.rig_ids[camera_index]
        frame.add_data_id(data_id)
        self.database.write_frame(frame)
        self.database.write_keypoints(image_id, features.keypoints)
        self.database.write_descriptors(image_id, pycolmap.FeatureDescriptors(pycolmap.FeatureExtractorType.SIFT,
                                                                              features.descriptors))
        if prior is not None:
            self.database.write_pose_prior(prior.to_colmap(data_id))


def match_pairs(path: Path, pairs: list[tuple[str, str]], list_file: Path, threads: int,
                progress: Callable[[float], None], max_ratio: float = MAX_RATIO) -> None:
    """Match descriptors and verify the two-view geometry of the given image pairs, in batches, with progress
    reported between them. Nothing else may open the database meanwhile: Python's SQLite is another copy of the
    library than COLMAP's, and one copy closing the file drops the other's locks (SQLite's documented hazard),
    which crashed the matcher with SIGBUS while a watcher counted its pairs. Batches follow the sorted pairs, so
    most images fall in one or two and their search index is built about as often as in one call."""
    matching = pycolmap.FeatureMatchingOptions()
    matching.num_threads = threads
    matching.sift.max_ratio = max_ratio
    pairing = pycolmap.ImportedPairingOptions()
    pairing.match_list_path = str(list_file)
    verification = pycolmap.TwoViewGeometryOptions()
    verification.ransac.num_threads = 1  # pairs already run in parallel
    size = max(MIN_BATCH, math.ceil(len(pairs) / PROGRESS_STEPS))
    for start in range(0, len(pairs), size):
        list_file.write_text("".join(f"{a} {b}\n" for a, b in pairs[start:start + size]))
        pycolmap.match_image_pairs(path, matching_options=matching, pairing_options=pairing,
                                   verification_options=verification, device=pycolmap.Device.cpu)
        progress(min(1.0, (start + size) / len(pairs)))


@dataclass(frozen=True)
class PairMatches:
    """What matching left for one image pair: its matches and their verified two-view geometry."""

    matches: np.ndarray
    geometry: pycolmap.TwoViewGeometry

    @property
    def inliers(self) -> int:
        return len(self.geometry.inlier_matches)

    @property
    def calibrated(self) -> bool:
        """Whether the inliers fit an essential matrix of cameras with known focal lengths: not only a fundamental
        matrix, whose epipolar lines let more chance matches through, nor a homography better than the essential
        matrix, which a chance set of matches on a plane or from one viewpoint fits as well."""
        return self.geometry.config == pycolmap.TwoViewGeometryConfiguration.CALIBRATED


def rematch_weak_pairs(path: Path, pairs: list[tuple[str, str]], min_inliers: int, list_file: Path, threads: int,
                       progress: Callable[[float], None], located: set[str]) -> int:
    """Match again, at the looser ratio, the pairs (of cameras with known focal lengths) that kept fewer than
    `min_inliers` verified matches and may overlap (see may_overlap); a pair keeps the new matches only where they
    are more and fit a calibrated geometry: a low-texture survey that the default ratio leaves in separate groups is
    then tied into one model. Returns how many pairs gained."""
    before = read_pair_matches(path, pairs)
    weak = may_overlap([pair for pair in pairs if pair not in before or before[pair].inliers < min_inliers],
                       before, located, min_inliers)
    if not weak:
        return 0
    forget_matches(path, weak)
    with focal_lengths_stated(path):
        match_pairs(path, weak, list_file, threads, progress, LOOSE_MAX_RATIO)
    after = read_pair_matches(path, weak)
    worse = [pair for pair in weak if pair not in after or not after[pair].calibrated
             or after[pair].inliers <= (before[pair].inliers if pair in before else 0)]
    forget_matches(path, worse)
    write_pair_matches(path, {pair: before[pair] for pair in worse if pair in before})
    return len(weak) - len(worse)


@contextlib.contextmanager
def focal_lengths_stated(path: Path) -> Iterator[None]:
    """Within: every camera's focal length counts as known, so that verification fits an essential matrix, which
    holds chance matches to a point where a fundamental matrix holds them to a line. Only within: mapping with
    focal lengths marked as known registers images otherwise, and has misplaced a camera by metres (with control
    points and force-gps)."""
    def mark(known: dict[int, bool] | None) -> dict[int, bool]:
        database = pycolmap.Database.open(path)
        try:
            cameras = database.read_all_cameras()
            before = {camera.camera_id: camera.has_prior_focal_length for camera in cameras}
            for camera in cameras:
                camera.has_prior_focal_length = True if known is None else known[camera.camera_id]
                database.update_camera(camera)
            return before
        finally:
            database.close()

    before = mark(None)
    try:
        yield
    finally:
        mark(before)


def may_overlap(weak: list[tuple[str, str]], matched: dict[tuple[str, str], PairMatches], located: set[str],
                min_inliers: int) -> list[tuple[str, str]]:
    """The weak pairs that may overlap: two cameras with positions (paired as neighbours), a pair with some
    verified matches, or two images that each overlap a third. A survey without positions pairs every image with
    every other, and most of those pairs see different ground: matching them all again cost as much as the first
    matching and gained nothing."""
    overlapping: dict[str, set[str]] = {}
    for (a, b), pair in matched.items():
        if pair.inliers >= min_inliers:
            overlapping.setdefault(a, set()).add(b)
            overlapping.setdefault(b, set()).add(a)
    return [(a, b) for a, b in weak
            if (a in located and b in located) or ((a, b) in matched and matched[(a, b)].inliers > 0)
            or overlapping.get(a, set()) & overlapping.get(b, set())]


def read_pair_matches(path: Path, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], PairMatches]:
    """The matches and geometry of those pairs that have matches."""
    database = pycolmap.Database.open(path)
    try:
        ids = {image.name: image.image_id for image in database.read_all_images()}
        found = {}
        for first, second in pairs:
            a, b = ids[first], ids[second]
            if database.exists_matches(a, b):
                geometry = database.read_two_view_geometry(a, b) if database.exists_two_view_geometry(a, b) \
                    else pycolmap.TwoViewGeometry()
                found[(first, second)] = PairMatches(database.read_matches(a, b), geometry)
        return found
    finally:
        database.close()


def write_pair_matches(path: Path, pairs: dict[tuple[str, str], PairMatches]) -> None:
    database = pycolmap.Database.open(path)
    try:
        ids = {image.name: image.image_id for image in database.read_all_images()}
        for (first, second), matched in pairs.items():
            database.write_matches(ids[first], ids[second], matched.matches)
            database.write_two_view_geometry(ids[first], ids[second], matched.geometry)
    finally:
        database.close()


def forget_matches(path: Path, pairs: list[tuple[str, str]]) -> None:
    """Delete the pairs' matches and geometry, so that the matcher takes them up again."""
    database = pycolmap.Database.open(path)
    try:
        ids = {image.name: image.image_id for image in database.read_all_images()}
        for first, second in pairs:
            a, b = ids[first], ids[second]
            if database.exists_matches(a, b):
                database.delete_matches(a, b)
            if database.exists_two_view_geometry(a, b):
                database.delete_two_view_geometry(a, b)
    finally:
        database.close()


def verified_match_counts(path: Path) -> list[int]:
    """The number of verified matches of each matched pair."""
    database = pycolmap.Database.open(path)
    try:
        _, geometries = database.read_two_view_geometries()
    finally:
        database.close()
    return [len(g.inlier_matches) for g in geometries]


def verified_pairs(path: Path, min_inliers: int) -> list[tuple[str, str]]:
    """The image name pairs whose geometric verification kept at least `min_inliers` matches."""
    database = pycolmap.Database.open(path)
    try:
        names = {image.image_id: image.name for image in database.read_all_images()}
        pair_ids, geometries = database.read_two_view_geometries()
    finally:
        database.close()
    pairs = []
    for pair_id, geometry in zip(pair_ids, geometries):
        if len(geometry.inlier_matches) >= min_inliers:
            first, second = pycolmap.pair_id_to_image_pair(pair_id)
            pairs.append((names[first], names[second]))
    return pairs


def reject_pairs(path: Path, pairs: list[tuple[str, str]]) -> None:
    """Forget the verified geometry of these pairs, so that mapping does not join their images."""
    database = pycolmap.Database.open(path)
    try:
        for first, second in pairs:
            database.delete_two_view_geometry(database.read_image_with_name(first).image_id,
                                              database.read_image_with_name(second).image_id)
    finally:
        database.close()
