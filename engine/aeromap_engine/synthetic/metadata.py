"""Each photograph's record and what it says of itself, as a drone writes it: the true pose and position beside
the GPS fix with the receiver's noise and the barometer's height, written as EXIF tags and DJI's XMP into the
JPEG."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational

from ..geo import crs_name
from ..io.exif_write import dji_xmp as dji_xmp_packet
from ..io.exif_write import dms, write_gps
from .camera import Lens, Pose, Shot
from .site import Site, SurveySpec, transformer


@dataclass(frozen=True)
class Photograph:
    name: str
    pose: Pose  # local frame
    position: np.ndarray  # true camera centre in the CRS
    gps: tuple[float, float, float]  # longitude, latitude, altitude as written (noise included)
    gps_position: np.ndarray  # the written fix in the CRS
    relative_altitude: float  # as written: above the take-off point, with the barometer's noise and drift
    time: datetime
    line: int


@dataclass(frozen=True)
class Barometer:
    takeoff_z: float  # local frame
    drift_m_per_s: float
    sigma_m: float

    def reading(self, shot: Shot, rng: np.random.Generator) -> float:
        error = self.drift_m_per_s * shot.seconds + rng.normal(0.0, self.sigma_m)
        return round(float(shot.pose.centre[2] - self.takeoff_z + error), 2)


def photograph_record(spec: SurveySpec, site: Site, shot: Shot, name: str, barometer: Barometer,
              rng: np.random.Generator) -> Photograph:
    position = site.to_crs(shot.pose.centre)
    noise = rng.normal(size=3) * [spec.gps_sigma_horizontal_m, spec.gps_sigma_horizontal_m,
                                  spec.gps_sigma_vertical_m]
    lon, lat, alt = _as_written(site, position + noise)
    gps_position = np.array([*transformer("EPSG:4326", crs_name(site.crs)).transform(lon, lat), alt])
    moment = spec.start + timedelta(seconds=shot.seconds)
    return Photograph(name, shot.pose, position, (lon, lat, alt), gps_position, barometer.reading(shot, rng),
                      moment, shot.line)


def _as_written(site: Site, position: np.ndarray) -> tuple[float, float, float]:
    """Longitude, latitude and altitude rounded as EXIF stores them (millionths of a second of arc, millimetres),
    so that the truth file states exactly what the photograph says."""
    lon, lat = site.to_lonlat(position[0], position[1])
    return _round_dms(float(lon)), _round_dms(float(lat)), round(float(position[2]), 3)


def _round_dms(value: float) -> float:
    degrees, minutes, micro = dms(value)
    return math.copysign(degrees + minutes / 60.0 + micro / 3600e6, value)


def exif_for(spec: SurveySpec, lens: Lens, photo: Photograph) -> Image.Exif:
    """The tags a drone's camera writes: make and model, capture time, optics and the GPS fix."""
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = spec.make
    exif[ExifTags.Base.Model] = spec.model
    exif[ExifTags.Base.Orientation] = 1
    exif[ExifTags.Base.Software] = "aeromap-synthetic"
    stamp = photo.time.strftime("%Y:%m:%d %H:%M:%S")
    exif[ExifTags.Base.DateTime] = stamp
    details = exif.get_ifd(ExifTags.IFD.Exif)
    details[ExifTags.Base.DateTimeOriginal] = stamp
    details[ExifTags.Base.DateTimeDigitized] = stamp
    details[ExifTags.Base.SubsecTimeOriginal] = f"{photo.time.microsecond // 10000:02d}"
    details[ExifTags.Base.ExposureTime] = IFDRational(1, 1000)
    details[ExifTags.Base.FNumber] = IFDRational(56, 10)
    details[ExifTags.Base.ISOSpeedRatings] = 100
    details[ExifTags.Base.FocalLength] = IFDRational(int(round(spec.lens.focal_mm * 100)), 100)
    details[ExifTags.Base.FocalLengthIn35mmFilm] = spec.lens.focal_35mm
    details[ExifTags.Base.ExifImageWidth] = lens.width
    details[ExifTags.Base.ExifImageHeight] = lens.height
    # Pixels per centimetre on the sensor, as DJI states it (unit 3).
    details[ExifTags.Base.FocalPlaneXResolution] = IFDRational(int(round(lens.width / spec.lens.sensor_width_mm
                                                                          * 10 * 1000)), 1000)
    details[ExifTags.Base.FocalPlaneYResolution] = details[ExifTags.Base.FocalPlaneXResolution]
    details[ExifTags.Base.FocalPlaneResolutionUnit] = 3
    write_gps(exif, *photo.gps)
    return exif


def tiff_tags(exif: Image.Exif, xmp: str) -> dict[int, object]:
    """EXIF (its Exif and GPS directories nested) and XMP as the tags of a TIFF, as Pillow writes them."""
    tags: dict[int, object] = dict(exif.items())
    tags[ExifTags.IFD.Exif] = dict(exif.get_ifd(ExifTags.IFD.Exif))
    tags[ExifTags.IFD.GPSInfo] = dict(exif.get_ifd(ExifTags.IFD.GPSInfo))
    tags[700] = xmp.encode("utf-8")  # XMLPacket
    return tags


def dji_xmp(spec: SurveySpec, site: Site, photo: Photograph, extra: dict[str, str] | None = None) -> str:
    """DJI's XMP packet: gimbal and aircraft angles (degrees; gimbal pitch -90 looks straight down; yaw clockwise
    from true north) and the heights, signed with two decimals as DJI writes them; `extra` properties after them
    (a multispectral camera's band and radiometry)."""
    pose = photo.pose
    lon, lat, alt = photo.gps
    gimbal_yaw = _wrap(pose.yaw_deg + site.grid_north_azimuth_deg)
    flight_yaw = _wrap(pose.flight_yaw_deg + site.grid_north_azimuth_deg)
    attributes = {
        "tiff:Make": spec.make, "tiff:Model": spec.model, "dc:format": "image/jpeg",
        "drone-dji:AbsoluteAltitude": f"{alt:+.3f}", "drone-dji:RelativeAltitude": f"{photo.relative_altitude:+.2f}",
        "drone-dji:GpsLatitude": f"{lat:.9f}", "drone-dji:GpsLongitude": f"{lon:.9f}",
        "drone-dji:GimbalRollDegree": f"{pose.roll_deg:+.2f}",
        "drone-dji:GimbalYawDegree": f"{gimbal_yaw:+.2f}",
        "drone-dji:GimbalPitchDegree": f"{pose.pitch_deg - 90.0:+.2f}",
        "drone-dji:FlightRollDegree": "+0.00", "drone-dji:FlightYawDegree": f"{flight_yaw:+.2f}",
        "drone-dji:FlightPitchDegree": "+0.00", **(extra or {}),
    }
    return dji_xmp_packet(attributes)


def _wrap(degrees: float) -> float:
    return (degrees + 180.0) % 360.0 - 180.0


def write_jpeg(path: Path, pixels: np.ndarray, spec: SurveySpec, lens: Lens, photo: Photograph, site: Site) -> None:
    extra = {"xmp": dji_xmp(spec, site, photo).encode("utf-8")} if spec.dji_xmp else {}
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=spec.jpeg_quality, exif=exif_for(spec, lens, photo),
                                 **extra)
    path.write_bytes(buffer.getvalue())
