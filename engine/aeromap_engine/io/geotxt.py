"""ODM's geo.txt: camera positions that replace the photographs' own GPS tags.

    EPSG:4326                      (first line: the CRS of the coordinates)
    image_name x y [z] [yaw pitch roll] [horizontal_accuracy vertical_accuracy]

Lines starting with # are comments. In a geographic CRS, x is the longitude and y the latitude.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyproj

from ..geo import parse_crs


@dataclass(frozen=True)
class GeoEntry:
    image: str
    x: float
    y: float
    z: float | None
    yaw: float | None = None
    pitch: float | None = None
    roll: float | None = None
    horizontal_accuracy: float | None = None
    vertical_accuracy: float | None = None


@dataclass(frozen=True)
class GeoFile:
    crs: pyproj.CRS
    entries: dict[str, GeoEntry]


def parse_geo_txt(text: str) -> GeoFile:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("geo.txt is empty: its first line must name a coordinate system")
    crs = parse_crs(lines[0])
    entries = {}
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split()
        if len(parts) < 3:
            raise ValueError(f"geo.txt line {number}: expected 'image x y [z] ...', got {line!r}")
        try:
            values = [float(v) for v in parts[1:9]]
        except ValueError:
            raise ValueError(f"geo.txt line {number}: coordinates must be numbers, got {line!r}") from None
        values += [None] * (8 - len(values))
        angles = values[3:6] if None not in values[3:6] else [None, None, None]
        entries[parts[0]] = GeoEntry(parts[0], values[0], values[1], values[2], *angles, values[6], values[7])
    return GeoFile(crs, entries)
