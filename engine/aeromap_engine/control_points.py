"""The ground-control editor's predictions: surveyed points read from JSON, the views read from a model's files or
from the photographs' metadata, and where each point should appear (sfm/sightings.py computes it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyproj

from .errors import InputError
from .geo import is_metric_projected, parse_crs, transform, utm_crs
from .io.exif import exif_tags, photo_from_metadata, xmp_packet, xmp_tags
from .io.images import read_layout
from .photo import Photo, gps_centre
from .sfm.sightings import Sighting, View, gps_views, locate, model_crs, model_views, sight

# How far outside a photograph's frame a prediction from the GPS may fall and still name it: a GPS fix and a gimbal's
# angles put a point tens of pixels off, a tenth of the frame at worst in the synthetic surveys.
GPS_MARGIN = 0.1
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".tif", ".tiff", ".png"}


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"Cannot read {what} ({path.name}): {exc}") from None


@dataclass(frozen=True)
class Surveyed:
    name: str
    xyz: np.ndarray  # in the points' CRS
    marks: dict[str, tuple[float, float]]  # where the user marked it so far: image, pixel


def read_points(path: Path) -> tuple[pyproj.CRS, list[Surveyed]]:
    """The points' CRS and the points from {"crs", "points": [{"name", "x", "y", "z", "marks": [{"image", "x",
    "y"}]}]}, the marks optional."""
    document = _read_json(path, "the points")
    try:
        crs = parse_crs(str(document["crs"]))
        points = [Surveyed(str(p["name"]), np.array([float(p["x"]), float(p["y"]), float(p["z"])]),
                           {str(m["image"]): (float(m["x"]), float(m["y"])) for m in p.get("marks", [])})
                  for p in document["points"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"The points must be {{crs, points: [{{name, x, y, z, marks}}]}} with a known CRS: "
                         f"{exc}") from None
    if not all(np.isfinite(p.xyz).all() and np.isfinite(list(p.marks.values())).all() for p in points):
        raise InputError("The points' coordinates and marks must be finite numbers")
    return crs, points


def read_photos(images: Path) -> list[Photo]:
    """The metadata of every photograph in the folder (those that cannot be read are left out)."""
    photos = []
    for path in sorted(images.iterdir()):
        if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            continue
        layout = read_layout(path)
        if layout is None:
            continue
        data = path.read_bytes()
        photos.append(photo_from_metadata(path.name, layout.width, layout.height, exif_tags(data),
                                          xmp_tags(xmp_packet(data))))
    return photos


def _views(crs: pyproj.CRS, cameras: Path | None, shots: Path | None,
           images: Path | None) -> tuple[str, pyproj.CRS, list[View]]:
    """Where the views come from, their world CRS and the views."""
    candidates = [crs] if is_metric_projected(crs) else []
    if cameras and shots:
        shots_document = _read_json(shots, "the model's shots")
        try:
            world = model_crs(shots_document, candidates)
            return "model", world, model_views(_read_json(cameras, "the model's cameras"), shots_document)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"Cannot read the model's cameras and shots: {exc}") from None
    if images is None:
        raise InputError("Predictions need a model (cameras.json and shots.geojson) or the photographs")
    photos = read_photos(images)
    centre = gps_centre(photos)
    if centre is None:
        raise InputError("None of the photographs has a GPS position, and there is no model yet: process the task "
                         "first to see where the points are")
    world = candidates[0] if candidates else utm_crs(*centre)
    return "gps", world, gps_views(photos, world)


def _sighting(s: Sighting) -> dict[str, Any]:
    return {"image": s.image, "x": round(s.pixel[0], 2), "y": round(s.pixel[1], 2), "width": s.width,
            "height": s.height}


def predict_sightings(points: Path, cameras: Path | None, shots: Path | None, images: Path | None) -> dict[str, Any]:
    """{source: "model" or "gps", points: [{name, sightings: [{image, x, y, width, height}], disagreeing:
    [image]}]}: each point where its marks place it (sfm/sightings.py locate), else where it was surveyed; the
    marks that disagree with the others named."""
    crs, surveyed = read_points(points)
    source, world, views = _views(crs, cameras, shots, images)
    in_world = transform(crs, world, np.array([p.xyz for p in surveyed]).reshape(-1, 3))
    if not np.isfinite(in_world).all():
        far = [p.name for p, row in zip(surveyed, in_world) if not np.isfinite(row).all()]
        raise InputError(f"Points too far from the survey for its CRS: {', '.join(far[:5])}")
    by_name = {view.image: view for view in views}
    located = [locate(xyz, [(by_name[image], pixel) for image, pixel in point.marks.items() if image in by_name])
               for point, xyz in zip(surveyed, in_world)]
    seen = sight(views, np.array([p.position for p in located]).reshape(-1, 3),
                 margin=0.0 if source == "model" else GPS_MARGIN)
    return {"source": source, "points": [{"name": p.name, "sightings": [_sighting(s) for s in sightings],
                                          "disagreeing": where.disagreeing}
                                         for p, where, sightings in zip(surveyed, located, seen)]}
