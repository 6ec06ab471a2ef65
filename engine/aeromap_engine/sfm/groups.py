"""Models that do not hold every photograph: groups that share no view with the main model, and images whose
registration the GPS contradicts.

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
    """Add the registered images of `other` that `target` has not registered, and the points only those images
    see, as they are (both already in one frame). A camera both models share keeps `target`'s calibration; an
    image both registered keeps `target`'s pose and points (overlapping submodels share some)."""
    for camera_id, camera in other.cameras.items():
        if not target.exists_camera(camera_id):
            target.add_camera_with_trivial_rig(camera)
    added = set()
    for image_id in other.reg_image_ids():
        if target.exists_image(image_id) and target.image(image_id).has_pose:
            continue
        image = other.image(image_id)
        bare = pycolmap.Image(name=image.name, points2D=pycolmap.Point2DList(
            [pycolmap.Point2D(p.xy) for p in image.points2D]), camera_id=image.camera_id, image_id=image_id)
        target.add_image_with_trivial_frame(bare, image.cam_from_world())
        added.add(image_id)
    for point in other.points3D.values():
        if all(element.image_id in added for element in point.track.elements):
            target.add_point3D(point.xyz, point.track, point.color)


def deregister(model: pycolmap.Reconstruction, names: list[str]) -> None:
    """Take images out of the model; COLMAP drops their observations, and points left with one view."""
    for name in names:
        image = model.find_image_with_name(name)
        if image is not None and image.has_pose:
            model.deregister_frame(image.frame_id)


def image_names(model: pycolmap.Reconstruction) -> list[str]:
    return sorted(model.image(i).name for i in model.reg_image_ids())


def elsewhere(model: pycolmap.Reconstruction, group: pycolmap.Reconstruction) -> float | None:
    """The horizontal distance (m) between the group's cameras and the nearest camera of the model, when it is
    so large that the group shows another place; else None. Both models in the world frame."""
    main, other = (np.array([m.image(i).projection_center()[:2] for i in m.reg_image_ids()]) for m in (model, group))
    gap = float(cKDTree(main).query(other)[0].min())
    extent = float(np.linalg.norm(np.ptp(main, axis=0)))
    return gap if gap > max(FAR_GROUP_M, FAR_GROUP_EXTENTS * extent) else None
