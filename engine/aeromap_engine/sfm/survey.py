"""The survey as structure from motion starts from it: the photographs, the world frame they are georeferenced
in (frame.py), each photograph's position and prior in that frame, and the camera kind of each (cameras.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pycolmap

from ..atomic_files import read_json
from ..errors import InputError
from ..io.gcp import read_gcp_file
from ..log import log
from ..photo import Photo
from .cameras import CameraKind, camera_kind, with_calibrations
from .database import PositionPrior
from .frame import WorldFrame, barometric_heights, photo_positions, position_priors, world_frame

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project


@dataclass(frozen=True)
class Survey:
    """The photographs and what their metadata says of where they were taken."""
    photos: list[Photo]
    frame: WorldFrame
    positions: np.ndarray  # (n, 3) in the world frame, NaN where a photograph has no position
    priors: dict[str, PositionPrior]
    kinds: list[CameraKind]

    def subset(self, names: set[str]) -> "Survey":
        keep = [i for i, p in enumerate(self.photos) if p.filename in names]
        return Survey([self.photos[i] for i in keep], self.frame, self.positions[keep],
                      {n: p for n, p in self.priors.items() if n in names}, [self.kinds[i] for i in keep])


def read_survey(ctx: "StageContext") -> Survey:
    project, options = ctx.project, ctx.options
    cv2.setNumThreads(options.max_concurrency)
    pycolmap.logging.minloglevel = 2  # the engine logs what matters; COLMAP's own lines would flood the console
    photos = [Photo.from_odm(p) for p in read_json(project.images_json, [])]
    if len(photos) < 2:
        raise InputError("Need at least 2 images: run the dataset stage first")
    frame = world_frame(photos, None if options.use_exif else read_gcp_file(project.gcp_file))
    positions = barometric_heights(photos, photo_positions(photos, frame) + [0.0, 0.0, options.gps_z_offset])
    priors = position_priors(photos, positions, options.gps_accuracy, options.was_given("gps-accuracy"))
    kinds = [camera_kind(p, options.camera_lens) for p in photos]
    if options.cameras:
        kinds = given_calibrations(project, options.cameras, kinds)
    return Survey(photos, frame, positions, priors, kinds)


def given_calibrations(project: "Project", value: str, kinds: list[CameraKind]) -> list[CameraKind]:
    """The kinds calibrated by the cameras option: cameras.json's content, or the name of such a file uploaded
    with the images (cameras.with_calibrations). InputError where it cannot be read or an entry is wrong."""
    text = value
    if not value.lstrip().startswith("{"):
        path = project.uploaded_file(value)
        if path is None:
            raise InputError(f"cameras: neither JSON nor the name of a file uploaded with the images: {value[:80]!r}")
        text = path.read_text(encoding="utf-8", errors="replace")
    try:
        cameras = json.loads(text)
        if not isinstance(cameras, dict):
            raise ValueError("not an object of cameras by id")
        calibrated = with_calibrations(kinds, cameras)
    except ValueError as wrong:  # json.JSONDecodeError is one
        raise InputError(f"cameras: {wrong}") from None
    used = sorted({k.odm_id for k in calibrated if k.calibration})
    unused = sorted({k.odm_id for k in calibrated if not k.calibration})
    log.info("Cameras calibrated by the cameras option: %s%s", ", ".join(used) or "none",
             f"; not given, calibrated from the metadata: {', '.join(unused)}" if unused else "")
    return calibrated
