"""Ground control points in a reconstruction: where the model puts them, and how far that is from where they are."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycolmap

from ..io.gcp import ControlPoint

ODM_TO_COLMAP_PIXEL = 0.5  # gcp_list.txt puts the first pixel's centre at 0, COLMAP at 0.5


@dataclass(frozen=True)
class ControlResidual:
    name: str
    images: int  # registered images that observe the point
    horizontal_m: float
    vertical_m: float
    reprojection_px: float  # mean distance between the marked pixels and the projection of the surveyed point

    @property
    def distance_m(self) -> float:
        return float(np.hypot(self.horizontal_m, self.vertical_m))


def triangulate(reconstruction: pycolmap.Reconstruction, point: ControlPoint) -> np.ndarray | None:
    """The point where the rays through its marked pixels meet, in the model's frame; None when fewer than two
    registered images mark it or the rays do not meet in front of the cameras."""
    poses, rays = [], []
    for observation in point.observations:
        image = reconstruction.find_image_with_name(observation.image)
        if image is None or not image.has_pose:
            continue
        pixel = np.asarray(observation.pixel, dtype=np.float64) + ODM_TO_COLMAP_PIXEL
        ray = image.camera.cam_ray_from_img(pixel)
        if ray is None:
            continue
        poses.append(np.asarray(image.cam_from_world().matrix()))
        rays.append(ray)
    if len(poses) < 2:
        return None
    xyz = pycolmap.triangulate_multi_view_point(poses, np.array(rays))
    if xyz is None:
        return None
    xyz = np.asarray(xyz, dtype=np.float64).ravel()
    in_front = all((pose[:, :3] @ xyz + pose[:, 3])[2] > 0 for pose in poses)
    return xyz if in_front else None


def residual(reconstruction: pycolmap.Reconstruction, point: ControlPoint, surveyed: np.ndarray
             ) -> ControlResidual | None:
    """How far the model's position of a control point lies from its surveyed position (both in the world
    frame), and how far its projection falls from the marked pixels."""
    modelled = triangulate(reconstruction, point)
    if modelled is None:
        return None
    errors = []
    for observation in point.observations:
        image = reconstruction.find_image_with_name(observation.image)
        if image is None or not image.has_pose:
            continue
        projected = image.project_point(surveyed)
        if projected is not None:
            marked = np.asarray(observation.pixel, dtype=np.float64) + ODM_TO_COLMAP_PIXEL
            errors.append(float(np.linalg.norm(np.asarray(projected).ravel() - marked)))
    delta = modelled - surveyed
    return ControlResidual(point.name, len(errors), float(np.hypot(delta[0], delta[1])), float(abs(delta[2])),
                           float(np.mean(errors)) if errors else float("nan"))
