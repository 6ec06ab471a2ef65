"""What a solved reconstruction gives the other stages and the user: ODM's cameras.json and shots.geojson, the
sparse cloud, and the figures that judge it."""

from __future__ import annotations

import numpy as np
import pycolmap
from scipy.spatial.transform import Rotation

from ..cloud.points import PointCloud
from ..crs_offset import Georef
from ..geo import WGS84, transform
from .cameras import CameraKind, odm_camera


def cameras_json(reconstruction: pycolmap.Reconstruction, kinds: dict[int, CameraKind]) -> dict[str, dict]:
    """ODM's cameras.json: each calibrated camera under its ODM key."""
    return {kind.odm_id: odm_camera(reconstruction.cameras[camera_id], kind.projection)
            for camera_id, kind in kinds.items() if camera_id in reconstruction.cameras}


def shots_geojson(reconstruction: pycolmap.Reconstruction, georef: Georef, kinds: dict[int, CameraKind],
                  capture_times: dict[str, float | None]) -> dict:
    """ODM's shots.geojson: one point per registered photograph at its camera centre (WGS84 longitude, latitude,
    altitude), with the centre in the projected CRS and the world-to-camera rotation as an axis-angle vector."""
    images = sorted((reconstruction.image(i) for i in reconstruction.reg_image_ids()), key=lambda im: im.name)
    offset = np.array([georef.offset[0], georef.offset[1], 0.0])
    centres = np.array([im.projection_center() for im in images]).reshape(-1, 3) + offset
    lonlatalt = transform(georef.crs, WGS84, centres)
    features = []
    for image, centre, geographic in zip(images, centres, lonlatalt):
        kind = kinds[image.camera_id]
        calibration = odm_camera(reconstruction.cameras[image.camera_id], kind.projection)
        rotation = Rotation.from_matrix(image.cam_from_world().rotation.matrix()).as_rotvec()
        time_ms = capture_times.get(image.name)
        features.append({
            "type": "Feature",
            "properties": {
                "filename": image.name,
                "camera": kind.odm_id,
                "focal": calibration.get("focal", calibration.get("focal_x")),
                "width": kind.width,
                "height": kind.height,
                "capture_time": time_ms / 1000.0 if time_ms is not None else 0,
                "translation": centre.tolist(),
                "rotation": rotation.tolist(),
            },
            "geometry": {"type": "Point", "coordinates": geographic.tolist()},
        })
    return {"type": "FeatureCollection", "features": features}


def control_points_geojson(residuals: dict, georef: Georef, checks: dict | None = None) -> dict:
    """ODM's ground_control_points.geojson: each control point the model located, at its position in the model
    (WGS84 longitude, latitude, altitude), with the photographs it is marked in and its error (model minus
    surveyed, metres in the projected CRS); then each checkpoint measured, `checkpoint` true. `residuals`: the
    georeferencing's gcp_residual_m figures (those of a model solved before they recorded the surveyed positions
    have none to place); `checks`: its checkpoint_residual_m."""
    checkpoints = [{**p, "used": False, "checkpoint": True} for p in (checks or {}).get("points", [])]
    points = [p for p in residuals.get("points", []) if "surveyed_m" in p] + checkpoints
    offset = np.array([georef.offset[0], georef.offset[1], 0.0])
    modelled = np.array([np.add(p["surveyed_m"], p["delta_m"]) for p in points]).reshape(-1, 3) + offset
    lonlatalt = transform(georef.crs, WGS84, modelled) if len(points) else modelled
    features = [{
        "type": "Feature",
        "properties": {"id": p["name"], "observations_count": len(p["marked_in"]),
                       "observations_list": ",".join(p["marked_in"]), "error_x": p["delta_m"][0],
                       "error_y": p["delta_m"][1], "error_z": p["delta_m"][2], "used": p["used"],
                       "checkpoint": p.get("checkpoint", False)},
        "geometry": {"type": "Point", "coordinates": geographic.tolist()},
    } for p, geographic in zip(points, lonlatalt)]
    return {"type": "FeatureCollection", "features": features}


def sparse_cloud(reconstruction: pycolmap.Reconstruction) -> PointCloud:
    points = list(reconstruction.points3D.values())
    xyz = np.array([p.xyz for p in points], dtype=np.float32).reshape(-1, 3)
    rgb = np.array([p.color for p in points], dtype=np.uint8).reshape(-1, 3)
    views = np.array([min(255, p.track.length()) for p in points], dtype=np.uint8)
    return PointCloud(xyz, rgb, views)


def mean_gsd_cm(reconstruction: pycolmap.Reconstruction) -> float | None:
    """Mean ground sample distance at full resolution, in hundredths of the model's unit (centimetres once the
    model is metric): for each image, the median depth of the points it sees over its focal length in pixels
    (true for nadir and oblique views alike)."""
    samples = []
    for image_id in reconstruction.reg_image_ids():
        image = reconstruction.image(image_id)
        ids = [p.point3D_id for p in image.points2D if p.has_point3D()]
        if not ids:
            continue
        world = np.array([reconstruction.points3D[i].xyz for i in ids])
        pose = np.asarray(image.cam_from_world().matrix())
        depth = float(np.median(world @ pose[:, :3].T[:, 2] + pose[2, 3]))
        samples.append(depth / image.camera.mean_focal_length())
    return float(np.mean(samples)) * 100.0 if samples else None
