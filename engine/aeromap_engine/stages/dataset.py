"""Dataset stage: read every photograph's metadata, refuse what cannot be processed, write images.json.

A file is refused (and the run goes on without it) when it does not decode as an image or shows nothing (a
uniform frame: lens cap, overexposure). Fewer than two usable photographs end the run. geo.txt, when present,
replaces the photographs' own positions.
"""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import InputError
from ..files import write_json
from ..geo import WGS84, crs_name, transform, utm_crs
from ..io.exif import exif_tags, photo_from_metadata, xmp_packet, xmp_tags
from ..io.geotxt import GeoFile, parse_geo_txt
from ..log import log
from ..options import Option
from ..photo import Photo, gps_centre

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = []
WEIGHT = 0.3  # reading metadata takes a few percent of a run

# Standard deviation (grey levels) below which a photograph, seen at 1/8 scale, is taken as a uniform frame.
MIN_CONTENT_STDDEV = 2.0
MIN_SIDE = 64  # px; smaller files cannot hold a useful view


def inspect_image(path: Path) -> Photo:
    """The photograph's metadata, or ValueError saying why it cannot be used."""
    data = path.read_bytes()
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            tags = exif_tags(image)
            image.draft("L", (width // 8, height // 8))  # JPEG decodes at 1/8 scale, fast
            grey = np.asarray(image.convert("L"))
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"not a readable image ({exc})") from None
    if min(width, height) < MIN_SIDE:
        raise ValueError(f"too small ({width}x{height} px)")
    if float(grey.std()) < MIN_CONTENT_STDDEV:
        raise ValueError("the image is uniform, it shows nothing to reconstruct")
    return photo_from_metadata(path.name, width, height, tags, xmp_tags(xmp_packet(data)))


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
        if entry.yaw is not None:
            photo.yaw, photo.pitch, photo.roll = entry.yaw, entry.pitch, entry.roll
        if entry.horizontal_accuracy is not None:
            photo.gps_xy_stddev = entry.horizontal_accuracy
            photo.gps_z_stddev = entry.vertical_accuracy or entry.horizontal_accuracy
        changed += 1
    return changed


def run(ctx: "StageContext") -> None:
    project = ctx.project
    files = project.image_files()
    photos: list[Photo] = []
    rejected: dict[str, str] = {}
    with ThreadPoolExecutor(ctx.options.max_concurrency) as pool:
        for i, (path, outcome) in enumerate(zip(files, pool.map(_inspect_or_reason, files))):
            if isinstance(outcome, Photo):
                photos.append(outcome)
            else:
                rejected[path.name] = outcome
                log.warning("Skipping %s: %s", path.name, outcome)
            ctx.progress(0.9 * (i + 1) / max(1, len(files)))
    if len(photos) < 2:
        raise InputError(f"Need at least 2 readable images, found {len(photos)} in {project.images_dir}")

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
                                     "cameras": cameras})


def _inspect_or_reason(path: Path) -> Photo | str:
    try:
        return inspect_image(path)
    except ValueError as exc:
        return str(exc)
