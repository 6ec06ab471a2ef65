"""Where surveyed points should appear in the photographs: the spots the ground-control editor offers to mark.

From a solved model, each registered photograph's calibrated camera and pose (ODM's cameras.json and
shots.geojson), the prediction is as good as the model: within a few pixels once the model is georeferenced by
control points, within the GPS's error otherwise. Before processing, from each photograph's GPS position and the
gimbal's attitude: good to tens of pixels, enough to find the photographs and the neighbourhood to zoom on.
Pixels follow ODM's gcp_list.txt (the first pixel's centre at 0, 0).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pycolmap
import pyproj
from scipy.spatial.transform import Rotation

from ..geo import WGS84, transform, utm_crs
from ..photo import Photo
from .cameras import odm_entry_camera
from .control import ODM_TO_COLMAP_PIXEL
from .posed import Orientation, attitude_rotation

# A shot's centre, taken to WGS84, must land this close to the longitude and latitude the file gives it for the
# CRS to be the one its centres are in (1e-6 degrees: about 10 cm).
SAME_PLACE_DEG = 1e-6
# A mark further than this from where the point's other marks place it is of something else.
MAX_MISS_PX = 25.0


@dataclass(frozen=True)
class View:
    """A photograph's camera in the world: world points (the frame's CRS) to its pixels."""

    image: str
    camera: pycolmap.Camera
    rotation: np.ndarray  # camera from world
    centre: np.ndarray  # in the world frame


@dataclass(frozen=True)
class Sighting:
    image: str
    pixel: tuple[float, float]
    width: int
    height: int


def model_views(cameras: dict, shots: dict) -> list[View]:
    """The views of a solved model: `cameras` is ODM's cameras.json, `shots` its shots.geojson (centres in the
    model's projected CRS, world-to-camera rotations as axis-angle vectors). ValueError for files that do not
    hold them."""
    views = []
    built: dict[str, pycolmap.Camera] = {}
    for feature in shots.get("features", []):
        properties = feature.get("properties", {})
        key = str(properties.get("camera", ""))
        if key not in cameras:
            raise ValueError(f"shots.geojson names camera {key!r}, which cameras.json does not hold")
        if key not in built:
            built[key] = odm_entry_camera(cameras[key], key)
        rotation = Rotation.from_rotvec(np.asarray(properties["rotation"], dtype=np.float64)).as_matrix()
        views.append(View(str(properties["filename"]), built[key], rotation,
                          np.asarray(properties["translation"], dtype=np.float64)))
    return views


def model_crs(shots: dict, candidates: list[pyproj.CRS]) -> pyproj.CRS:
    """The CRS of the shots' centres: the candidate (the points' own CRS, else the survey's UTM zone, as the
    engine chooses) that takes them to the longitudes and latitudes the file gives them. ValueError if none."""
    features = shots.get("features", [])
    if not features:
        raise ValueError("the model has no photographs in shots.geojson")
    centres = np.array([f["properties"]["translation"] for f in features], dtype=np.float64)
    lonlat = np.array([f["geometry"]["coordinates"][:2] for f in features], dtype=np.float64)
    for crs in candidates + [utm_crs(*np.median(lonlat, axis=0))]:
        back = transform(crs, WGS84, centres)[:, :2]
        if np.all(np.abs(back - lonlat) < SAME_PLACE_DEG):
            return crs
    raise ValueError("cannot tell the CRS of the model's camera centres in shots.geojson")


def gps_views(photos: list[Photo], crs: pyproj.CRS) -> list[View]:
    """Views from the photographs' metadata: the GPS position and the gimbal's attitude (straight down, the
    image's top to the north, where the metadata state none), a lens without distortion. Photographs without a
    position are left out."""
    views = []
    for photo in photos:
        if not photo.has_gps:
            continue
        centre = transform(WGS84, crs, np.array([[photo.longitude, photo.latitude, photo.altitude]]))[0]
        attitude = Orientation(photo.yaw or 0.0, photo.pitch or 0.0, photo.roll or 0.0)
        focal = photo.focal_ratio * max(photo.width, photo.height)
        camera = pycolmap.Camera.create_from_model_name(0, "SIMPLE_PINHOLE", focal, photo.width, photo.height)
        views.append(View(photo.filename, camera, attitude_rotation(attitude).T, centre))
    return views


def ray(view: View, pixel: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The world ray (origin, unit direction) through a pixel of the view."""
    colmap_pixel = np.array([[pixel[0] + ODM_TO_COLMAP_PIXEL, pixel[1] + ODM_TO_COLMAP_PIXEL]])
    x, y = np.asarray(view.camera.cam_from_img(colmap_pixel)).reshape(2)
    direction = view.rotation.T @ np.array([x, y, 1.0])
    return view.centre, direction / np.linalg.norm(direction)


@dataclass(frozen=True)
class Located:
    position: np.ndarray  # in the world frame
    disagreeing: list[str]  # the photographs whose marks miss where the others place the point


def _meeting_point(rays: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray | None:
    """The point nearest every ray (least squares); None where they are within a hair of parallel."""
    normal = np.zeros((3, 3))
    rhs = np.zeros(3)
    for origin, direction in rays:
        across = np.eye(3) - np.outer(direction, direction)
        normal += across
        rhs += across @ origin
    return np.linalg.solve(normal, rhs) if np.linalg.cond(normal) < 1e6 else None


def _miss_px(view: View, pixel: tuple[float, float], point: np.ndarray) -> float:
    in_camera = (point - view.centre) @ view.rotation.T
    if in_camera[2] <= 0:
        return float("inf")
    seen = np.asarray(view.camera.img_from_cam(in_camera[None], check_cheirality=False)).reshape(2)
    return float(np.hypot(*(seen - ODM_TO_COLMAP_PIXEL - pixel)))


def locate(surveyed: np.ndarray, marks: list[tuple[View, tuple[float, float]]]) -> Located:
    """Where a point is, as well as its marks tell: where their rays meet when two or more do; on a lone ray, its
    point nearest the surveyed position (the mark fixes the direction, the survey the distance); the surveyed
    position where there is no mark. A mark sees more exactly than a survey whose heights or datum may be off, or
    a model georeferenced by GPS alone. The marks kept are the largest set that meets within MAX_MISS_PX; the
    others (another target clicked, a photograph named wrongly) are left out and named. Of two marks that
    disagree, the one whose ray passes nearer the surveyed position is kept."""
    rays = [ray(view, pixel) for view, pixel in marks]
    best: tuple[int, float, np.ndarray, list[int]] | None = None
    for pair in itertools.combinations(range(len(marks)), 2):
        point = _meeting_point([rays[i] for i in pair])
        if point is None:
            continue
        misses = np.array([_miss_px(*mark, point) for mark in marks])
        agree = [i for i in range(len(marks)) if misses[i] <= MAX_MISS_PX]
        if len(agree) >= 2 and (best is None or (len(agree), -misses[agree].sum()) > (best[0], -best[1])):
            best = (len(agree), float(misses[agree].sum()), point, agree)
    if best is not None:
        kept = best[3]
        point = _meeting_point([rays[i] for i in kept])
        position = best[2] if point is None else point
    elif marks:
        kept = [min(range(len(marks)), key=lambda i: _ray_distance(rays[i], surveyed))]
        origin, direction = rays[kept[0]]
        position = origin + max(0.0, float((surveyed - origin) @ direction)) * direction
    else:
        kept, position = [], surveyed
    return Located(position, [marks[i][0].image for i in range(len(marks)) if i not in kept])


def _ray_distance(ray_: tuple[np.ndarray, np.ndarray], point: np.ndarray) -> float:
    origin, direction = ray_
    offset = point - origin
    return float(np.linalg.norm(offset - (offset @ direction) * direction))


def sight(views: list[View], world: np.ndarray, margin: float = 0.0) -> list[list[Sighting]]:
    """For each world point (N, 3), the views that see it and where: in front of the camera and inside the
    frame, nearest the image centre first (where a lens distorts least and a target is least likely cut). With a
    margin (a fraction of the larger image side), a point predicted that far outside the frame counts too, at the
    nearest pixel inside it: where the prediction is rough, the target may well be in the frame."""
    seen: list[list[Sighting]] = [[] for _ in range(len(world))]
    for view in views:
        in_camera = (world - view.centre) @ view.rotation.T
        ahead = in_camera[:, 2] > 0
        if not ahead.any():
            continue
        pixels = np.full((len(world), 2), np.nan)
        pixels[ahead] = np.asarray(view.camera.img_from_cam(in_camera[ahead], check_cheirality=False)).reshape(-1, 2)
        width, height = view.camera.width, view.camera.height
        reach = margin * max(width, height)
        for index in np.flatnonzero(ahead):
            x, y = pixels[index] - ODM_TO_COLMAP_PIXEL
            if np.isfinite([x, y]).all() and -reach <= x <= width - 1 + reach and -reach <= y <= height - 1 + reach:
                inside = (float(np.clip(x, 0, width - 1)), float(np.clip(y, 0, height - 1)))
                seen[index].append(Sighting(view.image, inside, width, height))
    for sightings in seen:
        sightings.sort(key=lambda s: np.hypot(s.pixel[0] - (s.width - 1) / 2, s.pixel[1] - (s.height - 1) / 2)
                       / max(s.width, s.height))
    return seen
