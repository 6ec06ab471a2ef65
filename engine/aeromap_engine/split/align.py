"""Submodels brought into one frame by the views they share.

Each submodel is georeferenced by its own photographs' GPS, whose errors differ from one block to the next by
decimetres to metres: enough for a step at every cutline. The submodels came from one matching database, so a
photograph two of them share is the same image with the same keypoints in both; the similarity that makes its
observations reproject in one as in the other (COLMAP's reprojection alignment) joins them. The largest submodel
stays where its GPS put it; the others join it one by one, each through the aligned submodel it shares most
views with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycolmap

from ..errors import InputError

MIN_SHARED_IMAGES = 3  # a similarity needs three views; fewer leave the join's rotation undetermined
# Reprojection alignment: a shared observation counts as an inlier within this many pixels, and a join needs at
# least this share of them (COLMAP's model aligner uses the same pair).
MAX_REPROJECTION_PX = 8.0
MIN_INLIER_SHARE = 0.3


@dataclass(frozen=True)
class Join:
    source: int  # the submodel moved
    target: int  # the aligned submodel it was joined to
    shared: int  # registered views both hold
    residual_m: float  # RMS distance between the shared views' camera centres after the join


def registered_names(model: pycolmap.Reconstruction) -> set[str]:
    return {model.image(i).name for i in model.reg_image_ids()}


def camera_centres(model: pycolmap.Reconstruction, names: list[str]) -> np.ndarray:
    return np.array([model.find_image_with_name(n).projection_center() for n in names])


def align_submodels(models: list[pycolmap.Reconstruction], labels: list[str]) -> list[Join]:
    """Move every model but the first (the reference) into the first's frame, in place; the joins made."""
    names = [registered_names(m) for m in models]
    aligned, joins = [0], []
    while len(aligned) < len(models):
        shared, source, target = max((len(names[s] & names[t]), s, t) for s in range(len(models))
                                     if s not in aligned for t in aligned)
        if shared < MIN_SHARED_IMAGES:
            left = ", ".join(labels[s] for s in range(len(models)) if s not in aligned)
            raise InputError(f"{left} share{'s' if len(models) - len(aligned) == 1 else ''} fewer than "
                             f"{MIN_SHARED_IMAGES} registered photographs with the other submodels and cannot "
                             f"be aligned to them: raise split-overlap (or split)")
        joins.append(join(models[source], models[target], source, target, sorted(names[source] & names[target])))
        aligned.append(source)
    return joins


def join(source: pycolmap.Reconstruction, target: pycolmap.Reconstruction, source_index: int, target_index: int,
         shared: list[str]) -> Join:
    transform = pycolmap.align_reconstructions_via_reprojections(source, target, MIN_INLIER_SHARE,
                                                                 MAX_REPROJECTION_PX)
    if transform is None:  # too few shared observations agree: the camera centres still tie the two
        transform = pycolmap.estimate_sim3d(camera_centres(source, shared), camera_centres(target, shared))
    if transform is None:
        raise InputError("Two submodels share photographs whose positions do not agree in them: they cannot be "
                         "aligned")
    source.transform(transform)
    gaps = camera_centres(source, shared) - camera_centres(target, shared)
    return Join(source_index, target_index, len(shared), float(np.sqrt((gaps ** 2).sum(axis=1).mean())))
