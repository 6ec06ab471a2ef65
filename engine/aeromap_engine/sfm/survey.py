"""The survey as structure from motion starts from it: the photographs, the world frame they are georeferenced
in (frame.py), each photograph's position and prior in that frame, and the camera kind of each (cameras.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pycolmap

from ..atomic_files import read_json
from ..errors import InputError
from ..io.gcp import read_gcp_file
from ..photo import Photo
from .cameras import CameraKind, camera_kind
from .database import PositionPrior
from .frame import WorldFrame, barometric_heights, photo_positions, position_priors, world_frame

if TYPE_CHECKING:
    from ..pipeline import StageContext


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
    return Survey(photos, frame, positions, priors, [camera_kind(p, options.camera_lens) for p in photos])
