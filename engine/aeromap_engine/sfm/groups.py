"""Models that do not hold every photograph: groups that share no view with the main model.

Photographs of two fields, or flights with a gap between them, reconstruct as separate models whose relative
placement the images cannot tell. Placed each by its own GPS, they are merged into one model so that the
products cover every group and the later stages see one set of cameras. All models come from one matching
database, so camera and image ids agree between them and no image is in two models.
"""

from __future__ import annotations

import numpy as np
import pycolmap
from scipy.spatial import cKDTree

# A group farther from the main model than this, and than a few times the main model's own extent, was
# photographed somewhere else: mapping both would make products that span the gap between them.
FAR_GROUP_M = 1000.0
FAR_GROUP_EXTENTS = 3.0


def merge(target: pycolmap.Reconstruction, other: pycolmap.Reconstruction) -> None:
    """Add the registered images of `other` that `target` has not registered, and the points those images see,
    as they are (both already in one frame). A camera both models share keeps `target`'s calibration; an image
    both registered (overlapping submodels and blocks share some) keeps `target`'s pose and points. A point of
    `other` seen by such a shared image joins the point `target` has at that keypoint, or else keeps the shared
    observations as a point of its own: either way it ties the added images to `target`'s, so that an adjustment
    of the merged model moves both as one rather than each block on its own."""
    for camera_id, camera in other.cameras.items():
        if not target.exists_camera(camera_id):
            target.add_camera_with_trivial_rig(camera)
    added = set()
    for image_id in other.reg_image_ids():
        if target.exists_image(image_id) and target.image(image_id).has_pose:
            continue
        image = other.image(image_id)
        if target.exists_image(image_id):  # loaded by its mapper but not registered there: its keypoints are in
            frame = target.frame(target.image(image_id).frame_id)
            frame.rig_from_world = other.frame(image.frame_id).rig_from_world
            target.register_frame(frame.frame_id)
        else:
            bare = pycolmap.Image(name=image.name, points2D=pycolmap.Point2DList(
                [pycolmap.Point2D(p.xy) for p in image.points2D]), camera_id=image.camera_id, image_id=image_id)
            target.add_image_with_trivial_frame(bare, image.cam_from_world())
        added.add(image_id)
    points_of = {image_id: point_ids(target.image(image_id)) for image_id in other.reg_image_ids()
                 if image_id not in added}
    for point in other.points3D.values():
        own = [(e.image_id, e.point2D_idx) for e in point.track.elements if e.image_id in added]
        if not own:
            continue
        shared = [(e.image_id, e.point2D_idx) for e in point.track.elements if e.image_id in points_of]
        owners = {points_of[i][k] for i, k in shared} - {None}
        if len(owners) == 1:
            (owner,) = owners
            for image_id, index in own:
                target.add_observation(owner, pycolmap.TrackElement(image_id, index))
            continue
        elements = own + [(i, k) for i, k in shared if points_of[i][k] is None]
        if len(elements) >= 2:
            track = pycolmap.Track()
            for image_id, index in elements:
                track.add_element(image_id, index)
            target.add_point3D(point.xyz, track, point.color)


def joined(models: list[pycolmap.Reconstruction]) -> pycolmap.Reconstruction:
    """One model of all, in the first's frame (merge: the first's poses and points win where they overlap)."""
    model = pycolmap.Reconstruction(models[0])
    for other in models[1:]:
        merge(model, other)
    return model


def point_ids(image: pycolmap.Image) -> list[int | None]:
    """The point each of the image's keypoints is triangulated to, None where none is."""
    return [point.point3D_id if point.has_point3D() else None for point in image.points2D]


def image_names(model: pycolmap.Reconstruction) -> list[str]:
    return sorted(model.image(i).name for i in model.reg_image_ids())


def elsewhere(model: pycolmap.Reconstruction, group: pycolmap.Reconstruction) -> float | None:
    """The horizontal distance (m) between the group's cameras and the nearest camera of the model, when it is
    so large that the group shows another place; else None. Both models in the world frame."""
    main, other = (np.array([m.image(i).projection_center()[:2] for i in m.reg_image_ids()]) for m in (model, group))
    gap = float(cKDTree(main).query(other)[0].min())
    extent = float(np.linalg.norm(np.ptp(main, axis=0)))
    return gap if gap > max(FAR_GROUP_M, FAR_GROUP_EXTENTS * extent) else None
