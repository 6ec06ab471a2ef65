"""A photograph as the engine knows it after reading its metadata; stored as ODM's images.json."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

# ODM's focal length / sensor width when nothing in the metadata tells it (a typical drone camera).
DEFAULT_FOCAL_RATIO = 0.85


@dataclass
class Photo:
    """Field names and meanings follow ODM's images.json, so that files move between the two."""

    filename: str
    width: int
    height: int
    camera_make: str = ""
    camera_model: str = ""
    orientation: int = 1  # EXIF orientation; the engine works in the stored pixel layout
    latitude: float | None = None
    longitude: float | None = None
    altitude: float | None = None  # metres, as the GPS gives it
    gps_xy_stddev: float | None = None  # metres, when the metadata give the fix's accuracy
    gps_z_stddev: float | None = None
    utc_time: float | None = None  # capture time, milliseconds since 1970-01-01 UTC
    yaw: float | None = None  # degrees clockwise from north
    pitch: float | None = None  # degrees; 0 looks straight down, 90 looks at the horizon
    roll: float | None = None
    relative_altitude: float | None = None  # metres above the take-off point (DJI)
    focal_length: float | None = None  # mm
    focal_length_35mm: float | None = None  # mm, 35 mm film equivalent
    sensor_width: float | None = None  # mm
    focal_ratio: float = DEFAULT_FOCAL_RATIO  # focal length / sensor width
    camera_projection: str | None = None  # projection the metadata declare, if any
    exposure_time: float | None = None
    fnumber: float | None = None
    iso_speed: int | None = None
    band_name: str = "RGB"
    band_index: int = 0

    @property
    def has_gps(self) -> bool:
        return self.latitude is not None and self.longitude is not None and self.altitude is not None

    @property
    def focal_known(self) -> bool:
        """Whether focal_ratio comes from the metadata rather than the default guess."""
        return bool(self.focal_length_35mm or (self.focal_length and self.sensor_width))

    @property
    def footprint_ratio(self) -> float:
        """Half the image diagonal over the focal length: the radius of a nadir view's footprint on the ground
        per metre of height."""
        return 0.5 * math.hypot(self.width, self.height) / (self.focal_ratio * max(self.width, self.height))

    def to_odm(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_odm(cls, data: dict[str, Any]) -> "Photo":
        """Read one entry of images.json (Aeromap's or ODM's; keys this engine does not use are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def gps_centre(photos: list[Photo]) -> tuple[float, float] | None:
    """Median longitude and latitude of the photos with a position (robust to a few wild fixes)."""
    located = [p for p in photos if p.has_gps]
    if not located:
        return None
    lon = sorted(p.longitude for p in located)[len(located) // 2]
    lat = sorted(p.latitude for p in located)[len(located) // 2]
    return lon, lat


def capture_order(photos: list[Photo]) -> list[int]:
    """Image indices by capture time (file name where times are missing or equal)."""
    return sorted(range(len(photos)), key=lambda i: (photos[i].utc_time or 0.0, photos[i].filename))
