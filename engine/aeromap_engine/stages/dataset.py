"""Dataset stage: read every photograph's metadata, refuse what cannot be processed, write images.json.

A file is refused (and the run goes on without it) when it does not decode as an image or shows nothing (a
uniform frame: lens cap, overexposure). Fewer than two usable photographs end the run. geo.txt, when present,
replaces the photographs' own positions.

When any photograph is not 8-bit (thermal and multispectral cameras, 16-bit exports), the dataset's levels, one
linear stretch to 8 bits for all of them (see io/images.py), are set here from a sample of every photograph's
pixels and written for the stages that read pixels; the uniform-frame check sees the stretched values.

Photographs that are the bands of multispectral captures (bands/groups.py) are grouped: the geometry is solved on
the primary band's photographs alone (images.json), and bands.json records every capture's band files and what
each records of its radiometry, for the orthophoto. A survey of radiometric thermal photographs (DJI R-JPEGs) has
its temperatures written here (bands/thermal.py): the geometry is solved on the palette JPEGs, the orthophoto
blends the temperatures, a band survey of one LWIR band.
"""

from __future__ import annotations

import math
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np
from PIL import UnidentifiedImageError

from ..atomic_files import read_json, write_json
from ..bands.groups import AUTO, RGB, BandSurvey, band_of, by_instant, capture_companions, group_bands
from ..bands.lenses import BandLens
from ..bands.radiometry import Radiometry
from ..bands.thermal import convert as convert_temperatures
from ..bands.thermal import holds_raw_counts
from ..errors import InputError
from ..geo import WGS84, crs_name, transform, utm_crs
from ..io.exif import captured_stretch, exif_tags, photo_from_metadata, xmp_packet, xmp_tags
from ..io.geotxt import GeoFile, parse_geo_txt
from ..io.images import Layout, Levels, dataset_levels, read_layout, read_stored, to_8bit
from ..log import log
from ..options import Option
from ..panorama.split import is_panorama
from ..panorama.split import split as split_panorama
from ..photo import Photo, gps_centre
from ..video.extract import extract as extract_frames

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("primary-band", "string", AUTO, "The band of a multispectral camera the geometry is solved on (Blue, "
           "Green, Red, RedEdge, NIR); the other bands are aligned to it. auto: green, else red, else NIR.",
           "dataset"),
    Option("video-limit", "int", 500, "Most frames taken from each video (MP4, MOV, AVI; its DJI .srt beside it, "
           "or the telemetry track inside it, places them); 0: no limit.", "dataset", minimum=0),
    Option("video-resolution", "int", 4000, "Longer side, in pixels, of the frames taken from videos.", "dataset",
           minimum=320),
]
WEIGHT = 0.3  # reading metadata takes a few percent of a run

# Standard deviation (grey levels) below which a photograph, seen at 1/8 scale, is taken as a uniform frame.
MIN_CONTENT_STDDEV = 2.0
MIN_SIDE = 64  # px; smaller files cannot hold a useful view
SAMPLE_PIXELS = 4096  # per photograph: enough for the levels' percentiles and the content check
# A copy scaled keeping its shape rounds its sides to whole pixels (a 4000x2250 frame at 1000 px: 1000x562, 0.1 %);
# a shape further from the captured one was stretched, which no lens model with square pixels describes.
MAX_STRETCH = 0.02
# What a capture's position is: the fix, its accuracy and the barometric height that scales a local model.
POSITION_FIELDS = ("latitude", "longitude", "altitude", "gps_xy_stddev", "gps_z_stddev", "relative_altitude")


@dataclass
class Inspection:
    """A readable photograph, before the dataset's levels are known."""

    photo: Photo
    layout: Layout
    sample: np.ndarray  # (n, 1, 3) BGR pixels at 1/8 scale, in the stored sample type
    stretch: float | None  # how many times taller for its width than captured (io/exif.py captured_stretch)
    band: tuple[str, str] | None  # (band, capture) of one band of a multispectral capture
    radiometry: Radiometry
    lens: BandLens | None  # as a band camera's metadata state it
    thermal: bool  # a radiometric thermal JPEG, whose temperatures can be read


def inspect_image(path: Path) -> Inspection:
    """The photograph's metadata and a sample of its pixels, or ValueError saying why it cannot be used."""
    data = path.read_bytes()
    layout = read_layout(path)
    try:
        tags = exif_tags(data)
        stored = read_stored(path, 1 / 8)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, InputError) as exc:
        raise ValueError(f"not a readable image ({exc})") from None
    if layout is None:
        raise ValueError("not a readable image (unknown format)")
    if min(layout.width, layout.height) < MIN_SIDE:
        raise ValueError(f"too small ({layout.width}x{layout.height} px)")
    xmp = xmp_tags(xmp_packet(data))
    photo = photo_from_metadata(path.name, layout.width, layout.height, tags, xmp)
    return Inspection(photo, layout, pixel_sample(stored), captured_stretch(layout.width, layout.height, tags),
                      band_of(path.name, xmp), Radiometry.of(tags, xmp), BandLens.of(tags, xmp),
                      holds_raw_counts(data, photo.camera_make))


def pixel_sample(image: np.ndarray, count: int = SAMPLE_PIXELS) -> np.ndarray:
    """Up to `count` pixels (n, 1, channels) of an image, drawn at random but the same on every run."""
    pixels = image.reshape(-1, 1, image.shape[2])
    if len(pixels) <= count:
        return pixels
    return pixels[np.random.default_rng(0).choice(len(pixels), count, replace=False)]


def shows_content(sample: np.ndarray, levels: Levels | None, name: str) -> bool:
    grey = cv2.cvtColor(to_8bit(sample, levels, name), cv2.COLOR_BGR2GRAY)
    return float(grey.std()) >= MIN_CONTENT_STDDEV


def levels_of(inspections: list[Inspection]) -> Levels | None:
    """The dataset's levels, from the photographs that are not 8-bit; None when all are."""
    samples = [i.sample for i in inspections if i.sample.dtype != np.uint8]
    return dataset_levels(samples) if samples else None


def apply_geo_file(photos: list[Photo], geo: GeoFile) -> int:
    """Replace positions (and angles and accuracies where given) from geo.txt; returns how many changed."""
    changed = 0
    for photo in photos:
        entry = geo.entries.get(photo.filename)
        if entry is None:
            continue
        z = entry.z if entry.z is not None else (photo.altitude or 0.0)
        lon, lat, alt = transform(geo.crs, WGS84, np.array([[entry.x, entry.y, z]]))[0]
        photo.longitude, photo.latitude, photo.altitude = float(lon), float(lat), float(alt)
        if entry.z is not None:
            photo.relative_altitude = None  # the barometer's heights go with the fixes replaced (sfm/frame.py)
        if entry.yaw is not None:
            photo.yaw, photo.pitch, photo.roll = entry.yaw, entry.pitch, entry.roll
        if entry.horizontal_accuracy is not None:
            photo.gps_xy_stddev = entry.horizontal_accuracy
            photo.gps_z_stddev = entry.vertical_accuracy or entry.horizontal_accuracy
        changed += 1
    return changed


def frames_from_videos(project: "Project", limit: int, resolution: int) -> None:
    """Writes the chosen frames of every input video into the images folder, with their positions from the .srt
    beside it; the frames of an earlier run go first (other options choose others)."""
    videos = project.video_files()
    earlier = read_json(project.video_frames_file) or {}
    if not videos and not earlier:
        return
    for names in earlier.values():
        for name in names:
            (project.images_dir / name).unlink(missing_ok=True)
    written: dict[str, list[str]] = {}
    for video in videos:
        frames = extract_frames(video, project.images_dir, limit or 10**9, resolution)
        written[video.name] = [frame.name for frame in frames]
    write_json(project.video_frames_file, written)


def faces_from_panoramas(project: "Project", lens: str, jobs: int) -> dict[str, list[str] | str]:
    """Writes the faces of every 360° panorama among the images into the images folder (panorama/split.py), after
    removing those of an earlier run; answers, for each panorama (which is then not a photograph itself), its faces
    or why it could not be cut."""
    for names in (read_json(project.panorama_faces_file) or {}).values():
        for name in names:
            (project.images_dir / name).unlink(missing_ok=True)
    project.panorama_faces_file.unlink(missing_ok=True)
    with ThreadPoolExecutor(jobs) as pool:
        candidates = project.image_files()
        panoramas = [path for path, found in zip(candidates, pool.map(lambda p: is_panorama(p, lens), candidates))
                     if found]
        outcomes = dict(zip((p.name for p in panoramas), pool.map(lambda p: _split_or_reason(p, project.images_dir),
                                                                   panoramas)))
    written = {name: faces for name, faces in outcomes.items() if not isinstance(faces, str)}
    if written:
        write_json(project.panorama_faces_file, written)
        log.info("%d 360° panoramas, each cut into %d perspective views with its centre: %s", len(written),
                 len(next(iter(written.values()))), ", ".join(list(written)[:3]) + ("..." if len(written) > 3 else ""))
    return outcomes


def run(ctx: "StageContext") -> None:
    project = ctx.project
    frames_from_videos(project, ctx.options.video_limit, ctx.options.video_resolution)
    panoramas = faces_from_panoramas(project, ctx.options.camera_lens, ctx.options.max_concurrency)
    files = [path for path in project.image_files() if path.name not in panoramas]
    readable: list[Inspection] = []
    rejected = {name: reason for name, reason in panoramas.items() if isinstance(reason, str)}
    for name, reason in rejected.items():
        log.warning("Skipping %s: %s", name, reason)
    with ThreadPoolExecutor(ctx.options.max_concurrency) as pool:
        for i, (path, outcome) in enumerate(zip(files, pool.map(_inspect_or_reason, files))):
            if isinstance(outcome, Inspection):
                readable.append(outcome)
            else:
                rejected[path.name] = outcome
                log.warning("Skipping %s: %s", path.name, outcome)
            ctx.progress(0.9 * (i + 1) / max(1, len(files)))
    tagged = by_instant({i.photo.filename: i.band for i in readable},
                        {i.photo.filename: i.photo.utc_time for i in readable})
    survey = group_bands(tagged, ctx.options.primary_band)
    every_band = {i.photo.filename: i for i in readable}
    if survey is not None:
        report_incomplete(tagged, survey)
        others = [i.photo.filename for i in readable if i.band is None or i.band[0] == RGB]
        if others:
            log.warning("%d photograph(s) that are not bands of the multispectral captures (%s...) are left out: "
                        "the survey is processed from its bands", len(others), others[0])
        located = locate_captures(capture_companions(tagged, survey), every_band)
        if located:
            log.info("%d capture(s) whose %s file carries no position take their position from another file of "
                     "the capture (a band, or the RGB photograph flown with them)", located, survey.primary)
        readable = [i for i in readable if i.photo.filename in survey.captures]
    usable: list[Inspection] = []
    levels = levels_of(readable)
    for inspection in readable:
        name = inspection.photo.filename
        if shows_content(inspection.sample, levels, name):
            usable.append(inspection)
        else:
            rejected[name] = "the image is uniform, it shows nothing to reconstruct"
            log.warning("Skipping %s: %s", name, rejected[name])
    if len(usable) < 2:
        raise InputError(f"Need at least 2 readable images, found {len(usable)} in {project.images_dir}")
    # A refused frame (sun glare, lens cap) must not widen the stretch of the others.
    levels = levels_of(usable)
    _record_levels(project, levels, usable)
    warn_stretched(usable)
    photos = [i.photo for i in usable]
    temperatures = thermal_survey(project, usable, ctx.options.max_concurrency) if survey is None else None
    _record_bands(project, survey or temperatures, every_band, {p.filename for p in photos},
                  temperatures is not None)

    if project.geo_file.exists():
        try:
            geo = parse_geo_txt(project.geo_file.read_text())
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"Cannot read geo.txt: {exc}") from None
        log.info("geo.txt gives the positions of %d images", apply_geo_file(photos, geo))

    centre = gps_centre(photos)
    located = sum(p.has_gps for p in photos)
    crs = crs_name(utm_crs(*centre)) if centre else None
    if crs:
        log.info("%d of %d images have a GPS position; working in %s", located, len(photos), crs)
    else:
        log.info("No image has a GPS position: the reconstruction will be in a local frame, not georeferenced "
                 "(add GPS tags, a geo.txt or a gcp_list.txt to georeference it)")
    cameras = sorted({f"{p.camera_make} {p.camera_model}".strip() or "unknown camera" for p in photos})
    log.info("Found %d usable images from %s", len(photos), ", ".join(cameras))

    write_json(project.images_json, [p.to_odm() for p in photos])
    project.update_stats("dataset", {"images_total": len(files), "images_usable": len(photos),
                                     "images_rejected": rejected, "images_with_gps": located, "crs": crs,
                                     "cameras": cameras, "levels": asdict(levels) if levels else None})


def locate_captures(companions: dict[str, list[str]], inspections: dict[str, Inspection]) -> int:
    """Give each capture's primary photograph without a position the first position among its companions (some
    rigs, as the Parrot Sequoia, tag only their RGB photograph), each field it lacks; returns how many were given
    one."""
    located = 0
    for primary, others in companions.items():
        photo = inspections[primary].photo
        source = next((inspections[name].photo for name in others
                       if name in inspections and inspections[name].photo.has_gps), None)
        if photo.has_gps or source is None:
            continue
        for field in POSITION_FIELDS:
            if getattr(photo, field) is None:
                setattr(photo, field, getattr(source, field))
        located += 1
    return located


def warn_stretched(inspections: list[Inspection]) -> None:
    """Name the photographs resized to another shape than they were captured in: the lens calibration can only
    bend its distortion to absorb the stretch, which can leave part of the frame's border without a ray
    (sfm/cameras.py lens_coverage)."""
    stretched = [i for i in inspections if i.stretch is not None and abs(math.log(i.stretch)) > MAX_STRETCH]
    if not stretched:
        return
    first = stretched[0]
    others = f" and {len(stretched) - 1} other(s)" if len(stretched) > 1 else ""
    log.warning("%s%s: the pixels (%dx%d) are %.2f times as tall for their width as the frame the metadata say was "
                "captured: resized to another shape, which no lens model describes, so the calibration will bend "
                "to absorb it and the products will be distorted (resize keeping the shape)", first.photo.filename,
                others, first.layout.width, first.layout.height, first.stretch)


def _record_levels(project: "Project", levels: Levels | None, usable: list[Inspection]) -> None:
    """Write the levels for the stages that read pixels (removing those of an earlier dataset) and log them."""
    if levels is None:
        project.radiometry_file.unlink(missing_ok=True)
    else:
        write_json(project.radiometry_file, asdict(levels))
        types = Counter(str(i.layout.dtype) for i in usable if i.layout.dtype != np.uint8)
        log.info("Images that are not 8-bit (%s) are mapped to 8 bits by one stretch shared by all: %.6g to %.6g",
                 _tally(types), levels.low, levels.high)
    bands = Counter(f"{i.layout.colour_bands} bands" for i in usable if i.layout.colour_bands > 3)
    if bands:
        log.info("Images with more than three bands (%s): the first three are used as red, green and blue",
                 _tally(bands))


def thermal_survey(project: "Project", usable: list[Inspection], jobs: int) -> BandSurvey | None:
    """The temperatures of a survey of radiometric thermal photographs, written to the project, as a band survey
    of one LWIR band; None (and no temperatures kept) when the photographs are not all such, or when the
    temperatures of any cannot be read: the palette colours are mapped then, as for any photograph."""
    shutil.rmtree(project.temperatures_dir, ignore_errors=True)
    thermal = [i.photo.filename for i in usable if i.thermal]
    if not thermal:
        return None
    if len(thermal) < len(usable):
        log.warning("%d of %d photographs are radiometric thermal JPEGs: the survey is mapped from the photographs' "
                    "colours, without temperatures (process the thermal photographs as a task of their own)",
                    len(thermal), len(usable))
        return None
    files = convert_temperatures(project.images_dir, thermal, project.temperatures_dir, jobs)
    unread = [name for name in thermal if name not in files]
    if unread:
        log.warning("The temperatures of %d thermal photograph(s) (%s...) cannot be read: the survey is mapped from "
                    "the palette colours the camera rendered", len(unread), unread[0])
        shutil.rmtree(project.temperatures_dir, ignore_errors=True)
        return None
    return BandSurvey("LWIR", ("LWIR",), {name: {"LWIR": file} for name, file in files.items()})


def report_incomplete(tagged: dict[str, tuple[str, str] | None], survey: BandSurvey) -> None:
    """Log the bands left out for missing from too many captures, and the captures left out for missing a band."""
    found = {band for band, _ in filter(None, tagged.values()) if band != RGB}
    if dropped := sorted(found - set(survey.bands)):
        log.warning("Band(s) %s left out: missing from more than a tenth of the captures (files lost or unreadable)",
                    ", ".join(dropped))
    with_primary = {capture for band, capture in filter(None, tagged.values()) if band == survey.primary}
    if incomplete := len(with_primary) - len(survey.captures):
        log.warning("%d capture(s) left out: a band's file is missing or unreadable", incomplete)


def _record_bands(project: "Project", survey: BandSurvey | None, inspections: dict[str, Inspection],
                  usable: set[str], temperatures: bool) -> None:
    """Write bands.json for a multispectral or thermal survey (its captures whose primary photograph is usable),
    remove that of an earlier dataset otherwise."""
    if survey is None:
        project.bands_file.unlink(missing_ok=True)
        return
    captures = {name: files for name, files in survey.captures.items() if name in usable}
    # A temperature file records no radiometry: its values are final.
    radiometry = {file: (inspections[file].radiometry if file in inspections else Radiometry.of({}, {})).to_json()
                  for files in captures.values() for file in files.values()}
    # The rig's cameras keep their lenses: each band's as its first capture's file states it.
    lenses = {band: lens.to_json() for band in survey.bands
              if (first := next((files[band] for files in captures.values()), None)) in inspections
              and (lens := inspections[first].lens) is not None}
    write_json(project.bands_file, {**BandSurvey(survey.primary, survey.bands, captures).to_json(),
                                    "radiometry": radiometry, "lenses": lenses, "temperatures": temperatures})
    if temperatures:
        log.info("Thermal survey: the temperatures of %d photographs in °C; the geometry is solved on their "
                 "palette renderings", len(captures))
    else:
        log.info("Multispectral captures: %d of bands %s; the geometry is solved on %s", len(captures),
                 ", ".join(survey.bands), survey.primary)


def _tally(counts: Counter) -> str:
    return ", ".join(f"{kind}: {n} image{'s' * (n > 1)}" for kind, n in counts.most_common())


def _split_or_reason(path: Path, out_dir: Path) -> list[str] | str:
    try:
        return split_panorama(path, out_dir)
    except InputError as exc:
        return str(exc)


def _inspect_or_reason(path: Path) -> Inspection | str:
    try:
        return inspect_image(path)
    except ValueError as exc:
        return str(exc)
