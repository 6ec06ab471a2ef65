"""DJI's .srt telemetry: one subtitle per frame (newer drones) or per second (older ones), in the variants DJI has
shipped, read into records with their time span and what they say of the aircraft; and the position at any moment
of the video, interpolated between records.

Variants read (a record's fields in any order, HTML font tags ignored):
- Phantom 4 / Inspire (2016-2017): `GPS(lon,lat,alt) BAROMETER:h` (alt the GPS altitude; BAROMETER the height
  above take-off);
- Mavic Air / Spark: `F/2.8, SS 320, ISO 100, EV 0, GPS (lon, lat, n), D 24.5m, H 10.3m, ...` (n satellites; H the
  height above take-off);
- Mavic 2 / Phantom 4 Pro V2: `[latitude : x] [longtitude : y] [altitude: z]` (DJI's spelling; z above sea level);
- Mini / Air 2 / Mavic 3 / Matrice: `[latitude: x] [longitude: y] [rel_alt: r abs_alt: a]`, with
  `[gb_yaw: . gb_pitch: . gb_roll: .]` where the gimbal is recorded, and the capture time `2023-04-12 10:22:33.123`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from ..errors import InputError

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_TIME_RANGE = re.compile(r"(\d+):(\d\d):(\d\d)[,.](\d+)\s*-->\s*(\d+):(\d\d):(\d\d)[,.](\d+)")
_TAG = re.compile(r"<[^>]*>")
_FIELDS = {
    "latitude": re.compile(r"\blatitude\s*:\s*" + _NUMBER, re.I),
    "longitude": re.compile(r"\blongt?itude\s*:\s*" + _NUMBER, re.I),
    "abs_alt": re.compile(r"\b(?:abs_alt|altitude)\s*:\s*" + _NUMBER, re.I),
    "rel_alt": re.compile(r"\b(?:rel_alt\s*:|BAROMETER\s*:|H)\s*" + _NUMBER + r"\s*m?\b", re.I),
    "yaw": re.compile(r"\bgb_yaw\s*:?\s*" + _NUMBER, re.I),
    "pitch": re.compile(r"\bgb_pitch\s*:?\s*" + _NUMBER, re.I),
    "roll": re.compile(r"\bgb_roll\s*:?\s*" + _NUMBER, re.I),
    "focal": re.compile(r"\bfocal_len\s*:\s*" + _NUMBER, re.I),
    "fnum": re.compile(r"\bfnum\s*:\s*" + _NUMBER, re.I),
}
# GPS(lon, lat, third): the third is the altitude in the older format, the satellites' count beside "D ... H ...".
_GPS = re.compile(r"\bGPS\s*\(\s*" + _NUMBER + r"\s*,\s*" + _NUMBER + r"\s*,\s*" + _NUMBER + r"\s*\)")
_DISTANCE = re.compile(r"\bD\s+" + _NUMBER + r"m\b")
_DATE = re.compile(r"(\d{4})[-.](\d\d)[-.](\d\d)\s+(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")


@dataclass(frozen=True)
class Record:
    """One subtitle: its time span in the video (seconds) and the aircraft's state then."""

    start: float
    end: float
    latitude: float
    longitude: float
    abs_alt: float | None  # metres above sea level (GPS or barometric, as the drone wrote it)
    rel_alt: float | None  # metres above the take-off point
    yaw: float | None = None  # the gimbal's, degrees
    pitch: float | None = None
    roll: float | None = None
    time: datetime | None = None
    focal_35mm: float | None = None  # the 35 mm equivalent focal length, where the camera records it


def parse(text: str, name: str = "the .srt file") -> list[Record]:
    """The records of an .srt's text, in time order; InputError when it holds none, or ends inside a subtitle."""
    blocks = [block.strip() for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").strip()) if block.strip()]
    if not blocks:
        raise InputError(f"{name} is empty: no telemetry to place the video's frames")
    records = []
    for number, block in enumerate(blocks, 1):
        record = _record(block)
        if record is None:
            where = "ends inside its last subtitle (a truncated file?)" if number == len(blocks) else \
                f"has no time span and position in subtitle {number}"
            raise InputError(f"{name} {where}: no DJI telemetry read there")
        records.append(record)
    return sorted(records, key=lambda r: r.start)


def _record(block: str) -> Record | None:
    span = _TIME_RANGE.search(block)
    if span is None:
        return None
    text = _TAG.sub(" ", block[span.end():])
    values = {key: float(m.group(1)) for key, pattern in _FIELDS.items() if (m := pattern.search(text))}
    gps = _GPS.search(text)
    if gps is not None:
        values.setdefault("longitude", float(gps.group(1)))
        values.setdefault("latitude", float(gps.group(2)))
        if _DISTANCE.search(text) is None:  # the older format: the third value is the altitude
            values.setdefault("abs_alt", float(gps.group(3)))
    if "latitude" not in values or "longitude" not in values:
        return None
    g = [int(v) for v in span.groups()]
    start = g[0] * 3600 + g[1] * 60 + g[2] + g[3] / 10 ** len(span.group(4))
    end = g[4] * 3600 + g[5] * 60 + g[6] + g[7] / 10 ** len(span.group(8))
    return Record(start, end, values["latitude"], values["longitude"], values.get("abs_alt"), values.get("rel_alt"),
                  values.get("yaw"), values.get("pitch"), values.get("roll"), _date(text), _focal(values))


def _focal(values: dict[str, float]) -> float | None:
    """The 35 mm equivalent focal length: the Mavic 2 writes it in tenths of a millimetre, as it writes the f-number
    in hundredths (fnum 280 for f/2.8), the later drones in millimetres beside an f-number as it is."""
    focal = values.get("focal")
    if focal is None or focal <= 0:
        return None
    return focal / 10.0 if values.get("fnum", 0.0) >= 100.0 else focal


def _date(text: str) -> datetime | None:
    found = _DATE.search(text)
    if found is None:
        return None
    y, mo, d, h, mi, s = (int(v) for v in found.groups()[:6])
    fraction = found.group(7) or "0"
    return datetime(y, mo, d, h, mi, s) + timedelta(seconds=int(fraction) / 10 ** len(fraction))


def usable(records: list[Record]) -> list[Record]:
    """The records with a position: DJI writes 0, 0 before the GPS has a fix."""
    return [r for r in records if not (r.latitude == 0.0 and r.longitude == 0.0)]


@dataclass(frozen=True)
class State:
    """The aircraft at one moment, interpolated."""

    latitude: float
    longitude: float
    abs_alt: float | None
    rel_alt: float | None
    yaw: float | None
    pitch: float | None
    roll: float | None
    time: datetime | None
    focal_35mm: float | None


def state_at(records: list[Record], seconds: float) -> State:
    """The state at `seconds` into the video: linear between the records' starts (held at the ends); angles where
    every record has them, the yaw interpolated the short way round."""
    starts = np.array([r.start for r in records])

    def along(values: list[float | None]) -> float | None:
        if any(v is None for v in values):
            return None
        return float(np.interp(seconds, starts, np.asarray(values, dtype=np.float64)))

    yaw = along([r.yaw for r in records])
    if yaw is not None:
        turns = np.unwrap(np.radians([r.yaw for r in records]))  # type: ignore[arg-type]
        yaw = float((np.degrees(np.interp(seconds, starts, turns)) + 180.0) % 360.0 - 180.0)
    first = records[0]
    time = first.time + timedelta(seconds=seconds - first.start) if first.time is not None else None
    # A zoom steps from one focal length to the next: the record in force, not a blend.
    current = records[max(0, int(np.searchsorted(starts, seconds, side="right")) - 1)]
    return State(along([r.latitude for r in records]), along([r.longitude for r in records]),  # type: ignore[arg-type]
                 along([r.abs_alt for r in records]), along([r.rel_alt for r in records]), yaw,
                 along([r.pitch for r in records]), along([r.roll for r in records]), time, current.focal_35mm)
