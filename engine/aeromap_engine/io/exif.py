"""Photograph metadata: EXIF and XMP tags to a Photo. Pure functions over tag dictionaries and bytes; reading
files is the caller's business.

Sources, in order of preference where several give the same fact:
- position: EXIF GPS, else DJI's XMP (drone-dji:Latitude/Longitude/AbsoluteAltitude);
- position accuracy: DJI RTK standard deviations, Camera:GPSXYAccuracy/GPSZAccuracy (MicaSense, Sentera),
  EXIF GPSHPositioningError;
- camera angles: DJI gimbal angles (ODM's convention: pitch 0 looks straight down), else Camera:Yaw/Pitch/Roll;
- focal ratio (focal length / sensor width) as ODM computes it: 35 mm equivalent / 36, else focal length over
  the sensor width from the focal plane resolution, else a default.
"""

from __future__ import annotations

import io
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from PIL import ExifTags, Image

from ..photo import DEFAULT_FOCAL_RATIO, Photo

_TIFF_MAGIC = (b"II*\x00", b"MM\x00*")
_XMP_START, _XMP_END = b"<x:xmpmeta", b"</x:xmpmeta>"
_XMP_ATTRIBUTE = re.compile(r"([\w.-]+:[\w.-]+)\s*=\s*\"([^\"]*)\"")
_XMP_ELEMENT = re.compile(r"<([\w.-]+:[\w.-]+)>([^<]*)</\1>")
_XMP_LIST = re.compile(r"<([\w.-]+:[\w.-]+)>\s*<rdf:(Seq|Bag|Alt)>(.*?)</rdf:\2>\s*</\1>", re.DOTALL)
_XMP_ITEM = re.compile(r"<rdf:li[^>]*>([^<]*)</rdf:li>")

# Millimetres per unit of EXIF FocalPlaneResolutionUnit (2 inch, 3 cm, 4 mm, 5 micrometre).
MM_PER_UNIT = {2: 25.4, 3: 10.0, 4: 1.0, 5: 0.001}
RTK_FLOAT_FLAG = 34  # DJI's RtkFlag of a float RTK solution; 50 is a fixed one


def exif_tags(data: bytes) -> dict[str, Any]:
    """An image file's EXIF tags (main, Exif and GPS directories) by their EXIF names. A TIFF's are read straight
    from its header, so that layouts Pillow cannot decode (16-bit colour, more than four bands) give theirs."""
    if data[:4] in _TIFF_MAGIC:
        exif = Image.Exif()
        exif.load(data)
    else:
        with Image.open(io.BytesIO(data)) as image:
            exif = image.getexif()
    tags = {ExifTags.TAGS.get(k, str(k)): v for k, v in exif.items()}
    tags.update({ExifTags.TAGS.get(k, str(k)): v for k, v in exif.get_ifd(ExifTags.IFD.Exif).items()})
    tags.update({ExifTags.GPSTAGS.get(k, str(k)): v for k, v in exif.get_ifd(ExifTags.IFD.GPSInfo).items()})
    return tags


def xmp_packet(data: bytes) -> str | None:
    """The XMP packet embedded in a file's bytes, if any."""
    start = data.find(_XMP_START)
    end = data.find(_XMP_END, start + 1)
    if start < 0 or end < 0:
        return None
    return data[start:end + len(_XMP_END)].decode("utf-8", errors="replace")


def xmp_tags(packet: str | None) -> dict[str, str]:
    """Simple XMP properties by qualified name ("drone-dji:RelativeAltitude"), written either as attributes or
    as elements, and lists (rdf:Seq, as MicaSense writes its vignetting and radiometric calibration) as their
    items joined by ", ". Read with patterns rather than an XML parser because vendors' packets are often
    malformed."""
    if not packet:
        return {}
    tags = {name: value.strip() for name, value in _XMP_ATTRIBUTE.findall(packet)}
    tags.update({name: value.strip() for name, value in _XMP_ELEMENT.findall(packet)})
    tags.update({name: ", ".join(item.strip() for item in _XMP_ITEM.findall(items))
                 for name, _, items in _XMP_LIST.findall(packet)})
    return tags


def photo_from_metadata(filename: str, width: int, height: int, exif: dict[str, Any],
                        xmp: dict[str, str]) -> Photo:
    photo = Photo(filename=filename, width=width, height=height,
                  camera_make=_text(exif.get("Make")) or xmp.get("tiff:Make", ""),
                  camera_model=_text(exif.get("Model")) or xmp.get("tiff:Model", ""),
                  orientation=_int(exif.get("Orientation")) or 1,
                  utc_time=_capture_time(exif),
                  exposure_time=_float(exif.get("ExposureTime")),
                  fnumber=_float(exif.get("FNumber")),
                  iso_speed=_int(exif.get("ISOSpeedRatings")))
    _read_position(photo, exif, xmp)
    # Barometric, so present even without a GPS fix; it gives a local model its scale.
    photo.relative_altitude = _float(xmp.get("drone-dji:RelativeAltitude"))
    _read_accuracy(photo, exif, xmp)
    _read_angles(photo, xmp)
    _read_optics(photo, exif, xmp)
    return photo


def captured_stretch(width: int, height: int, exif: dict[str, Any]) -> float | None:
    """How many times taller for their width the stored pixels are than the frame the metadata say was captured
    (ExifImageWidth x ExifImageHeight), either way round (a copy turned upright keeps its shape); None where the
    metadata do not give it. 1 for a copy scaled keeping its shape."""
    captured_width = _positive(_float(exif.get("ExifImageWidth")))
    captured_height = _positive(_float(exif.get("ExifImageHeight")))
    if not captured_width or not captured_height:
        return None
    stored, captured = height / width, captured_height / captured_width
    return min((stored / captured, stored * captured), key=lambda ratio: abs(math.log(ratio)))


def _read_position(photo: Photo, exif: dict[str, Any], xmp: dict[str, str]) -> None:
    latitude = _degrees(exif.get("GPSLatitude"), exif.get("GPSLatitudeRef"))
    longitude = _degrees(exif.get("GPSLongitude"), exif.get("GPSLongitudeRef"))
    altitude = _float(exif.get("GPSAltitude"))
    if altitude is not None and _int(exif.get("GPSAltitudeRef")) == 1:
        altitude = -altitude  # below sea level
    if latitude is None or longitude is None:
        latitude, longitude = _float(xmp.get("drone-dji:Latitude")), _float(xmp.get("drone-dji:Longitude"))
    if altitude is None:
        altitude = _float(xmp.get("drone-dji:AbsoluteAltitude"))
    if latitude is None or longitude is None or (latitude == 0 and longitude == 0):
        return  # (0, 0) is what receivers without a fix write
    if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
        return
    photo.latitude, photo.longitude = latitude, longitude
    # Without a height the position cannot constrain a 3D camera; ODM treats such photos as 0 m.
    photo.altitude = altitude if altitude is not None else 0.0


def _read_accuracy(photo: Photo, exif: dict[str, Any], xmp: dict[str, str]) -> None:
    # Without an RTK solution (RtkFlag 0: none, 16: single point) DJI's RTK deviations describe no fix.
    rtk_flag = _float(xmp.get("drone-dji:RtkFlag"))
    if "drone-dji:RtkStdLon" in xmp and (rtk_flag is None or rtk_flag >= RTK_FLOAT_FLAG):
        stds = [_float(xmp.get("drone-dji:RtkStdLon")), _float(xmp.get("drone-dji:RtkStdLat"))]
        photo.gps_xy_stddev = max((s for s in stds if s is not None), default=None)
        photo.gps_z_stddev = _float(xmp.get("drone-dji:RtkStdHgt"))
    else:
        photo.gps_xy_stddev = _float(xmp.get("Camera:GPSXYAccuracy")) or _float(exif.get("GPSHPositioningError"))
        photo.gps_z_stddev = _float(xmp.get("Camera:GPSZAccuracy"))
    # A zero deviation is a missing value written as a number; it must not become an infinitely strong prior.
    if not photo.gps_xy_stddev or photo.gps_xy_stddev <= 0:
        photo.gps_xy_stddev = None
    if not photo.gps_z_stddev or photo.gps_z_stddev <= 0:
        photo.gps_z_stddev = None


def _read_angles(photo: Photo, xmp: dict[str, str]) -> None:
    gimbal_pitch = _float(xmp.get("drone-dji:GimbalPitchDegree"))
    if gimbal_pitch is not None:
        # DJI: -90 looks straight down; ODM's convention: 0 does.
        photo.pitch = 90.0 + gimbal_pitch
        photo.roll = _float(xmp.get("drone-dji:GimbalRollDegree"))
        photo.yaw = _float(xmp.get("drone-dji:GimbalYawDegree"))
        if photo.yaw is None:
            photo.yaw = _float(xmp.get("drone-dji:FlightYawDegree"))
    elif "Camera:Pitch" in xmp:
        photo.yaw = _float(xmp.get("Camera:Yaw"))
        photo.pitch = _float(xmp.get("Camera:Pitch"))
        photo.roll = _float(xmp.get("Camera:Roll"))


def _read_optics(photo: Photo, exif: dict[str, Any], xmp: dict[str, str]) -> None:
    photo.focal_length = _positive(_float(exif.get("FocalLength")))
    photo.focal_length_35mm = _positive(_float(exif.get("FocalLengthIn35mmFilm")))
    mm_per_unit = MM_PER_UNIT.get(_int(exif.get("FocalPlaneResolutionUnit")) or 0)
    pixels_per_unit = _positive(_float(exif.get("FocalPlaneXResolution")))
    if mm_per_unit and pixels_per_unit:
        # The resolution is the sensor's at capture: a copy scaled down since keeps it, and the capture width.
        captured_width = _positive(_float(exif.get("ExifImageWidth"))) or photo.width
        photo.sensor_width = captured_width / pixels_per_unit * mm_per_unit
    if photo.focal_length_35mm:
        photo.focal_ratio = photo.focal_length_35mm / 36.0  # 35 mm film frames are 36 mm wide
    elif photo.focal_length and photo.sensor_width:
        photo.focal_ratio = photo.focal_length / photo.sensor_width
    else:
        photo.focal_ratio = DEFAULT_FOCAL_RATIO
    model_type = xmp.get("Camera:ModelType", "").strip().lower()
    if model_type:
        # Parrot and others write "fisheye" for what OpenCV calls its fisheye model, as ODM reads it.
        photo.camera_projection = "fisheye_opencv" if model_type == "fisheye" else model_type


def _capture_time(exif: dict[str, Any]) -> float | None:
    text = _text(exif.get("DateTimeOriginal")) or _text(exif.get("DateTime"))
    try:
        moment = datetime.strptime(text, "%Y:%m:%d %H:%M:%S")
    except ValueError:
        return None
    subsec = re.sub(r"\D", "", _text(exif.get("SubsecTimeOriginal")))
    if subsec:
        moment += timedelta(seconds=float("0." + subsec))
    offset = re.fullmatch(r"([+-])(\d\d):(\d\d)", _text(exif.get("OffsetTimeOriginal")))
    if offset:
        sign = 1 if offset.group(1) == "+" else -1
        moment -= sign * timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3)))
    # Without an offset the clock is taken as UTC, as ODM does.
    return moment.replace(tzinfo=timezone.utc).timestamp() * 1000.0


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return str(value).replace("\x00", "").strip()


def _float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = _text(value)
    try:
        number = float(value)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _int(value: Any) -> int | None:
    if isinstance(value, bytes):
        return value[0] if len(value) == 1 else _int(_text(value))
    number = _float(value)
    return int(number) if number is not None else None


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


def _degrees(dms: Any, ref: Any) -> float | None:
    """Decimal degrees from EXIF's (degrees, minutes, seconds) and its N/S/E/W reference."""
    if not isinstance(dms, (tuple, list)) or len(dms) != 3:
        return None
    parts = [_float(v) for v in dms]
    if any(p is None for p in parts):
        return None
    value = parts[0] + parts[1] / 60.0 + parts[2] / 3600.0
    return -value if _text(ref).upper() in ("S", "W") else value
