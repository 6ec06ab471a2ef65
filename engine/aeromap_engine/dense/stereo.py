"""Semi-global matching of a rectified pair (OpenCV StereoSGBM) into a depth map of the reference image."""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from .camera import Pinhole
from .rectify import RectifiedPair, UnmatchablePair


@dataclass(frozen=True)
class SgbmSettings:
    block_size: int = 5
    uniqueness: int = 10  # percent by which the best cost must beat the second best
    speckle_window: int = 100  # px: smaller blobs of consistent disparity are noise
    speckle_range: int = 2  # px of disparity variation inside one blob
    lr_max_diff: int = 1  # px: left-right consistency check
    range_margin: float = 0.25  # fraction of the sparse points' disparity span searched beyond it on each side
    min_margin: float = 8.0  # px
    depth_factor: float = 1.5  # depths kept: within this factor of the range of the view's own sparse points


@dataclass(frozen=True)
class DisparitySearch:
    minimum: int
    count: int  # a multiple of 16, as StereoSGBM requires


def disparity_search(sparse_disparities: np.ndarray, settings: SgbmSettings) -> DisparitySearch:
    """The range to search, from the disparities of sparse points both views see (robust to a few outliers)."""
    finite = sparse_disparities[np.isfinite(sparse_disparities)]
    if len(finite) < 5:
        raise UnmatchablePair(f"only {len(finite)} sparse points seen by both give a disparity")
    low, high = np.percentile(finite, [1, 99])
    margin = max(settings.min_margin, settings.range_margin * (high - low))
    minimum = math.floor(low - margin)
    return DisparitySearch(minimum, 16 * math.ceil((high + margin - minimum) / 16))


def depth_range(sparse_depths: np.ndarray, settings: SgbmSettings) -> tuple[float, float]:
    """The depths a view's dense points may have: the span of its own sparse points (robust to a few outliers)
    widened by depth_factor each way. The disparity search alone does not bound them: a view that sees far (an
    oblique, a panorama's view of the horizon) searches down to a disparity of zero, where noise on haze or sky
    gives depths kilometres away."""
    finite = sparse_depths[np.isfinite(sparse_depths) & (sparse_depths > 0)]
    if len(finite) < 5:
        return 0.0, math.inf
    low, high = np.percentile(finite, [1, 99])
    return float(low / settings.depth_factor), float(high * settings.depth_factor)


def matching_plan(pair: RectifiedPair, sparse_disparities: np.ndarray, settings: SgbmSettings
                  ) -> tuple[RectifiedPair, DisparitySearch]:
    """The pair with its partner's canvas moved so that the disparity search starts at 0, and that search.

    OpenCV's semi-global matching computes only the reference columns from max(minimum + count, 0) to
    width + min(minimum, 0), where the whole search stays on the partner's canvas. A search that starts far from
    0 (a long baseline, or rectified outlines that start apart) loses that many columns, and one that leaves no
    column makes OpenCV allocate a negative size (an 'insufficient memory' error). Starting at 0 keeps
    width - count columns, the most any start gives; a pair left with fewer than a matching block's width is
    unmatchable."""
    search = disparity_search(sparse_disparities, settings)
    columns = pair.width - search.count
    if columns < settings.block_size:
        raise UnmatchablePair(f"its disparity search spans {search.count} px, which leaves {max(columns, 0)} of its "
                              f"{pair.width} rectified columns to match")
    return pair.partner_moved(search.minimum), DisparitySearch(0, search.count)


def rectified_images(pair: RectifiedPair, ref: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rectified grey images of the pair and their validity masks (where each image has content)."""
    size = (pair.width, pair.height)
    out = []
    for image, h in ((ref, pair.h_ref), (other, pair.h_other)):
        out.append(cv2.warpPerspective(image, h, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE))
        mask = np.full(image.shape[:2], 255, np.uint8)
        out.append(cv2.warpPerspective(mask, h, size, flags=cv2.INTER_NEAREST) > 0)
    return tuple(out)


def match(ref_rect: np.ndarray, ref_mask: np.ndarray, other_rect: np.ndarray, other_mask: np.ndarray,
          search: DisparitySearch, settings: SgbmSettings) -> np.ndarray:
    """Disparity of every rectified reference pixel (float32, NaN where no reliable match was found)."""
    block = settings.block_size
    sgbm = cv2.StereoSGBM.create(
        minDisparity=search.minimum, numDisparities=search.count, blockSize=block,
        P1=8 * block * block, P2=32 * block * block, disp12MaxDiff=settings.lr_max_diff,
        uniquenessRatio=settings.uniqueness, speckleWindowSize=settings.speckle_window,
        speckleRange=settings.speckle_range, mode=cv2.STEREO_SGBM_MODE_SGBM_3WAY)
    raw = sgbm.compute(ref_rect, other_rect)
    disparity = raw.astype(np.float32) / 16.0
    valid = (raw >= search.minimum * 16) & ref_mask
    # The match must land on real content of the partner, not on the fill around its rectified outline.
    rows, cols = np.nonzero(valid)
    target = np.rint(cols - disparity[rows, cols]).astype(np.int64)
    inside = (target >= 0) & (target < other_mask.shape[1])
    keep = np.zeros(len(rows), dtype=bool)
    keep[inside] = other_mask[rows[inside], target[inside]]
    valid[rows[~keep], cols[~keep]] = False
    disparity[~valid] = np.nan
    return disparity


def ref_depth(pair: RectifiedPair, disparity: np.ndarray, ref_pinhole: Pinhole, ref_rotation: np.ndarray
              ) -> np.ndarray:
    """Depth map on the reference pinhole grid from a rectified disparity map (nearest sampling: interpolating
    across depth edges would invent surfaces)."""
    resampled = cv2.warpPerspective(disparity, pair.h_ref, (ref_pinhole.width, ref_pinhole.height),
                                    flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP,
                                    borderMode=cv2.BORDER_CONSTANT, borderValue=float("nan"))
    return pair.ref_depth(resampled, ref_pinhole, ref_rotation)
