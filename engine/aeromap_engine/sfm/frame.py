"""The world frame a survey is georeferenced in (the control points' CRS, or the UTM zone of the GPS, with
ODM's offset), and the photographs' positions in it: GPS fixes, barometric heights where they beat the
GPS's, and the priors with their accuracy."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..geo import WGS84, crs_name, is_metric_projected, transform, utm_crs
from ..io.gcp import ControlPoint, GcpFile
from ..log import log
from ..photo import Photo, gps_centre
from .database import PositionPrior

FLIGHT_GAP_S = 120.0  # a pause this long between photographs is a landing
PRECISE_HEIGHT_STDDEV = 0.5  # m; a GPS height stated this accurate (RTK) beats the barometer (barometric_heights)


@dataclass(frozen=True)
class WorldFrame:
    """The projected CRS and offset of the world frame, and what is meant to tie the model to it."""

    crs: str | None
    offset: tuple[float, float]
    source: str  # "gcp", "gps" or "none"
    control_points: list[tuple[ControlPoint, np.ndarray]]  # with their surveyed positions in the world frame
    heights_surveyed: bool = True  # False when every control point has the same height: no vertical datum
    checkpoints: list[tuple[ControlPoint, np.ndarray]] = field(default_factory=list)  # likewise, kept out of it


def world_frame(photos: list[Photo], gcps: GcpFile | None) -> WorldFrame:
    """The frame of the control points when given, else of the photographs' GPS, else a local one; checkpoints
    in it where there is one."""
    control = [p for p in gcps.points if not p.check] if gcps is not None else []
    checks = [p for p in gcps.points if p.check] if gcps is not None else []
    if control:
        crs = gcps.crs if is_metric_projected(gcps.crs) else utm_crs(*_lonlat_centre(gcps))
        offset = _offset(transform(gcps.crs, crs, np.array([p.xyz for p in control])))
        log.info("Georeferencing with %d ground control points in %s%s", len(control), crs_name(crs),
                 f"; {len(checks)} checkpoints kept out of it" if checks else "")
        return WorldFrame(crs_name(crs), offset, "gcp", _in_frame(control, gcps.crs, crs, offset),
                          heights_surveyed(control), _in_frame(checks, gcps.crs, crs, offset))
    centre = gps_centre(photos)
    if centre is None:
        if checks:
            log.warning("%d checkpoints cannot be measured: nothing georeferences the model", len(checks))
        return WorldFrame(None, (0.0, 0.0), "none", [])
    crs = crs_name(utm_crs(*centre))
    located = np.array([[p.longitude, p.latitude, p.altitude] for p in photos if p.has_gps])
    offset = _offset(transform(WGS84, crs, located))
    return WorldFrame(crs, offset, "gps", [], checkpoints=_in_frame(checks, gcps.crs, crs, offset) if checks else [])


def _in_frame(points: list[ControlPoint], source: object, crs: object, offset: tuple[float, float]
              ) -> list[tuple[ControlPoint, np.ndarray]]:
    """The points with their surveyed positions in the world frame (its CRS, less its offset)."""
    if not points:
        return []
    surveyed = transform(source, crs, np.array([p.xyz for p in points]))
    return [(p, xyz - [offset[0], offset[1], 0.0]) for p, xyz in zip(points, surveyed)]


def heights_surveyed(points: list[ControlPoint]) -> bool:
    """Whether the control points' heights can be surveyed ones: heights all the same (all 0.0 where a file
    gives none) say nothing of the vertical datum, so the model is levelled by them but its heights are
    relative to their plane and their vertical residuals are the ground's relief, not an error."""
    heights = [point.xyz[2] for point in points]
    if len(heights) < 2 or np.ptp(heights) > 0:
        return True
    log.warning("All %d ground control points have the height %g m: not surveyed heights, so the vertical datum is "
                "unknown; the model is levelled on the points' plane and its heights are relative to it",
                len(heights), heights[0])
    return False


def _lonlat_centre(gcps: GcpFile) -> tuple[float, float]:
    lonlat = transform(gcps.crs, WGS84, np.array([p.xyz for p in gcps.points]))
    return float(np.median(lonlat[:, 0])), float(np.median(lonlat[:, 1]))


def _offset(projected: np.ndarray) -> tuple[float, float]:
    """Whole metres near the middle of the data, as ODM chooses its offset; the median, so that a few
    photographs of another place cannot put it between the two (where single-precision coordinates of either
    would lose their centimetres)."""
    return float(math.floor(np.median(projected[:, 0]))), float(math.floor(np.median(projected[:, 1])))


def photo_positions(photos: list[Photo], frame: WorldFrame) -> np.ndarray:
    """(N, 3) camera positions in the world frame from the GPS; NaN where a photograph has none."""
    positions = np.full((len(photos), 3), np.nan)
    if frame.crs is None:
        return positions
    located = [i for i, p in enumerate(photos) if p.has_gps]
    if located:
        lla = np.array([[photos[i].longitude, photos[i].latitude, photos[i].altitude] for i in located])
        positions[located] = transform(WGS84, frame.crs, lla) - [frame.offset[0], frame.offset[1], 0.0]
    unprojectable = [photos[i].filename for i in located if not np.isfinite(positions[i]).all()]
    if unprojectable:  # half a world away from the survey's UTM zone
        log.warning("GPS positions too far from the survey to project, not used: %s", ", ".join(unprojectable))
        positions[~np.isfinite(positions).all(axis=1)] = np.nan
    return positions


def barometric_heights(photos: list[Photo], positions: np.ndarray) -> np.ndarray:
    """The positions with their heights from the barometer where every located photograph gives its height
    above the take-off point: a barometer holds relative heights to decimetres where a GPS errs by metres, and
    relative heights are what levels a model (3 m of GPS noise tilts 40 photographs over 150 m by most of a
    degree). Each flight (photographs less than FLIGHT_GAP_S apart) is put at the median of its GPS altitudes,
    since every take-off has its own zero. A height whose stated accuracy is better than PRECISE_HEIGHT_STDDEV
    (an RTK fix) is kept, and levels its flight: the barometer drifts by decimetres to a metre over a flight,
    and RTK surveys are flown to do without control points."""
    located = [i for i, p in enumerate(photos) if np.isfinite(positions[i]).all()]
    if not located or any(photos[i].relative_altitude is None for i in located):
        return positions
    coarse = {i for i in located if not precise_height(photos[i])}
    if not coarse:
        log.info("Camera heights from the GPS: their stated vertical accuracy (RTK) beats the barometer's")
        return positions
    out = positions.copy()
    for flight in _flights([photos[i] for i in located], located):
        levelling = [i for i in flight if i not in coarse] or flight
        zero = np.median([positions[i][2] - photos[i].relative_altitude for i in levelling])
        for i in coarse.intersection(flight):
            out[i][2] = zero + photos[i].relative_altitude
    spread = float(np.sqrt(np.mean((out[located, 2] - positions[located, 2]) ** 2)))
    log.info("Camera heights of %d of %d photographs from the barometer (relative altitude), levelled on the GPS "
             "altitudes of each flight; the GPS heights differ from them by %.2f m RMS", len(coarse), len(located),
             spread)
    return out


def precise_height(photo: Photo) -> bool:
    """Whether the photograph states a GPS height better than a barometer holds over a flight."""
    return photo.gps_z_stddev is not None and photo.gps_z_stddev < PRECISE_HEIGHT_STDDEV


def flight_names(photos: list[Photo]) -> list[list[str]]:
    """The photographs' names by flight, each flight in capture order."""
    return [[photos[i].filename for i in flight] for flight in _flights(photos, list(range(len(photos))))]


def _flights(photos: list[Photo], indices: list[int]) -> list[list[int]]:
    """Indices grouped by flight: a pause of FLIGHT_GAP_S between capture times starts a new one (a battery
    change, a new take-off). Without capture times all are one flight."""
    timed = sorted((p.utc_time or 0.0, i) for p, i in zip(photos, indices))
    flights: list[list[int]] = [[]]
    for (time, index), previous in zip(timed, [None] + timed[:-1]):
        if previous is not None and time - previous[0] > FLIGHT_GAP_S * 1000.0:
            flights.append([])
        flights[-1].append(index)
    return flights


def position_priors(photos: list[Photo], positions: np.ndarray, gps_accuracy: float,
                    accuracy_given: bool) -> dict[str, PositionPrior]:
    """GPS positions with their accuracy: gps-accuracy when the user sets it, else the metadata's, else the
    option's default (as ODM does)."""
    priors = {}
    for photo, position in zip(photos, positions):
        if not np.isfinite(position).all():
            continue
        horizontal = gps_accuracy if accuracy_given else (photo.gps_xy_stddev or gps_accuracy)
        vertical = gps_accuracy if accuracy_given else (photo.gps_z_stddev or horizontal)
        priors[photo.filename] = PositionPrior(position, horizontal, vertical)
    return priors
