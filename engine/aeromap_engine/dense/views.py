"""The solved cameras and sparse points of a reconstruction, as plain arrays for the dense and ortho steps."""

from __future__ import annotations

from dataclasses import dataclass

import copy

import cv2
import numpy as np
import pycolmap


def transform_points(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """points (N, 3) mapped by a 3x4 affine matrix (OpenCV's SIMD loop: far faster than a NumPy matmul on
    millions of points). The result has the points' dtype."""
    return cv2.transform(points.reshape(-1, 1, 3), matrix.astype(points.dtype)).reshape(-1, 3)


@dataclass(frozen=True, eq=False)
class View:
    """One registered image: its full-resolution camera (any COLMAP model) and its pose."""

    name: str
    camera: pycolmap.Camera
    rotation: np.ndarray  # world -> camera, 3x3
    translation: np.ndarray  # world -> camera, (3,)
    point_ids: np.ndarray  # ids of the sparse points it observes, sorted

    @property
    def center(self) -> np.ndarray:
        return -self.rotation.T @ self.translation

    @property
    def axis(self) -> np.ndarray:
        """Viewing direction (the camera's z axis) in the world frame."""
        return self.rotation[2]

    def to_camera(self, world: np.ndarray) -> np.ndarray:
        """World points (N, 3) in this camera's frame."""
        return transform_points(np.c_[self.rotation, self.translation], world)

    def to_world(self, camera: np.ndarray) -> np.ndarray:
        """Camera-frame points (N, 3) in the world frame."""
        return transform_points(np.c_[self.rotation.T, self.center], camera)


@dataclass(frozen=True, eq=False)
class SparseModel:
    views: list[View]
    point_ids: np.ndarray  # sorted
    points: np.ndarray  # (N, 3) float64, world frame

    def xyz(self, ids: np.ndarray) -> np.ndarray:
        return self.points[np.searchsorted(self.point_ids, ids)]


def sparse_model(reconstruction: pycolmap.Reconstruction) -> SparseModel:
    """Registered views (sorted by name, so runs are repeatable) and the sparse points of a reconstruction."""
    views = []
    for image in reconstruction.images.values():
        if not image.has_pose:
            continue
        pose = image.cam_from_world()
        ids = np.array([p.point3D_id for p in image.points2D if p.has_point3D()], dtype=np.int64)
        # A copy: the image's camera belongs to the reconstruction and dies with it.
        camera = copy.copy(reconstruction.cameras[image.camera_id])
        views.append(View(image.name, camera, pose.rotation.matrix(), np.asarray(pose.translation),
                          np.unique(ids)))
    views.sort(key=lambda v: v.name)
    ids = np.array(sorted(reconstruction.point3D_ids()), dtype=np.int64)
    points = np.array([reconstruction.points3D[i].xyz for i in ids], dtype=np.float64).reshape(-1, 3)
    return SparseModel(views, ids, points)
