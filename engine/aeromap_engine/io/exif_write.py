"""What a drone writes into its photographs, for photographs made here (synthetic surveys, video frames): the
GPS directory of EXIF and DJI's XMP packet."""

from __future__ import annotations

from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational


def dms(value: float) -> tuple[int, int, int]:
    """Degrees, minutes and millionths of a second of arc."""
    micro = int(round(abs(value) * 3600e6))
    degrees, rest = divmod(micro, 3600 * 10**6)
    minutes, seconds = divmod(rest, 60 * 10**6)
    return degrees, minutes, seconds


def _rationals(value: float) -> tuple[IFDRational, IFDRational, IFDRational]:
    degrees, minutes, micro = dms(value)
    return IFDRational(degrees, 1), IFDRational(minutes, 1), IFDRational(micro, 10**6)


def write_gps(exif: Image.Exif, lon: float, lat: float, alt: float | None) -> None:
    """The GPS directory of `exif`: the position to millionths of a second of arc, the altitude to millimetres."""
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSVersionID] = b"\x02\x03\x00\x00"
    gps[ExifTags.GPS.GPSLatitudeRef] = "N" if lat >= 0 else "S"
    gps[ExifTags.GPS.GPSLatitude] = _rationals(lat)
    gps[ExifTags.GPS.GPSLongitudeRef] = "E" if lon >= 0 else "W"
    gps[ExifTags.GPS.GPSLongitude] = _rationals(lon)
    if alt is not None:
        gps[ExifTags.GPS.GPSAltitudeRef] = b"\x00" if alt >= 0 else b"\x01"
        gps[ExifTags.GPS.GPSAltitude] = IFDRational(int(round(abs(alt) * 1000)), 1000)


def dji_xmp(attributes: dict[str, str]) -> str:
    """An XMP packet laid out as DJI's, holding `attributes` (drone-dji:, tiff:, dc:, Camera: properties, or GPano:
    for a 360° camera's panorama)."""
    lines = "\n".join(f'   {key}="{value}"' for key, value in attributes.items())
    return ('<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
            '<x:xmpmeta xmlns:x="adobe:ns:meta/">\n'
            ' <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
            '  <rdf:Description rdf:about="DJI Meta Data"\n'
            '   xmlns:tiff="http://ns.adobe.com/tiff/1.0/"\n'
            '   xmlns:dc="http://purl.org/dc/elements/1.1/"\n'
            '   xmlns:drone-dji="http://www.dji.com/drone-dji/1.0/"\n'
            '   xmlns:Camera="http://pix4d.com/camera/1.0/"\n'
            '   xmlns:GPano="http://ns.google.com/photos/1.0/panorama/"\n'
            f"{lines}>\n"
            "  </rdf:Description>\n"
            " </rdf:RDF>\n"
            "</x:xmpmeta>\n"
            '<?xpacket end="w"?>')
