"""Photo-consistency: the views that see a face should show it alike. A car that drove off, a walker, a cart: the
view that caught it shows the place in another colour than the views before and after it, and must not paint it
on the model. After texrecon's outlier removal (Waechter et al.), stricter: a view is dropped for a face only
where the other views agree closely with one another (within AGREEMENT, in log colour, which exposure
differences between photographs stay inside) and this one stands far off them (beyond DISTANCE) at every one of
a few points of the face (its centre and three towards its corners). What every view shows differently (a
tree's crown seen from around it, the sea) has no agreement to go by, and keeps its views: dropping views there
only cuts the texture into more patches. Colours are read from reduced, slightly blurred photographs, so that
a pixel's misregistration does not count as a change."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dense.views import View
from ..ortho.visibility import Projection
from .colours import ImageLoader, blurred_colours
from .selection import PROBES, Candidates

SCALE = 1 / 4  # of the photographs, for the colours compared
BLUR = 1.5  # px at that scale
MIN_OTHERS = 2  # views that must agree for one to stand off them
AGREEMENT = 0.12  # log colour: the others within about 12 % of their mean colour, each of them
DISTANCE = 0.6  # log colour: this one about 80 % or more off it (a red car on grey asphalt: 1.5)
LOG_OFFSET = 16.0  # grey levels added before the log, so that noise in the shadows does not count

def candidate_colours(candidates: Candidates, points: np.ndarray, views: Sequence[View],
                      load: ImageLoader) -> np.ndarray:
    """(F, P, K, 3) the colour of each face's points (F, P, 3 world points) in each candidate view, NaN in unused
    slots; one reduced photograph in memory at a time."""
    faces_count, probes = points.shape[:2]
    colours = np.full((faces_count, probes, candidates.views.shape[1], 3), np.nan, np.float32)
    for number in np.unique(candidates.views[candidates.views >= 0]):
        view = views[number]
        faces, slots = np.nonzero(candidates.views == number)
        projection = Projection.of(view, points[faces].reshape(-1, 3))
        sampled = blurred_colours(view, load, SCALE, BLUR, np.column_stack([projection.u, projection.v]))
        colours[faces, :, slots] = sampled.reshape(len(faces), probes, 3)
    return colours


def inconsistent(colours: np.ndarray) -> np.ndarray:
    """(N, K) which candidates' colours (N, K, 3 grey levels; NaN: no candidate) stand off the others."""
    logs = np.log(colours + LOG_OFFSET)
    valid = ~np.isnan(logs[:, :, 0])
    off = np.zeros(valid.shape, bool)
    judged = np.flatnonzero(valid.sum(axis=1) > MIN_OTHERS)
    sample, present = np.nan_to_num(logs[judged]), valid[judged]
    for slot in np.flatnonzero(present.any(axis=0)):
        others = present.copy()
        others[:, slot] = False
        weights = others[:, :, None].astype(np.float32)
        mean = (sample * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1)
        spread = np.where(others, np.linalg.norm(sample - mean[:, None], axis=2), 0).max(axis=1)
        distance = np.linalg.norm(sample[:, slot] - mean, axis=1)
        off[judged, slot] = present[:, slot] & (spread < AGREEMENT) & (distance > DISTANCE)
    return off


def drop_inconsistent(candidates: Candidates, vertices: np.ndarray, faces: np.ndarray, views: Sequence[View],
                      load: ImageLoader) -> tuple[Candidates, int]:
    """The candidates without the views that stand off the others for a face, and how many were dropped."""
    points = np.einsum("pc,fcx->fpx", PROBES.astype(np.float64), vertices[faces])
    colours = candidate_colours(candidates, points, views, load)
    count, probes, slots = colours.shape[:3]
    off = inconsistent(colours.reshape(count * probes, slots, 3)).reshape(count, probes, slots)
    seen = ~np.isnan(colours[:, :, :, 0])
    off = (off | ~seen).all(axis=1) & off.any(axis=1)  # off wherever the face shows in that view
    views_kept, quality = candidates.views.copy(), candidates.quality.copy()
    views_kept[off], quality[off] = -1, 0
    return Candidates(views_kept, quality), int(off.sum())
