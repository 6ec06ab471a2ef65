"""Submodels brought into one frame by the views they share.

Each submodel is georeferenced by its own photographs' GPS, whose errors differ from one block to the next by
decimetres to metres: enough for a step at every cutline. The submodels came from one matching database, so a
photograph two of them share is the same image with the same keypoints in both; the similarity that makes its
observations reproject in one as in the other (COLMAP's reprojection alignment) joins them. The largest submodel
stays where its GPS put it; the others join it one by one, each through the aligned submodel it shares most
views with that gives a join worth trusting: the shared cameras must be at least three, not along one line (which
leaves the roll about that line to chance), and agree after the join to a tenth of their spacing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycolmap
from scipy.spatial import cKDTree

from ..errors import InputError
from ..sfm.alignment import apply, is_collinear

MIN_SHARED_IMAGES = 3  # a similarity needs three views; fewer leave the join's rotation undetermined
# Reprojection alignment: a shared observation counts as an inlier within this many pixels, and a join needs at
# least this share of them (COLMAP's model aligner uses the same pair).
MAX_REPROJECTION_PX = 8.0
MIN_INLIER_SHARE = 0.3
# The shared cameras of a join may lie this share of their spacing apart after it (RMS): a join that leaves more
# was made on views that disagree, while joins on views that agree come well within it.
MAX_RESIDUAL_SPACING = 0.1


@dataclass(frozen=True)
class Join:
    source: int  # the submodel moved
    target: int  # the aligned submodel it was joined to
    shared: int  # registered views both hold
    residual_m: float  # RMS distance between the shared views' camera centres after the join
    bound_m: float  # the most residual_m may be (MAX_RESIDUAL_SPACING of the shared cameras' spacing)


def registered_names(model: pycolmap.Reconstruction) -> set[str]:
    return {model.image(i).name for i in model.reg_image_ids()}


def camera_centres(model: pycolmap.Reconstruction, names: list[str]) -> np.ndarray:
    return np.array([model.find_image_with_name(n).projection_center() for n in names])


def align_submodels(models: list[pycolmap.Reconstruction], labels: list[str]) -> list[Join]:
    """Move every model but the first (the reference) into the first's frame, in place; the joins made. Each
    model not yet aligned is tried against each aligned one, those sharing most views first, until a join holds."""
    names = [registered_names(m) for m in models]
    aligned, joins = [0], []
    while len(aligned) < len(models):
        candidates = sorted(((len(names[s] & names[t]), s, t) for s in range(len(models)) if s not in aligned
                             for t in aligned), key=lambda c: (-c[0], c[1], c[2]))
        refusals = []
        for _, source, target in candidates:
            made = join(models[source], models[target], source, target, sorted(names[source] & names[target]))
            if isinstance(made, Join):
                joins.append(made)
                aligned.append(source)
                break
            refusals.append(f"{labels[source]} to {labels[target]}, {made}")
        else:
            left = [labels[s] for s in range(len(models)) if s not in aligned]
            raise InputError(f"no trustworthy join is left for {', '.join(left)}: {'; '.join(refusals[:3])}")
    return joins


def join(source: pycolmap.Reconstruction, target: pycolmap.Reconstruction, source_index: int, target_index: int,
         shared: list[str]) -> Join | str:
    """The join of `source` onto `target` on the views they share, `source` moved into `target`'s frame; or,
    leaving both as they are, why no join can be trusted."""
    if len(shared) < MIN_SHARED_IMAGES:
        return f"they share {len(shared)} registered photographs, fewer than {MIN_SHARED_IMAGES}"
    transform = pycolmap.align_reconstructions_via_reprojections(source, target, MIN_INLIER_SHARE,
                                                                 MAX_REPROJECTION_PX)
    if transform is None:  # too few shared observations agree: the camera centres still tie the two
        transform = pycolmap.estimate_sim3d(camera_centres(source, shared), camera_centres(target, shared))
    if transform is None:
        return f"the positions of the {len(shared)} photographs they share do not agree in them"
    joined_centres, target_centres = apply(transform, camera_centres(source, shared)), camera_centres(target, shared)
    refusal = join_refusal(joined_centres, target_centres)
    if refusal is not None:
        return refusal
    source.transform(transform)
    residual, bound = residual_and_bound(joined_centres, target_centres)
    return Join(source_index, target_index, len(shared), residual, bound)


def join_refusal(joined: np.ndarray, target: np.ndarray) -> str | None:
    """Why a join that puts the shared cameras at `joined` (n, 3, n at least MIN_SHARED_IMAGES), where the target
    model has them at `target`, cannot be trusted; None where it can."""
    if is_collinear(target):
        return (f"the {len(target)} photographs they share lie along one line, which leaves the join's roll about "
                f"it undetermined")
    residual, bound = residual_and_bound(joined, target)
    if residual > bound:
        return (f"the {len(target)} photographs they share lie {residual:.3g} m apart after the join (RMS), more "
                f"than {bound:.3g} m, a tenth of their spacing")
    return None


def residual_and_bound(joined: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """The shared cameras' RMS distance after a join, and the most it may be: MAX_RESIDUAL_SPACING of the median
    distance from each of them to its nearest neighbour."""
    residual = float(np.sqrt(((joined - target) ** 2).sum(axis=1).mean()))
    spacing = float(np.median(cKDTree(target).query(target, k=2)[0][:, 1]))
    return residual, MAX_RESIDUAL_SPACING * spacing
