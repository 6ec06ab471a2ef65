"""What a synthetic survey is asked to be, and where it lies on the Earth: the UTM zone of its centre, the local
frame's origin in it and the grid's convergence.

Geometry stays in the scene's local frame (camera.py, scene.py); the site adds the offset to the CRS, which is
one translation: the local frame's axes are the UTM grid's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

import numpy as np
import pyproj

from ..geo import crs_name, utm_crs
from .camera import FlightSpec, LensSpec
from .scene import SceneSpec
from .render import SUN_AZIMUTH_DEG, SUN_ELEVATION_DEG


@dataclass(frozen=True)
class SurveySpec:
    scene: SceneSpec = field(default_factory=SceneSpec)
    lens: LensSpec = field(default_factory=LensSpec)
    flight: FlightSpec = field(default_factory=FlightSpec)
    latitude: float = 45.81  # the scene's centre: the Po plain north of Milan, near UTM 32N's central meridian
    longitude: float = 9.02
    base_altitude_m: float = 230.0  # the scene's local z = 0
    gps_sigma_horizontal_m: float = 1.5  # a consumer receiver's fix
    gps_sigma_vertical_m: float = 3.3
    # DJI's RelativeAltitude comes from a barometer: precise from one photograph to the next, but drifting with
    # the weather and the board's temperature over a flight (the sign of the drift is drawn from the seed).
    barometer_sigma_m: float = 0.1
    barometer_drift_m_per_min: float = 0.05
    dji_xmp: bool = True
    make: str = "DJI"
    model: str = "Synthetic"
    jpeg_quality: int = 92
    noise_dn: float = 1.5
    exposure_jitter: float = 0.02  # auto-exposure's variation between photographs
    start: datetime = datetime(2025, 6, 14, 10, 30, 0)
    truth_ortho_level: int = 0  # the true orthophoto's cells are the albedo's times 2 ** level
    seed: int = 1
    readout_ms: float = 0.0  # a rolling shutter's readout time; 0 is a global shutter
    # Photographs rendered at 1/n of their size and enlarged: the pixel count a benchmark needs for a fraction of
    # the rendering time, with no detail finer than n pixels (feature extraction at "high" halves them anyway).
    render_downscale: int = 1
    sun_azimuth_deg: float = SUN_AZIMUTH_DEG
    sun_elevation_deg: float = SUN_ELEVATION_DEG
    hotspot_amplitude: float = 0.0  # log brightening looking straight away from the sun (0: none)
    hotspot_width_deg: float = 5.0
    view_slope: float = 0.0  # log brightening per unit of a ray's horizontal component away from the sun (0: none)


@dataclass(frozen=True)
class Site:
    """Where the scene lies: its CRS and the CRS coordinates of the local frame's origin."""

    crs: pyproj.CRS
    origin: np.ndarray  # (easting, northing, altitude) of local (0, 0, 0)
    grid_north_azimuth_deg: float  # grid north measured clockwise from true north

    def to_crs(self, local: np.ndarray) -> np.ndarray:
        return np.asarray(local, dtype=np.float64) + self.origin

    def to_lonlat(self, easting: np.ndarray, northing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return transformer(crs_name(self.crs), "EPSG:4326").transform(easting, northing)


def locate(spec: SurveySpec) -> Site:
    """The UTM zone of the requested centre, the local origin at whole metres so that truth files read cleanly,
    and the grid's convergence, which turns headings on the grid into the true-north yaw a drone records."""
    crs = utm_crs(spec.longitude, spec.latitude)
    to_utm = pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    easting, northing = to_utm.transform(spec.longitude, spec.latitude)
    half = spec.scene.size_m / 2.0
    origin = np.array([round(easting - half), round(northing - half), spec.base_altitude_m])
    to_wgs84 = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    (lon0, lon1), (lat0, lat1) = to_wgs84.transform([origin[0] + half] * 2, [origin[1] + half, origin[1] + half + 1])
    azimuth, _, _ = pyproj.Geod(ellps="WGS84").inv(lon0, lat0, lon1, lat1)
    return Site(crs, origin, float(azimuth))


@lru_cache(maxsize=16)
def transformer(source: str, target: str) -> pyproj.Transformer:
    return pyproj.Transformer.from_crs(source, target, always_xy=True)
