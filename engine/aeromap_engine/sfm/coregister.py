"""A model's points registered to a reference surface: the rigid motion (a rotation about the points' centre and a
shift) that lays them on an earlier survey's elevation model, for the align option.

The misfit of a point is the reference's height under it less its own. Its gradient with respect to the motion
comes from the reference's slopes: heights fix the vertical shift and the tilt, and slopes facing every way (roofs,
banks, trees) fix the horizontal shift and the heading. A Gauss-Newton iteration with Tukey weights (points on
what has changed since, such as a new stockpile or a parked car, weigh nothing) runs on the reference smoothed
at decreasing widths: the wide ones pull a model metres off into the basin of the right answer, the last one
refines it on the surface as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import ndimage
from scipy.spatial.transform import Rotation

SMOOTHING_M = (8.0, 4.0, 2.0, 1.0, 0.0)  # widths (Gaussian sigma) the reference is smoothed at, in turn
STEPS_PER_WIDTH = 8
TUKEY_C = 4.685  # of the robust spread of the misfits: the usual 95 % efficiency
MIN_POINTS = 50


@dataclass(frozen=True)
class HeightGrid:
    """Heights on a north-up grid in the model's frame: row 0 along `north`, NaN where there is none."""

    z: np.ndarray
    west: float
    north: float
    cell: float

    @cached_property
    def gradient(self) -> tuple[np.ndarray, np.ndarray]:
        """dz/drow, dz/dcol."""
        dz_drow, dz_dcol = np.gradient(self.z)
        return dz_drow, dz_dcol

    def smoothed(self, sigma_m: float) -> "HeightGrid":
        """The grid smoothed (NaN cells ignored, and left NaN)."""
        if sigma_m <= 0:
            return self
        known = np.isfinite(self.z)
        sigma = sigma_m / self.cell
        weight = ndimage.gaussian_filter(known.astype(np.float64), sigma)
        total = ndimage.gaussian_filter(np.where(known, self.z, 0.0), sigma)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(known, total / weight, np.nan)
        return HeightGrid(z, self.west, self.north, self.cell)

    def sample(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Heights (N,) and slopes (N, 2: dz/dx, dz/dy) at the points (N, 2), bilinear; NaN off the grid."""
        col = (xy[:, 0] - self.west) / self.cell - 0.5
        row = (self.north - xy[:, 1]) / self.cell - 0.5
        at = np.vstack([row, col])
        z = ndimage.map_coordinates(self.z, at, order=1, mode="constant", cval=np.nan)
        dz_drow, dz_dcol = self.gradient
        slopes = np.column_stack([
            ndimage.map_coordinates(dz_dcol, at, order=1, mode="constant", cval=np.nan) / self.cell,
            -ndimage.map_coordinates(dz_drow, at, order=1, mode="constant", cval=np.nan) / self.cell])
        return z, slopes


@dataclass(frozen=True)
class Registration:
    """reference frame point = rotation @ (point - centre) + centre + shift."""

    rotation: np.ndarray
    shift: np.ndarray
    centre: np.ndarray
    points: int  # the points that weighed in the last step
    misfit_before_m: float  # the median absolute misfit before and after
    misfit_after_m: float

    def apply(self, xyz: np.ndarray) -> np.ndarray:
        return (xyz - self.centre) @ self.rotation.T + self.centre + self.shift

    @property
    def angle_deg(self) -> float:
        return float(np.degrees(Rotation.from_matrix(self.rotation).magnitude()))


def _misfits(grid: HeightGrid, moved: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z, slopes = grid.sample(moved[:, :2])
    return z - moved[:, 2], slopes


def _tukey(residuals: np.ndarray) -> np.ndarray:
    spread = 1.4826 * np.median(np.abs(residuals - np.median(residuals))) + 1e-6
    u = residuals / (TUKEY_C * spread)
    return np.where(np.abs(u) < 1, (1 - u ** 2) ** 2, 0.0)


def _step(grid: HeightGrid, points: np.ndarray, rotation: np.ndarray, shift: np.ndarray,
          centre: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """One Gauss-Newton step of (rotation, shift) on the grid; the step's weighted point count."""
    turned = (points - centre) @ rotation.T
    misfit, slopes = _misfits(grid, turned + centre + shift)
    usable = np.isfinite(misfit) & np.isfinite(slopes).all(axis=1)
    if usable.sum() < MIN_POINTS:
        return rotation, shift, int(usable.sum())
    r, q = misfit[usable], turned[usable]
    a = np.column_stack([slopes[usable], -np.ones(len(r))])  # d misfit / d moved point
    jacobian = np.hstack([np.cross(q, a), a])  # columns: small rotation (3), shift (3)
    weights = _tukey(r - np.median(r))
    normal = jacobian.T @ (jacobian * weights[:, None])
    # A flat reference cannot tell heading or horizontal shift: damped, they stay where they are.
    normal += np.eye(6) * 1e-6 * np.trace(normal)
    delta = np.linalg.solve(normal, -(jacobian.T @ (weights * r)))
    rotation = Rotation.from_rotvec(delta[:3]).as_matrix() @ rotation
    return rotation, shift + delta[3:], int((weights > 0).sum())


def register(points: np.ndarray, reference: HeightGrid) -> Registration | None:
    """The rigid motion that lays the points (N, 3) on the reference; None where too few points lie over it."""
    centre = np.median(points, axis=0)
    misfit, _ = _misfits(reference, points)
    over = np.isfinite(misfit)
    if over.sum() < MIN_POINTS:
        return None
    rotation, shift = np.eye(3), np.array([0.0, 0.0, float(np.median(misfit[over]))])
    counted = int(over.sum())
    for width in SMOOTHING_M:
        grid = reference.smoothed(width)
        for _ in range(STEPS_PER_WIDTH):
            rotation, shift, counted = _step(grid, points, rotation, shift, centre)
    after, _ = _misfits(reference, (points - centre) @ rotation.T + centre + shift)
    return Registration(rotation, shift, centre, counted, float(np.median(np.abs(misfit[over]))),
                        float(np.nanmedian(np.abs(after))))
