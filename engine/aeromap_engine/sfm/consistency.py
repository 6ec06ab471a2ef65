"""Whether a model and the photographs' GPS fixes tell the same story.

The photographs judge the model's geometry; the fixes place and scale it through a robust similarity, and where
they disagree with it, that is reported as the placement's uncertainty rather than held against the model. Fixes
that disagree are wild when few, or a receiver settling when they open a flight and come closer photograph by
photograph (a consumer GPS after take-off). Only when more than a quarter disagree otherwise do the fixes not
describe the photographs' layout at all (fixes assigned to the wrong photographs, a geotagging log offset in
time), and no placement by them can be trusted. "Far" has two measures: the accuracy the fixes state, and the
spacing of the photographs, since fixes that cannot even tell neighbouring photographs apart place the model
only roughly (the stated accuracy is often only a default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pycolmap
from scipy.spatial import cKDTree

from .database import PositionPrior

# Wild fixes hit a few photographs of a flight; when fewer than this share agree with the layout of the
# photographs (a settling receiver's counted in), the fixes belong to other photographs.
MIN_AGREEING_SHARE = 0.75
SPACING_SHARE = 0.25  # fixes may err by this share of the distance between neighbouring photographs
# A settling receiver's fixes come closer to the truth as it converges: the last of the run that opens a flight
# lies at most this share of the first one's distance from its camera.
SETTLED_SHARE = 0.75
# After the fixes that the placement left out as a settling receiver's, the next ones of its flight that still
# lie further than this many times the other fixes' median distance from their cameras (about three standard
# deviations of a receiver's horizontal noise), closer one by one, are the receiver still converging: kept, they
# would turn and stretch the placement towards the drift. Drift within the noise's reach cannot be told from it.
SETTLING_TAIL_FACTOR = 2.5


@dataclass(frozen=True)
class GpsVerdict:
    located: int  # registered images with a fix
    wild: list[str]  # those whose fix disagrees with the model's layout
    settling: list[str]  # the wild ones explained by a receiver settling at the start of a flight
    # The other wild ones within their stated accuracy and a share of the spacing of the fixes: the similarity
    # left them out, as a line flown the other way with a lagging receiver sits a metre or two aside, but they
    # describe the layout as well as the receiver can (fixes given to the wrong photographs err by the spacing).
    close: list[str]
    accuracy_m: float  # the largest stated horizontal accuracy of the fixes
    spacing_m: float  # median horizontal distance between a fix and its nearest neighbour
    median_residual_m: float  # median horizontal distance between the other cameras and their fixes

    @property
    def residual_bound_m(self) -> float:
        return max(self.accuracy_m, SPACING_SHARE * self.spacing_m)

    @property
    def agreeing(self) -> int:
        """Fixes that describe the photographs' layout: those the similarity fits, a settling receiver's, and
        those within their accuracy."""
        return self.located - len(self.wild) + len(self.settling) + len(self.close)

    @property
    def layout_matches(self) -> bool:
        return self.agreeing >= MIN_AGREEING_SHARE * self.located


def gps_verdict(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], wild: list[str],
                flights: Sequence[Sequence[str]] = ()) -> GpsVerdict:
    """How the model's registered cameras agree with their fixes (model in the world frame); `flights` holds the
    photographs' names in capture order, a list for each flight."""
    located = [n for n in priors if (image := model.find_image_with_name(n)) is not None and image.has_pose]
    return judge_fixes(horizontal_distances(model, priors, located), {n: priors[n] for n in located}, wild, flights)


def judge_fixes(distances: dict[str, float], priors: dict[str, PositionPrior], wild: list[str],
                flights: Sequence[Sequence[str]]) -> GpsVerdict:
    """The verdict on fixes from each located camera's horizontal distance to its fix, the similarity that placed
    the model having found `wild` to disagree."""
    fixes = np.array([priors[n].position[:2] for n in distances]).reshape(-1, 2)
    residuals = [d for n, d in distances.items() if n not in wild]
    accuracy = max((priors[n].horizontal_stddev for n in distances), default=0.0)
    spacing = fix_spacing(fixes)
    settling = settling_fixes(flights, distances, set(wild))
    close = [n for n in wild if n not in settling
             and distances[n] <= min(priors[n].horizontal_stddev, SPACING_SHARE * spacing)]
    return GpsVerdict(len(distances), list(wild), settling, close, accuracy, spacing,
                      float(np.median(residuals)) if residuals else 0.0)


def horizontal_distances(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], names: list[str]
                         ) -> dict[str, float]:
    """Each named registered camera's horizontal distance from its fix."""
    return {n: float(np.linalg.norm(model.find_image_with_name(n).projection_center()[:2] - priors[n].position[:2]))
            for n in names}


def settling_fixes(flights: Sequence[Sequence[str]], distances: dict[str, float], wild: set[str]) -> list[str]:
    """The wild fixes that open a flight (among the located photographs, in capture order) and come closer to
    their cameras from the first to the last of them: a receiver converging after take-off."""
    return [name for flight in flights
            for name in _settling_run(flight, distances, lambda run, name: name in wild)]


def settling_runs(flights: Sequence[Sequence[str]], distances: dict[str, float], wild: set[str]) -> set[str]:
    """A settling receiver's fixes that the placement should leave out: at least two wild fixes that open a
    flight, then those of its next fixes that still lie far from their cameras, each no further than the one
    before it, the last closer than SETTLED_SHARE of the first."""
    typical = [d for n, d in distances.items() if n not in wild]
    if not typical:
        return set()
    far = SETTLING_TAIL_FACTOR * float(np.median(typical))

    def takes(run: list[str], name: str) -> bool:
        closing = not run or distances[name] <= distances[run[-1]]
        return closing and (name in wild if len(run) < 2 else distances[name] > far)

    return {name for flight in flights for name in _settling_run(flight, distances, takes)}


def _settling_run(flight: Sequence[str], distances: dict[str, float],
                  takes: Callable[[list[str], str], bool]) -> list[str]:
    """The located fixes that open the flight while `takes` the next one after those before it; none unless at
    least two, the last closer to its camera than SETTLED_SHARE of the first's distance."""
    run: list[str] = []
    for name in (n for n in flight if n in distances):
        if not takes(run, name):
            break
        run.append(name)
    return run if len(run) >= 2 and distances[run[-1]] <= SETTLED_SHARE * distances[run[0]] else []


def fix_spacing(xy: np.ndarray) -> float:
    """Median distance from each position to its nearest neighbour (0 with fewer than two)."""
    if len(xy) < 2:
        return 0.0
    distances, _ = cKDTree(xy).query(xy, k=2)
    return float(np.median(distances[:, 1]))


@dataclass(frozen=True)
class LayoutUncertainty:
    """How well GPS fixes of this spread and this layout fix a model's attitude and size (1 sigma)."""

    tilt_deg: float  # about the horizontal axis along which the fixes spread least
    scale: float  # relative


def layout_uncertainty(xy: np.ndarray, horizontal_rmse_m: float, vertical_rmse_m: float) -> LayoutUncertainty:
    """The standard errors of a plane's slope through N heights with noise sigma_z over horizontal positions of
    second moment S (sigma_z / sqrt(S) along S's weakest direction), and of a scale fitted to positions with
    noise sigma_xy per axis (sigma_xy / sqrt(sum of squared distances from their centre))."""
    centred = xy - xy.mean(axis=0)
    weakest = float(np.linalg.eigvalsh(centred.T @ centred)[0])
    spread = float(np.sum(centred ** 2))
    per_axis = horizontal_rmse_m / np.sqrt(2.0)
    tilt = np.degrees(np.arctan(vertical_rmse_m / np.sqrt(weakest))) if weakest > 0 else 90.0
    return LayoutUncertainty(float(tilt), float(per_axis / np.sqrt(spread)) if spread > 0 else 1.0)
