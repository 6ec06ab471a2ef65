"""Rectification of a calibrated image pair, so that matching points lie on the same row.

The rectifying rotation is built with its x axis along the baseline from the reference camera to its partner,
so the partner always sits to the right and disparities are positive whatever the flight direction. (OpenCV's
stereoRectify chooses between horizontal and vertical layouts and baseline signs by itself, which would need
flips and transposes before semi-global matching.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .camera import Pinhole
from .views import View

# Rectified canvases grow when a pair is rotated against the image axes; past this many times the reference
# image's area, the rectified focal length is reduced so matching time stays bounded.
MAX_AREA_RATIO = 3.0


class UnmatchablePair(ValueError):
    """A pair whose geometry cannot give a depth map; the message says what was measured."""


@dataclass(frozen=True)
class RectifiedPair:
    rotation: np.ndarray  # world -> rectified frame
    focal: float
    cx_ref: float
    cx_other: float
    cy: float
    width: int
    height: int
    baseline: float
    h_ref: np.ndarray  # reference pinhole pixel -> rectified pixel
    h_other: np.ndarray

    def disparity(self, ref_center: np.ndarray, world: np.ndarray) -> np.ndarray:
        """Disparity (px) that world points (N, 3) should have in this pair."""
        depth = (world - ref_center) @ self.rotation[2]
        return self.focal * self.baseline / depth + self.cx_ref - self.cx_other

    def partner_moved(self, columns: int) -> RectifiedPair:
        """The pair with the partner's canvas moved `columns` px to the right, which lowers every disparity by as
        much and leaves the depths they give unchanged."""
        move = np.array([[1.0, 0.0, columns], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        return replace(self, cx_other=self.cx_other + columns, h_other=move @ self.h_other)

    def ref_depth(self, disparity: np.ndarray, ref_pinhole: Pinhole, ref_rotation: np.ndarray) -> np.ndarray:
        """Depth along the reference camera's axis for a disparity map already resampled onto the reference
        pinhole grid (NaN where invalid)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            rect_depth = self.focal * self.baseline / (disparity - (self.cx_ref - self.cx_other))
        # The rectified depth of a reference pixel's ray is a linear function of the pixel (a rotation only).
        row = self.rotation[2] @ ref_rotation.T @ np.linalg.inv(ref_pinhole.K)
        u, v = np.meshgrid(np.arange(ref_pinhole.width), np.arange(ref_pinhole.height))
        ray_z = row[0] * u + row[1] * v + row[2]
        depth = (rect_depth / ray_z).astype(np.float32)
        depth[~(depth > 0)] = np.nan
        return depth


def _normalised_outline(rect_from_pixel: np.ndarray, pinhole: Pinhole) -> np.ndarray | None:
    """Rectified normalised coordinates (N, 2) of points along the image border, None if any lies behind."""
    w, h = pinhole.width - 1, pinhole.height - 1
    t = np.linspace(0.0, 1.0, 9)
    zero, one = np.zeros_like(t), np.ones_like(t)
    border = np.concatenate([np.c_[t * w, zero], np.c_[t * w, one * h], np.c_[zero, t * h], np.c_[one * w, t * h]])
    rays = np.c_[border, np.ones(len(border))] @ rect_from_pixel.T
    if np.any(rays[:, 2] <= 1e-6):
        return None
    return rays[:, :2] / rays[:, 2:]


def rectify_pair(ref: View, ref_pinhole: Pinhole, other: View, other_pinhole: Pinhole) -> RectifiedPair:
    """The rectification of (ref, other); UnmatchablePair when the geometry does not allow one (no baseline, a
    view looking along the baseline, no common rows)."""
    base = other.center - ref.center
    baseline = float(np.linalg.norm(base))
    if baseline < 1e-9:
        raise UnmatchablePair(f"no baseline ({baseline:.2g} m between the cameras)")
    x = base / baseline
    y = np.cross(ref.axis + other.axis, x)
    if np.linalg.norm(y) < 1e-6:
        raise UnmatchablePair("the cameras look along their baseline")
    y /= np.linalg.norm(y)
    rotation = np.stack([x, y, np.cross(x, y)])
    m_ref = rotation @ ref.rotation.T @ np.linalg.inv(ref_pinhole.K)
    m_other = rotation @ other.rotation.T @ np.linalg.inv(other_pinhole.K)
    out_ref, out_other = _normalised_outline(m_ref, ref_pinhole), _normalised_outline(m_other, other_pinhole)
    if out_ref is None or out_other is None:
        raise UnmatchablePair("an image reaches behind the rectified cameras (a view along the baseline)")
    y_min = max(out_ref[:, 1].min(), out_other[:, 1].min())
    y_max = min(out_ref[:, 1].max(), out_other[:, 1].max())
    if y_max <= y_min:
        raise UnmatchablePair("the rectified images share no row")
    span_ref = out_ref[:, 0].max() - out_ref[:, 0].min()
    span_other = out_other[:, 0].max() - out_other[:, 0].min()
    focal = (ref_pinhole.focal + other_pinhole.focal) / 2
    area = focal**2 * max(span_ref, span_other) * (y_max - y_min)
    focal *= min(1.0, np.sqrt(MAX_AREA_RATIO * ref_pinhole.width * ref_pinhole.height / area))
    cx_ref, cx_other, cy = -focal * out_ref[:, 0].min(), -focal * out_other[:, 0].min(), -focal * y_min
    k_ref = np.array([[focal, 0, cx_ref], [0, focal, cy], [0, 0, 1]])
    k_other = np.array([[focal, 0, cx_other], [0, focal, cy], [0, 0, 1]])
    return RectifiedPair(
        rotation=rotation, focal=focal, cx_ref=cx_ref, cx_other=cx_other, cy=cy,
        width=int(np.ceil(focal * max(span_ref, span_other))) + 1,
        height=int(np.ceil(focal * (y_max - y_min))) + 1,
        baseline=baseline, h_ref=k_ref @ m_ref, h_other=k_other @ m_other,
    )
