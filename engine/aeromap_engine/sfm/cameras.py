"""Camera models: which lens model each camera gets, its starting calibration, and ODM's cameras.json form.

The camera-lens option takes ODM's projection names; each maps to the COLMAP model with the same equations:

| camera-lens    | COLMAP model    | parameters                     |
|----------------|-----------------|--------------------------------|
| perspective    | RADIAL          | f, k1, k2                      |
| brown          | OPENCV          | fx, fy, k1, k2, p1, p2         |
| fisheye        | RADIAL_FISHEYE  | f, k1, k2                      |
| fisheye_opencv | OPENCV_FISHEYE  | fx, fy, k1, k2, k3, k4         |

"auto" takes the projection the photographs declare, else brown, as ODM does. spherical and equirectangular
(ODM's names for 360° panoramas) have the dataset stage cut each panorama into pinhole views
(panorama/split.py), which declare their projection as auto's photographs do.

During mapping the focal length stays at the value the metadata give whenever they give one (sfm/focal.py
refines it afterwards where the views can measure it; focal-refinement free refines it throughout). A survey
flown at one height
over flat ground cannot tell the focal length from the height above that ground: left free, it wanders far
from the lens's, putting the ground metres too low
and bending it into a bowl that the distortion terms then chase. Held, the distortion terms
are well determined by the overlap. Only a camera whose metadata do not state the focal length has it
refined. Principal points stay at the image centre: a survey flown at one height cannot tell them from the
camera positions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pycolmap

from ..panorama.split import SPHERICAL_LENSES
from ..photo import Photo

LENS_MODELS = {"perspective": "RADIAL", "brown": "OPENCV", "fisheye": "RADIAL_FISHEYE",
               "fisheye_opencv": "OPENCV_FISHEYE"}
AUTO_PROJECTION = "brown"
LENS_CHOICES = ("auto",) + tuple(LENS_MODELS) + SPHERICAL_LENSES
LENS_BORDER_SAMPLES = 65  # points along each side of the frame where a lens model must give a ray


@dataclass(frozen=True)
class CameraKind:
    """What makes photographs share one calibration: same body, image size, lens and focal length."""

    make: str
    model: str
    width: int
    height: int
    projection: str  # ODM's projection name written to cameras.json
    colmap_model: str
    focal_ratio: float
    focal_known: bool  # stated by the metadata (or a given calibration), not the default guess
    calibration: tuple[float, ...] = ()  # COLMAP parameters from a given cameras.json; the metadata's when empty

    @property
    def odm_id(self) -> str:
        """The camera's key in ODM's cameras.json and shots."""
        return " ".join(["v2", self.make, self.model, str(self.width), str(self.height), self.projection,
                         str(float(self.focal_ratio))[:6]]).lower()

    def initial_camera(self) -> pycolmap.Camera:
        focal = self.focal_ratio * max(self.width, self.height)
        camera = pycolmap.Camera.create_from_model_name(0, self.colmap_model, focal, self.width, self.height)
        if self.calibration:
            camera.params = list(self.calibration)
        return camera


@dataclass(frozen=True)
class Refinement:
    """Which parts of the cameras' calibration bundle adjustment may change."""

    focal: bool
    distortion: bool


def camera_kind(photo: Photo, lens: str) -> CameraKind:
    projection = lens if lens in LENS_MODELS else (photo.camera_projection or "")
    if projection not in LENS_MODELS:
        projection = AUTO_PROJECTION
    return CameraKind(photo.camera_make.strip() or "unknown", photo.camera_model.strip() or "unknown",
                      photo.width, photo.height, projection, LENS_MODELS[projection], round(photo.focal_ratio, 4),
                      photo.focal_known)


def refinement(kinds: list[CameraKind], fixed: bool, free_focal: bool) -> Refinement:
    """What mapping refines: nothing when the calibration is to be kept; else the distortion, and the focal
    length when asked or when some camera's is a guess (COLMAP refines focal lengths for all cameras or for
    none). Where the focal length can be measured, sfm/focal.py refines it after mapping."""
    if fixed:
        return Refinement(focal=False, distortion=False)
    return Refinement(focal=free_focal or not all(kind.focal_known for kind in kinds), distortion=True)


def odm_camera(camera: pycolmap.Camera, projection: str) -> dict[str, float | int | str]:
    """A calibrated camera in OpenSfM's normalised form (lengths over the larger image side, principal point
    relative to the image centre), as ODM's cameras.json holds it."""
    size = float(max(camera.width, camera.height))
    p = dict(zip((name.strip() for name in camera.params_info.split(",")), map(float, camera.params)))
    out: dict[str, float | int | str] = {"projection_type": projection, "width": camera.width,
                                         "height": camera.height}
    if "f" in p:
        out.update(focal=p["f"] / size, k1=p["k1"], k2=p["k2"])
        return out
    out.update(focal_x=p["fx"] / size, focal_y=p["fy"] / size, c_x=(p["cx"] - camera.width / 2.0) / size,
               c_y=(p["cy"] - camera.height / 2.0) / size, k1=p["k1"], k2=p["k2"])
    if projection == "brown":
        out.update(p1=p["p1"], p2=p["p2"], k3=0.0)
    else:
        out.update(k3=p["k3"], k4=p["k4"])
    return out


def with_calibrations(kinds: list[CameraKind], cameras: dict[str, Any]) -> list[CameraKind]:
    """The camera kinds, each that `cameras` (ODM's cameras.json form, as odm_camera writes it) calibrates
    starting from that calibration: the entry whose key is the kind's id (case aside), else the one entry of the
    same image size when only one has it. Raises ValueError naming what is wrong with an entry that applies."""
    by_id = {str(key).lower(): value for key, value in cameras.items()}
    chosen: dict[CameraKind, CameraKind] = {}
    for kind in dict.fromkeys(kinds):
        same_size = [v for v in cameras.values()
                     if isinstance(v, dict) and (v.get("width"), v.get("height")) == (kind.width, kind.height)]
        entry = by_id.get(kind.odm_id) or (same_size[0] if len(same_size) == 1 else None)
        chosen[kind] = kind if entry is None else calibrated_kind(kind, entry)
    return [chosen[kind] for kind in kinds]


def calibrated_kind(kind: CameraKind, entry: Any) -> CameraKind:
    """The kind with the lens model and COLMAP parameters of a cameras.json entry (the inverse of odm_camera)."""
    projection, params = colmap_calibration(entry, kind.width, kind.height, kind.projection, kind.odm_id)
    return replace(kind, projection=projection, colmap_model=LENS_MODELS[projection], focal_known=True,
                   calibration=params)


def odm_entry_camera(entry: Any, label: str) -> pycolmap.Camera:
    """The COLMAP camera of a cameras.json entry that states its image size; ValueError naming `label` if it
    cannot be one."""
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), int) and entry[k] > 0
                                              for k in ("width", "height")):
        raise ValueError(f"the entry for {label} states no image width and height")
    width, height = entry["width"], entry["height"]
    projection, params = colmap_calibration(entry, width, height, AUTO_PROJECTION, label)
    camera = pycolmap.Camera.create_from_model_name(0, LENS_MODELS[projection], params[0], width, height)
    camera.params = list(params)
    return camera


def colmap_calibration(entry: Any, width: int, height: int, projection: str,
                       label: str) -> tuple[str, tuple[float, ...]]:
    """The lens model and COLMAP parameters of a cameras.json entry for a width x height image (`projection`
    where the entry names none); ValueError naming `label` for an entry that cannot be one."""
    if not isinstance(entry, dict):
        raise ValueError(f"the entry for {label} is not an object")
    projection = entry.get("projection_type", projection)
    if projection not in LENS_MODELS:
        raise ValueError(f"projection_type {projection!r} is not one of {', '.join(LENS_MODELS)}")
    size = float(max(width, height))
    try:
        value = {name: float(entry.get(name, 0.0)) for name in ("c_x", "c_y", "k1", "k2", "k3", "k4", "p1", "p2")}
        fx = float(entry.get("focal_x", entry.get("focal", 0.0)))
        fy = float(entry.get("focal_y", entry.get("focal", fx)))
    except (TypeError, ValueError):
        raise ValueError(f"the entry for {label} holds a value that is not a number") from None
    if not (0 < fx < 100 and 0 < fy < 100) or not all(np.isfinite(list(value.values()))):
        raise ValueError(f"the entry for {label} needs a focal length (focal, or focal_x and focal_y) "
                         f"as a positive ratio of the larger image side")
    cx, cy = width / 2.0 + value["c_x"] * size, height / 2.0 + value["c_y"] * size
    params = {
        "perspective": (fx * size, cx, cy, value["k1"], value["k2"]),
        "fisheye": (fx * size, cx, cy, value["k1"], value["k2"]),
        "brown": (fx * size, fy * size, cx, cy, value["k1"], value["k2"], value["p1"], value["p2"]),
        "fisheye_opencv": (fx * size, fy * size, cx, cy, value["k1"], value["k2"], value["k3"], value["k4"]),
    }[projection]
    return projection, params


def frame_border(width: int, height: int, samples: int) -> np.ndarray:
    """Points (4 (samples - 1), 2) along the border of a width x height frame, `samples` a side with the
    corners shared, in order around it (pixel coordinates, the frame's edge at 0 and width, height)."""
    t = np.linspace(0.0, 1.0, samples)[:-1]
    return np.concatenate([np.c_[t * width, np.zeros_like(t)], np.c_[np.full_like(t, width), t * height],
                           np.c_[(1 - t) * width, np.full_like(t, height)], np.c_[np.zeros_like(t), (1 - t) * height]])


def lens_coverage(camera: pycolmap.Camera) -> float:
    """The share of the frame's border the lens model gives a ray for: below 1 where the fitted distortion folds
    the frame's edge inward (a distortion fitted on few tie points, or bent to absorb photographs resized to
    another shape, can leave an edge of the frame and the corners beside it without a ray)."""
    rays = np.asarray(camera.cam_from_img(frame_border(camera.width, camera.height, LENS_BORDER_SAMPLES)))
    return float(np.isfinite(rays).all(axis=1).mean())
