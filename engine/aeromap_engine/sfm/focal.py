"""The focal length: kept at the metadata's value where the survey cannot tell it, refined where it can.

Photographs taken straight down from one height cannot tell the focal length from the flying height: a longer
focal length only stretches the scene vertically about the cameras, which every photograph sees the same way
(sfm/cameras.py). Views in different directions (obliques, a gimbal that tilts) or from clearly different
heights see that stretch differently, so there the focal length is refined in a final adjustment, with the
metadata's value as a prior in the form of a bound: a refined value far from what the lens states means the
geometry did not pin it down after all, and the stated one is kept.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pycolmap

from ..log import log
from .alignment import adjust_with_priors
from .cameras import Refinement
from .database import PositionPrior

FOCAL_CHOICES = ("auto", "fixed", "free")
MIN_VIEW_SPREAD_DEG = 10.0  # median angle between a view and the mean view that makes the directions differ
MIN_HEIGHT_SPREAD = 0.2  # camera heights' spread over the flying height that makes the heights differ
MAX_FOCAL_CHANGE = 0.15  # the largest relative change from the stated focal length still believed


def geometry_constrains_focal(model: pycolmap.Reconstruction) -> bool:
    """Whether the views differ enough in direction or height for the focal length to be measured."""
    images = [model.image(i) for i in model.reg_image_ids()]
    directions = np.array([image.viewing_direction() for image in images])
    mean = directions.mean(axis=0)
    mean /= np.linalg.norm(mean)
    spread_deg = float(np.degrees(np.median(np.arccos(np.clip(directions @ mean, -1.0, 1.0)))))
    heights = np.array([image.projection_center()[2] for image in images])
    ground = float(np.median([point.xyz[2] for point in model.points3D.values()]))
    flying = float(np.median(heights)) - ground
    height_spread = float(np.std(heights)) / flying if flying > 0 else 0.0
    return spread_deg >= MIN_VIEW_SPREAD_DEG or height_spread >= MIN_HEIGHT_SPREAD


def refine_focal(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], refine: Refinement,
                 threads: int) -> pycolmap.Reconstruction:
    """The model after an adjustment that also refines the focal lengths, or the model as it was when one moves
    further than MAX_FOCAL_CHANGE from its stated value."""
    before = pycolmap.Reconstruction(model)
    adjust_with_priors(model, priors, replace(refine, focal=True), threads)
    for camera_id, camera in model.cameras.items():
        stated, refined = before.cameras[camera_id].mean_focal_length(), camera.mean_focal_length()
        change = refined / stated - 1.0
        if abs(change) > MAX_FOCAL_CHANGE:
            log.warning("Refining the focal length moved it %+.0f %% from the stated %.0f px: keeping the stated "
                        "value (set focal-refinement to free to force it)", 100 * change, stated)
            return before
        log.info("Focal length refined from %.1f to %.1f px (%+.1f %%)", stated, refined, 100 * change)
    return model
