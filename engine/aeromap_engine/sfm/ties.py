"""How strongly the photographs are tied together before mapping: their features, the verified matches of the
pairs that overlap, and the overlap that the GPS and the flying height promise. The figures go into the report,
and name the cause when images cannot be placed: too little texture (few features, few matches per pair) or too
little overlap, with what to try.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from ..photo import Photo

# Below this overlap of neighbouring photographs a point is seen by too few of them to tie them (photogrammetry
# asks 70 % or more forward; two views of a point need at least half).
LOW_OVERLAP = 0.6
# Fewer verified matches per overlapping pair than this in the median: the texture is what limits (a pair with
# fewer cannot start a model, COLMAP's init_min_num_inliers).
FEW_MATCHES = 100


@dataclass(frozen=True)
class Ties:
    features_median: int  # features per image
    features_fewest: int
    poorest_image: str  # the image with the fewest
    candidate_pairs: int  # pairs matched
    overlapping_pairs: int  # pairs with enough verified matches
    matches_median: float  # verified matches per overlapping pair, 0 when none overlaps
    overlap: float | None  # median overlap of each photograph with its nearest neighbour, None when unknown

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        overlap = "" if self.overlap is None else \
            f"; by their GPS and flying height, photographs overlap their nearest neighbour by about " \
            f"{self.overlap:.0%}"
        verified = f"none of {self.candidate_pairs} candidate pairs verified" if not self.overlapping_pairs else \
            f"{self.overlapping_pairs} of {self.candidate_pairs} candidate pairs verified, with a median of " \
            f"{self.matches_median:.0f} matches"
        return (f"features per image: median {self.features_median}, fewest {self.features_fewest} "
                f"({self.poorest_image}); {verified}{overlap}")

    def advice(self, feature_quality: str, min_num_features: int) -> str:
        """The measured cause, and what to try."""
        finer = [] if feature_quality == "ultra" else ["feature-quality ultra"]
        overlap = "fly again with more overlap (70 % or more between neighbouring photographs)"
        if self.overlap is not None and self.overlap < LOW_OVERLAP:
            return f"too little overlap: {overlap}"
        if self.features_median < min_num_features / 2:
            return (f"too little texture: the photographs show {self.features_median} features where "
                    f"{min_num_features} were wanted (blur, haze, water or uniform ground): "
                    f"{' or '.join(finer + ['photograph again, sharper or with more overlap'])}")
        if self.matches_median < FEW_MATCHES:
            texture = finer + [f"min-num-features {2 * min_num_features}"]
            return f"too little texture to match: try {' and '.join(texture)}, or {overlap}"
        return f"try {' and '.join(finer + [f'min-num-features {2 * min_num_features}'])}, or {overlap}"


def measure_ties(features: dict[str, int], inliers: list[int], candidate_pairs: int, min_inliers: int,
                 overlap: float | None) -> Ties:
    """The figures from each image's feature count and each matched pair's verified matches."""
    poorest = min(features, key=lambda name: (features[name], name))
    overlapping = [n for n in inliers if n >= min_inliers]
    return Ties(int(np.median(list(features.values()))), features[poorest], poorest, candidate_pairs,
                len(overlapping), float(np.median(overlapping)) if overlapping else 0.0, overlap)


def neighbour_overlap(xy: np.ndarray, short_sides: np.ndarray) -> float | None:
    """The median share of its footprint's short side by which each photograph overlaps its nearest neighbour.

    xy: (N, 2) horizontal camera positions in metres, NaN where unknown.
    short_sides: (N,) the short side of each photograph's footprint on the ground in metres, NaN where unknown.
    The short side, since the flight direction is not known here: the estimate errs low."""
    known = np.isfinite(xy).all(axis=1) & np.isfinite(short_sides) & (short_sides > 0)
    if known.sum() < 2:
        return None
    distances, _ = cKDTree(xy[known]).query(xy[known], k=2)
    return float(np.median(np.clip(1.0 - distances[:, 1] / short_sides[known], 0.0, 1.0)))


def footprint_short_sides(photos: list[Photo]) -> np.ndarray:
    """(N,) the short side in metres of each photograph's footprint on flat ground at its height above the
    take-off point, NaN where the photograph does not give that height."""
    return np.array([p.relative_altitude * min(p.width, p.height) / (p.focal_ratio * max(p.width, p.height))
                     if p.relative_altitude else np.nan for p in photos], dtype=float)
