"""Panoramas in the images folder cut into their faces (faces.py), written beside them as JPEG photographs that
keep the panorama's EXIF (position, time, camera) with the faces' own optics, and XMP declaring a pinhole lens."""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
from PIL import ExifTags, Image

from ..errors import InputError
from ..io.exif import xmp_packet, xmp_tags
from ..io.exif_write import dji_xmp
from .faces import FACES, FOCAL_35MM, face_maps, face_size

SPHERICAL_LENSES = ("spherical", "equirectangular")  # camera-lens values (ODM's) for 360° panoramas
ASPECT_SLACK_PX = 2  # a panorama's width is twice its height, to the rounding of the camera's encoder
SEAM_COLUMNS = 2  # columns copied across the seam at ±180° so that sampling there wraps round
JPEG_QUALITY = 95
_DROPPED_OPTICS = (ExifTags.Base.FocalLength, ExifTags.Base.FocalPlaneXResolution,
                   ExifTags.Base.FocalPlaneYResolution, ExifTags.Base.FocalPlaneResolutionUnit)


def is_panorama(path: Path, lens: str) -> bool:
    """Whether the image is an equirectangular panorama to cut into faces: twice as wide as high, and either
    camera-lens says the survey's images are panoramas or, with camera-lens auto, the image's XMP says it is one
    (GPano, as 360° cameras write it). Another lens named takes the images as what it names, as in ODM."""
    if lens not in SPHERICAL_LENSES + ("auto",):
        return False
    try:
        with Image.open(path) as image:
            width, height = image.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return False  # the dataset stage names unreadable files
    if abs(width - 2 * height) > ASPECT_SLACK_PX:
        return False
    if lens in SPHERICAL_LENSES:
        return True
    declared = xmp_tags(xmp_packet(path.read_bytes())).get("GPano:ProjectionType", "")
    return declared.lower() == "equirectangular"


def face_name(panorama: str, face: str) -> str:
    return f"{Path(panorama).stem}_{face}.jpg"


def split(path: Path, out_dir: Path) -> list[str]:
    """Write the panorama's faces into out_dir; returns their file names. InputError when it cannot be read."""
    pixels = cv2.imread(str(path), cv2.IMREAD_COLOR)  # EXIF orientation applied, 8 bits
    if pixels is None:
        raise InputError(f"{path.name} looks like a 360° panorama but its pixels cannot be read")
    height, width = pixels.shape[:2]
    wrapped = np.concatenate([pixels[:, -SEAM_COLUMNS:], pixels, pixels[:, :SEAM_COLUMNS]], axis=1)
    size = face_size(width)
    exif, xmp = _face_metadata(path, size)
    names = []
    for face in FACES:
        columns, rows = face_maps(face, size, width, height)
        view = cv2.remap(wrapped, columns + SEAM_COLUMNS, rows, cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
        buffer = io.BytesIO()
        Image.fromarray(cv2.cvtColor(view, cv2.COLOR_BGR2RGB)).save(buffer, "JPEG", quality=JPEG_QUALITY, exif=exif,
                                                                   xmp=xmp)
        names.append(face_name(path.name, face))
        (out_dir / names[-1]).write_bytes(buffer.getvalue())
    return names


def _face_metadata(path: Path, size: int) -> tuple[Image.Exif, bytes]:
    """The panorama's EXIF with a face's optics (a 90° pinhole, stated as its 35 mm focal length), and XMP that
    declares the pinhole and keeps the barometric height a drone records."""
    with Image.open(path) as panorama:
        exif = panorama.getexif()
    exif[ExifTags.Base.Orientation] = 1
    details = exif.get_ifd(ExifTags.IFD.Exif)
    for tag in _DROPPED_OPTICS:
        details.pop(tag, None)
    details[ExifTags.Base.FocalLengthIn35mmFilm] = int(FOCAL_35MM)
    details[ExifTags.Base.ExifImageWidth] = size
    details[ExifTags.Base.ExifImageHeight] = size
    kept = {key: value for key, value in xmp_tags(xmp_packet(path.read_bytes())).items()
            if key == "drone-dji:RelativeAltitude"}
    return exif, dji_xmp({"Camera:ModelType": "perspective", **kept}).encode("utf-8")
