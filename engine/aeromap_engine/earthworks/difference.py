"""The difference of two elevation models of the same ground, a later survey's less an earlier one's: where the
ground was dug (cut: it went down) and filled (it went up), and by how much. The later model is resampled onto the
earlier one's grid (bilinear, in its CRS); cells either lacks are left out. Heights that moved by less than
`noise` metres count as unchanged, so that two surveys' noise does not add up to a volume."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import rasterio
from rasterio.enums import Resampling
from rasterio.warp import reproject

from ..atomic_files import atomic_path
from ..errors import InputError

MAX_CELLS = 400_000_000


@dataclass(frozen=True)
class Change:
    cut: float  # m3 the ground went down by
    fill: float  # m3 it went up by
    area: float  # m2 both models cover
    changed_area: float  # m2 where it moved by more than the noise

    @property
    def net(self) -> float:
        return self.fill - self.cut


def change_of(difference: np.ndarray, cell_area: float, noise: float = 0.0) -> Change:
    """The cut and fill of a grid of height differences (later - earlier; NaN where either model lacks one)."""
    known = difference[np.isfinite(difference)]
    moved = known[np.abs(known) > noise]
    return Change(cut=float(abs(moved[moved < 0].sum()) * cell_area), fill=float(moved[moved > 0].sum() * cell_area),
                  area=float(known.size * cell_area), changed_area=float(moved.size * cell_area))


def difference_grid(earlier: Path, later: Path) -> tuple[np.ndarray, dict]:
    """later - earlier on the earlier model's grid, and that grid's profile."""
    with rasterio.open(earlier) as base:
        if base.width * base.height > MAX_CELLS:
            raise InputError(f"The elevation model has {base.width * base.height} cells, more than {MAX_CELLS}")
        before = base.read(1, masked=True).astype(np.float32).filled(np.nan)
        profile = base.profile
        after = np.full(before.shape, np.nan, np.float32)
        with rasterio.open(later) as other:
            reproject(rasterio.band(other, 1), after, src_nodata=other.nodata, dst_transform=base.transform,
                      dst_crs=base.crs, dst_nodata=np.nan, resampling=Resampling.bilinear)
    difference = after - before
    if not np.isfinite(difference).any():
        raise InputError("The two elevation models do not overlap")
    return difference, profile


def measure_difference(earlier: Path, later: Path, noise: float) -> tuple[np.ndarray, dict, Change]:
    """The difference grid, its profile and its figures."""
    difference, profile = difference_grid(earlier, later)
    return difference, profile, change_of(difference, abs(profile["transform"].a * profile["transform"].e), noise)


def write_difference(output: Path, difference: np.ndarray, profile: dict, change: Change) -> None:
    """The difference raster (float32, NaN where either model lacks a height) with its figures in its metadata."""
    profile = {**profile, "driver": "GTiff", "dtype": "float32", "count": 1, "nodata": float("nan"),
               "compress": "deflate", "tiled": True, "blockxsize": 256, "blockysize": 256}
    with atomic_path(output) as tmp, rasterio.open(tmp, "w", **profile) as out:
        out.write(difference, 1)
        out.set_band_description(1, "height change (m)")
        out.update_tags(**{key.upper(): f"{value:.3f}" for key, value in figures(change).items()})


def figures(change: Change) -> dict[str, float]:
    return {**{key: round(value, 3) for key, value in asdict(change).items()}, "net": round(change.net, 3)}
