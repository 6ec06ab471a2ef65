"""ODM's gcp_list.txt: ground control points and where they appear in the photographs.

    EPSG:32630 | +proj=utm ... | WGS84 UTM 30N      (first line: the CRS of the coordinates)
    x y z pixel_x pixel_y image_name [gcp_name] [check] [...]

Pixel coordinates follow ODM (the first pixel's centre is 0, 0). Observations of one point share its name; without
a name, the coordinates identify the point. Lines starting with # are comments. A point whose lines say `check` (or
`checkpoint`) after its name is a checkpoint: kept out of the georeferencing and measured against it; ODM ignores
the column and takes the point as control.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyproj

from ..errors import InputError
from ..geo import parse_crs


@dataclass(frozen=True)
class GcpObservation:
    image: str
    pixel: tuple[float, float]


CHECK_WORDS = ("check", "checkpoint")


@dataclass
class ControlPoint:
    name: str
    xyz: np.ndarray  # in the file's CRS
    observations: list[GcpObservation]
    check: bool = False  # a checkpoint: measured against the model, not used to place it


@dataclass(frozen=True)
class GcpFile:
    crs: pyproj.CRS
    points: list[ControlPoint]


def parse_gcp_list(text: str) -> GcpFile:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("gcp_list.txt is empty: its first line must name a coordinate system")
    crs = parse_crs(lines[0])
    points: dict[str, ControlPoint] = {}
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split()
        if len(parts) < 6:
            raise ValueError(f"gcp_list.txt line {number}: expected 'x y z pixel_x pixel_y image [name]', "
                             f"got {line!r}")
        try:
            x, y, z, px, py = (float(v) for v in parts[:5])
        except ValueError:
            raise ValueError(f"gcp_list.txt line {number}: coordinates must be numbers, got {line!r}") from None
        name = parts[6] if len(parts) > 6 else f"{x:.3f} {y:.3f} {z:.3f}"
        check = len(parts) > 7 and parts[7].lower() in CHECK_WORDS
        point = points.setdefault(name, ControlPoint(name, np.array([x, y, z]), [], check))
        if not np.allclose(point.xyz, [x, y, z]):
            raise ValueError(f"gcp_list.txt line {number}: point {name} has two different coordinates")
        if point.check != check:
            raise ValueError(f"gcp_list.txt line {number}: point {name} is a checkpoint on some lines, not on others")
        point.observations.append(GcpObservation(parts[5], (px, py)))
    return GcpFile(crs, list(points.values()))


def read_gcp_file(path: Path) -> GcpFile | None:
    """The project's gcp_list.txt; None where it has none."""
    if not path.exists():
        return None
    try:
        return parse_gcp_list(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"Cannot read gcp_list.txt: {exc}") from None
