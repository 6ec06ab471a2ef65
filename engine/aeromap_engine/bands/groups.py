"""Which photographs are bands of one capture. Multispectral cameras write a file per band: the band is named in
XMP (`Camera:BandName`, as DJI, MicaSense and Parrot write it) or by the file name's suffix (Mavic 3M `_MS_G`,
`_MS_R`, `_MS_RE`, `_MS_NIR`; Sequoia `_GRE`, `_RED`, `_REG`, `_NIR`; MicaSense `_1` to `_6`), and the capture by
an XMP capture id, else by the name without its band suffix, else (files named by a counter, the band in XMP
alone) by the instant the bands were taken together, as ODM does. Some rigs fly an RGB camera with the bands (the
Sequoia's `_RGB.JPG`, BandName `RGB`): its photograph is the capture's companion, not a band. Pure: names and tags
in, groups out."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import PurePath

from ..errors import InputError

# Canonical band names, in wavelength order (the orthophoto's band order), as ODM describes bands.
BAND_ORDER = ("Blue", "Green", "Red", "RedEdge", "NIR", "LWIR")
_ALIASES = {"blue": "Blue", "b": "Blue", "green": "Green", "gre": "Green", "g": "Green", "red": "Red", "r": "Red",
            "rededge": "RedEdge", "red edge": "RedEdge", "red_edge": "RedEdge", "reg": "RedEdge", "re": "RedEdge",
            "nir": "NIR", "near infrared": "NIR", "near-infrared": "NIR", "lwir": "LWIR", "thermal": "LWIR"}
# File-name suffixes of the cameras' per-band files, and MicaSense's numbered bands (RedEdge-M/MX, Altum).
_SUFFIX = re.compile(r"^(?P<capture>.+?)_(?:MS_)?(?P<band>G|R|RE|NIR|GRE|RED|REG)$", re.IGNORECASE)
_MICASENSE = re.compile(r"^(?P<capture>IMG_\d+)_(?P<band>[1-6])$", re.IGNORECASE)
_MICASENSE_BANDS = {"1": "Blue", "2": "Green", "3": "Red", "4": "NIR", "5": "RedEdge", "6": "LWIR"}
_CAPTURE_TAGS = ("Camera:CaptureUUID", "drone-dji:CaptureUUID", "MicaSense:CaptureId", "Camera:CaptureId",
                 "Camera:ImageUniqueID")  # the last, Sentera 6X
AUTO = "auto"
# A band missing from at most this share of the captures (a file lost or unreadable) is kept and those captures
# left out; one missing from more is left out of all, as the orthophoto needs every band everywhere.
MAX_MISSING = 0.1
RGB = "RGB"  # the band name of a colour photograph flown with the bands
_RGB_NAME = re.compile(r"^(?P<capture>.+?)_RGB$", re.IGNORECASE)


def canonical_band(name: str) -> str | None:
    """The canonical name of a band as cameras write it ("NIR", "Red edge", "GRE"), None for others."""
    return _ALIASES.get(name.strip().lower())


def band_of(filename: str, xmp: dict[str, str]) -> tuple[str, str] | None:
    """(band, capture) of a photograph that is one band of a multispectral capture or its RGB companion (band
    RGB), None for others (an ordinary photograph says no band name and has no band suffix)."""
    capture = next((xmp[tag] for tag in _CAPTURE_TAGS if xmp.get(tag)), None)
    stated = xmp.get("Camera:BandName", "").strip()
    named = RGB if stated.upper() == RGB else canonical_band(stated)
    if stated and named is None:
        return None  # a band of no index's (MicaSense's panchromatic): its file number must not name another
    by_name = _named_by_file(filename)
    if named is None and by_name is None:
        return None
    band = named or by_name[0]
    return band, capture or (by_name[1] if by_name else PurePath(filename).stem)


SAME_INSTANT_MS = 200.0  # the band files of one capture are stamped within this of each other


def by_instant(tagged: dict[str, tuple[str, str] | None],
               times: dict[str, float | None]) -> dict[str, tuple[str, str] | None]:
    """`tagged` (file -> (band, capture) or None, as band_of gives them) with the files that nothing else grouped
    (their capture is their own name) grouped by capture time (ms): files stamped within SAME_INSTANT_MS of the
    one before are one capture."""
    alone = sorted((times[name], name) for name, found in tagged.items()
                   if found is not None and found[1] == PurePath(name).stem and times.get(name) is not None)
    regrouped = dict(tagged)
    key, last = "", -math.inf
    for time, name in alone:
        if time - last > SAME_INSTANT_MS:
            key = f"captured at {time:.0f} ms"
        last = time
        regrouped[name] = (tagged[name][0], key)
    return regrouped


def _named_by_file(filename: str) -> tuple[str, str] | None:
    """(band, capture) as the file's name gives them, None where it names no band."""
    stem = PurePath(filename).stem
    if suffix := _SUFFIX.match(stem):
        return canonical_band(suffix["band"]), suffix["capture"]
    if numbered := _MICASENSE.match(stem):
        return _MICASENSE_BANDS[numbered["band"]], numbered["capture"]
    if rgb := _RGB_NAME.match(stem):
        return RGB, rgb["capture"]
    return None


@dataclass(frozen=True)
class BandSurvey:
    """The captures of a multispectral survey: the band the geometry is solved on and, per capture (named by its
    primary band's file), the file of every band."""

    primary: str
    bands: tuple[str, ...]  # in BAND_ORDER
    captures: dict[str, dict[str, str]]  # primary file -> band -> file

    def to_json(self) -> dict:
        return {"primary": self.primary, "bands": list(self.bands), "captures": self.captures}

    @staticmethod
    def from_json(data: dict) -> "BandSurvey":
        return BandSurvey(data["primary"], tuple(data["bands"]), data["captures"])


def choose_primary(bands: list[str], asked: str) -> str:
    """The band the geometry is solved on: the one asked (primary-band), else the first of green, red, NIR (the
    sharpest texture for matching on most cameras' bands), else the first band."""
    if asked != AUTO:
        chosen = canonical_band(asked)
        if chosen not in bands:
            raise InputError(f"primary-band {asked}: the photographs hold the bands {', '.join(bands)}")
        return chosen
    return next((band for band in ("Green", "Red", "NIR") if band in bands), bands[0])


def group_bands(files: dict[str, tuple[str, str] | None], asked_primary: str = AUTO) -> BandSurvey | None:
    """The band survey of photographs given as file -> (band, capture) or None, or None when they are not one:
    fewer than two bands. Captures that lack the primary band are left out, and those that lack a band kept
    (MAX_MISSING)."""
    by_capture: dict[str, dict[str, str]] = defaultdict(dict)
    for filename, tagged in sorted(files.items()):
        if tagged is not None and tagged[0] != RGB:
            by_capture[tagged[1]].setdefault(tagged[0], filename)
    counts = Counter(band for bands in by_capture.values() for band in bands)
    if len(counts) < 2:
        return None
    primary = choose_primary(sorted(counts, key=BAND_ORDER.index), asked_primary)
    kept = [capture for capture in by_capture.values() if primary in capture]
    bands = tuple(band for band in BAND_ORDER if band in counts
                  and sum(band not in capture for capture in kept) <= MAX_MISSING * len(kept))
    return BandSurvey(primary, bands, {capture[primary]: {band: capture[band] for band in bands}
                                       for capture in kept if all(band in capture for band in bands)})


def capture_companions(files: dict[str, tuple[str, str] | None], survey: BandSurvey) -> dict[str, list[str]]:
    """Per capture (its primary file), the capture's other files: its other bands, then the RGB photograph flown
    with them, matched by capture id or by file name (a rig may tag its bands with an id and not its RGB
    photograph)."""
    photographs: dict[str, str] = {}
    for filename, tagged in sorted(files.items()):
        if tagged is not None and tagged[0] == RGB:
            for key in (tagged[1], _capture_by_name(filename)):
                if key is not None:
                    photographs.setdefault(key, filename)
    companions = {}
    for primary, bands in survey.captures.items():
        keys = (files[primary][1] if files.get(primary) else None, _capture_by_name(primary))
        photograph = next((photographs[key] for key in keys if key in photographs), None)
        companions[primary] = [name for name in bands.values() if name != primary] + \
            ([photograph] if photograph else [])
    return companions


def _capture_by_name(filename: str) -> str | None:
    by_name = _named_by_file(filename)
    return by_name[1] if by_name else None
