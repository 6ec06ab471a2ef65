"""Whether a model and the photographs' GPS fixes tell the same story.

A few fixes far from the model are GPS glitches. When many are, or when the fixes that agree still lie far from
their cameras, the model (or the fixes' assignment to the photographs) is wrong. "Far" has two measures: the
accuracy the fixes state, and the spacing of the photographs, since fixes that cannot even tell neighbouring
photographs apart describe no layout of the survey (the stated accuracy is often only a default).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycolmap
from scipy.spatial import cKDTree

from .database import PositionPrior

# GPS glitches hit a few photographs of a flight; when more fixes than this share disagree with the model, the
# model is the likelier culprit.
MAX_WILD_SHARE = 0.25
SPACING_SHARE = 0.25  # fixes may err by this share of the distance between neighbouring photographs


@dataclass(frozen=True)
class GpsVerdict:
    located: int  # registered images with a fix
    wild: list[str]  # those whose fix disagrees with the model
    accuracy_m: float  # the largest stated horizontal accuracy of the fixes
    spacing_m: float  # median horizontal distance between a fix and its nearest neighbour
    median_residual_m: float  # median horizontal distance between the other cameras and their fixes

    @property
    def residual_bound_m(self) -> float:
        return max(self.accuracy_m, SPACING_SHARE * self.spacing_m)

    @property
    def far(self) -> bool:
        """The fixes that agree with the model still lie farther from it than GPS errs."""
        return self.median_residual_m > self.residual_bound_m

    @property
    def doubted(self) -> bool:
        return len(self.wild) > MAX_WILD_SHARE * self.located or self.far

    @property
    def agreeing(self) -> int:
        """Images whose registration agrees with their fix: all when the wild fixes are blamed on the GPS."""
        return self.located - len(self.wild) if self.doubted else self.located


def gps_verdict(model: pycolmap.Reconstruction, priors: dict[str, PositionPrior], wild: list[str]) -> GpsVerdict:
    """How the model's registered cameras agree with their fixes (model in the world frame)."""
    located = [n for n in priors if (image := model.find_image_with_name(n)) is not None and image.has_pose]
    fixes = np.array([priors[n].position[:2] for n in located]).reshape(-1, 2)
    kept = [i for i, n in enumerate(located) if n not in wild]
    residuals = [np.linalg.norm(model.find_image_with_name(located[i]).projection_center()[:2] - fixes[i])
                 for i in kept]
    accuracy = max((priors[n].horizontal_stddev for n in located), default=0.0)
    return GpsVerdict(len(located), list(wild), accuracy, fix_spacing(fixes),
                      float(np.median(residuals)) if residuals else 0.0)


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
