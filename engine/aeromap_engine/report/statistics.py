"""A survey's figures in the sections and shapes of ODM's odm_report/stats.json, which WebODM and other clients
read: `processing_statistics` (dates, area, step times), `odm_processing_statistics` (total time, GSD),
`point_cloud_statistics` (pdal info's shape: per-axis count, extremes, mean), `reconstruction_statistics`,
`features_statistics`, `gps_errors`/`gcp_errors` (per-axis mean, spread and RMS, CE90/LE90) and
`dsm_statistics`/`dtm_statistics`. Pure functions of plain values and arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

# OpenSfM's text for dates (processing and capture), which WebODM shows as it is.
DATE_FORMAT = "%d/%m/%Y at %H:%M:%S"
UNKNOWN = "unknown"
AXES = ("x", "y", "z")
RESIDUAL_BINS = 30


def value_at_level(samples: np.ndarray, level: float = 0.9) -> float:
    """The smallest sample that at least `level` of the samples do not exceed (the nearest-rank percentile):
    CE90 of horizontal errors, LE90 of vertical ones. With fewer than 1 / (1 - level) samples it is the largest,
    as so few samples cannot show where the last tenth begins. NaN without samples."""
    values = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    if values.size == 0:
        return float("nan")
    rank = max(1, math.ceil(level * values.size - 1e-9))  # 1-based; the tolerance absorbs 0.9 * 30 = 27.000...04
    return float(values[rank - 1])


@dataclass(frozen=True)
class ErrorStats:
    """Errors of positions (model minus reference) per axis, in metres."""

    mean: np.ndarray  # (3,) x, y, z
    std: np.ndarray
    rms: np.ndarray
    average: float  # mean length of the 3D error
    ce90: float  # horizontal distance that 90 % of the errors stay within
    le90: float  # vertical distance that 90 % of the errors stay within
    count: int

    @staticmethod
    def of(deltas: np.ndarray) -> "ErrorStats | None":
        """The figures of (N, 3) errors; None without any."""
        deltas = np.asarray(deltas, dtype=np.float64).reshape(-1, 3)
        if not len(deltas):
            return None
        return ErrorStats(deltas.mean(axis=0), deltas.std(axis=0), np.sqrt(np.mean(deltas**2, axis=0)),
                          float(np.linalg.norm(deltas, axis=1).mean()),
                          value_at_level(np.hypot(deltas[:, 0], deltas[:, 1])), value_at_level(np.abs(deltas[:, 2])),
                          len(deltas))

    def to_odm(self) -> dict[str, Any]:
        def per_axis(values: np.ndarray) -> dict[str, float]:
            return {axis: float(v) for axis, v in zip(AXES, values)}

        return {"mean": per_axis(self.mean), "std": per_axis(self.std), "error": per_axis(self.rms),
                "average_error": self.average, "ce90": self.ce90, "le90": self.le90}


def duration_text(seconds: float) -> str:
    """A duration as ODM's total_time_human writes it, with two-digit minutes and seconds: 52s, 3m:05s,
    1h:02m:05s."""
    hours, rest = divmod(int(round(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h:{minutes:02d}m:{secs:02d}s"
    if minutes:
        return f"{minutes}m:{secs:02d}s"
    return f"{secs}s"


def date_text(moment: datetime) -> str:
    return moment.strftime(DATE_FORMAT)


def capture_dates(times_ms: Sequence[float | None]) -> tuple[str, str]:
    """The capture times (UTC) of the first and the last photograph, in OpenSfM's text; unknown without any."""
    known = [t for t in times_ms if t]
    if not known:
        return UNKNOWN, UNKNOWN
    first, last = (datetime.fromtimestamp(t / 1000.0, tz=timezone.utc) for t in (min(known), max(known)))
    return date_text(first), date_text(last)


def processing_statistics(made_at: datetime, capture_times_ms: Sequence[float | None], area_m2: float,
                          stage_seconds: dict[str, float]) -> dict[str, Any]:
    """OpenSfM's processing_statistics; its steps are the engine's stages here, with their sum as Total Time."""
    start, end = capture_dates(capture_times_ms)
    steps = dict(stage_seconds)
    steps["Total Time"] = round(sum(stage_seconds.values()), 3)
    return {"date": date_text(made_at), "start_date": start, "end_date": end, "area": area_m2,
            "steps_times": steps}


def odm_processing_statistics(total_seconds: float, gsd_cm: float | None) -> dict[str, Any]:
    return {"total_time": round(total_seconds, 3), "total_time_human": duration_text(total_seconds),
            "average_gsd": gsd_cm}


@dataclass(frozen=True)
class CloudMoments:
    """Count, extremes, mean and sum of squared deviations per axis of a cloud read in parts: parts merge with
    Chan's pairwise update, which stays exact where summing squares of CRS coordinates (millions of metres)
    would lose the spread of a few metres."""

    count: int
    low: np.ndarray  # (3,)
    high: np.ndarray
    mean: np.ndarray
    squares: np.ndarray  # sum of squared deviations from the mean

    @staticmethod
    def of(xyz: np.ndarray) -> "CloudMoments":
        values = np.asarray(xyz, dtype=np.float64).reshape(-1, 3)
        if not len(values):
            return EMPTY_CLOUD
        mean = values.mean(axis=0)
        return CloudMoments(len(values), values.min(axis=0), values.max(axis=0), mean,
                            ((values - mean) ** 2).sum(axis=0))

    def merge(self, other: "CloudMoments") -> "CloudMoments":
        if not other.count:
            return self
        if not self.count:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        return CloudMoments(count, np.minimum(self.low, other.low), np.maximum(self.high, other.high),
                            self.mean + delta * other.count / count,
                            self.squares + other.squares + delta**2 * self.count * other.count / count)


EMPTY_CLOUD = CloudMoments(0, np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3))


def point_cloud_statistics(cloud: CloudMoments, dense: bool) -> dict[str, Any]:
    """pdal info's statistics of a cloud (CRS coordinates): count, extremes, mean and spread per axis."""
    statistic = []
    for position, name in enumerate("XYZ"):
        entry: dict[str, Any] = {"name": name, "position": position, "count": cloud.count}
        if cloud.count:
            variance = float(cloud.squares[position] / cloud.count)
            entry.update({"minimum": float(cloud.low[position]), "maximum": float(cloud.high[position]),
                          "average": float(cloud.mean[position]), "stddev": math.sqrt(variance),
                          "variance": variance})
        statistic.append(entry)
    stats: dict[str, Any] = {"statistic": statistic}
    if cloud.count:
        (minx, miny, minz), (maxx, maxy, maxz) = cloud.low.tolist(), cloud.high.tolist()
        stats["bbox"] = {"native": {"bbox": {"minx": minx, "miny": miny, "minz": minz,
                                             "maxx": maxx, "maxy": maxy, "maxz": maxz}}}
    return {"dense": dense, "stats": stats}


def track_length_histogram(track_lengths: np.ndarray) -> dict[str, int]:
    """Number of points per track length (images that see a point), keys as text as JSON keeps them."""
    lengths, counts = np.unique(np.asarray(track_lengths, dtype=np.int64), return_counts=True)
    return {str(int(length)): int(count) for length, count in zip(lengths, counts)}


def reconstruction_statistics(reconstruction: dict[str, Any], track_lengths: np.ndarray,
                              residuals_px: np.ndarray) -> dict[str, Any]:
    """OpenSfM's reconstruction_statistics from the engine's reconstruction section and the model's tracks and
    per-observation reprojection errors (pixels)."""
    lengths = np.asarray(track_lengths, dtype=np.int64)
    beyond_two = lengths[lengths > 2]
    histogram, edges = (np.histogram(residuals_px, RESIDUAL_BINS) if len(residuals_px)
                        else (np.array([]), np.array([])))
    return {
        "components": 1,
        "has_gps": reconstruction.get("gps_residual_m") is not None,
        "has_gcp": reconstruction.get("gcp_residual_m") is not None,
        "initial_shots_count": reconstruction["images_total"],
        "reconstructed_shots_count": reconstruction["images_registered"],
        "reconstructed_points_count": reconstruction["points"],
        "observations_count": reconstruction["observations"],
        "average_track_length": reconstruction["mean_track_length"],
        "average_track_length_over_two": float(beyond_two.mean()) if len(beyond_two) else -1,
        "histogram_track_length": track_length_histogram(lengths),
        "reprojection_error_pixels": reconstruction["mean_reprojection_error_px"],
        "reprojection_histogram_pixels": [histogram.astype(float).tolist(), edges.astype(float).tolist()],
    }


def count_summary(values: Sequence[int]) -> dict[str, int]:
    """min, max, mean and median of per-image counts, as integers (-1 without images, as OpenSfM)."""
    if not len(values):
        return {"min": -1, "max": -1, "mean": -1, "median": -1}
    array = np.asarray(values, dtype=np.float64)
    return {"min": int(array.min()), "max": int(array.max()), "mean": int(array.mean()),
            "median": int(np.median(array))}


def features_statistics(detected: Sequence[int], reconstructed: Sequence[int]) -> dict[str, Any]:
    """Features found per image, and those that became part of a reconstructed point."""
    return {"detected_features": count_summary(detected), "reconstructed_features": count_summary(reconstructed)}


def raster_statistics(values: np.ndarray) -> dict[str, float] | None:
    """min, max, mean and stddev of the valid (finite) values of a raster; None when it has none."""
    valid = np.asarray(values, dtype=np.float64)
    valid = valid[np.isfinite(valid)]
    if not valid.size:
        return None
    return {"min": float(valid.min()), "max": float(valid.max()), "mean": float(valid.mean()),
            "stddev": float(valid.std())}
