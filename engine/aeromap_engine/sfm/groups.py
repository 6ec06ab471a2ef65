"""Models that do not hold every photograph: groups that share no view with the main model, and images whose
registration the GPS contradicts.

Photographs of two fields, or flights with a gap between them, reconstruct as separate models whose relative
placement the images cannot tell. Placed each by its own GPS, they are merged into one model so that the
products cover every group and the later stages see one set of cameras. All models come from one matching
database, so camera and image ids agree between them and no image is in two models.
"""

from __future__ import annotations

import pycolmap


def merge(target: pycolmap.Reconstruction, other: pycolmap.Reconstruction) -> None:
    """Add the registered images and the points of `other` to `target`, as they are (both already in one
    frame). A camera both models share keeps `target`'s calibration."""
    for camera_id, camera in other.cameras.items():
        if not target.exists_camera(camera_id):
            target.add_camera_with_trivial_rig(camera)
    for image_id in other.reg_image_ids():
        image = other.image(image_id)
        bare = pycolmap.Image(name=image.name, points2D=pycolmap.Point2DList(
            [pycolmap.Point2D(p.xy) for p in image.points2D]), camera_id=image.camera_id, image_id=image_id)
        target.add_image_with_trivial_frame(bare, image.cam_from_world())
    for point in other.points3D.values():
        target.add_point3D(point.xyz, point.track, point.color)


def deregister(model: pycolmap.Reconstruction, names: list[str]) -> None:
    """Take images out of the model; COLMAP drops their observations, and points left with one view."""
    for name in names:
        image = model.find_image_with_name(name)
        if image is not None and image.has_pose:
            model.deregister_frame(image.frame_id)


def image_names(model: pycolmap.Reconstruction) -> list[str]:
    return sorted(model.image(i).name for i in model.reg_image_ids())
