"""A synthetic survey by a 360° camera: equirectangular panoramas of the scene, taken on a grid of stations, with
the EXIF and XMP (GPano) that 360° cameras write, and the truth beside them (survey.py's layout).

    truth = generate_panoramas(Path("survey"), SurveySpec(), PanoramaFlight())

The sky and ground beyond the scene's border are drawn as a featureless haze: the clamped border is no real view.
"""

from __future__ import annotations

import io
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import ExifTags, Image

from ..geo import crs_name
from ..io.exif_write import dji_xmp, write_gps
from ..panorama.faces import FOCAL_RATIO, equirectangular_rays, face_size
from .camera import Lens, Pose, Shot
from .metadata import Barometer, Photograph, photograph_record
from .render import RenderModel, intersect, sun_direction, surface_colour, to_photograph, true_orthophoto
from .scene import build_scene
from .site import SurveySpec, locate
from .survey import SurveyTruth
from .texture import paint_texture
from .truth import gcp_list_text, write_bands, write_heights, write_orthophoto

HAZE = np.array([0.62, 0.66, 0.72], dtype=np.float32)  # linear colour of the sky and of what lies beyond
MIN_DESCENT = math.sin(math.radians(2.0))  # rays flatter than this reach the scene's border: haze


@dataclass(frozen=True)
class PanoramaFlight:
    """Stations on lines running north-south, the camera's front along the line as it is carried."""

    width: int = 2048  # the panoramas' width; their height is half
    height_m: float = 40.0  # above the scene's mean ground
    line_spacing_m: float = 25.0
    station_spacing_m: float = 20.0
    margin_m: float = 35.0  # between the outermost stations and the scene's border
    seconds_between: float = 4.0


def render_panorama(model: RenderModel, width: int, pose: Pose) -> np.ndarray:
    """The linear equirectangular image (width / 2, width, channels) seen from the pose."""
    height = width // 2
    directions = equirectangular_rays(width, height).reshape(-1, 3)
    directions = directions @ pose.rotation.T
    out = np.broadcast_to(HAZE, (len(directions), len(HAZE))).copy()
    ground = np.flatnonzero(directions[:, 2] < -MIN_DESCENT)
    t = intersect(model.field, model.pyramid, pose.centre, directions[ground])
    points = pose.centre + t[:, None] * directions[ground]
    size = model.field.cell * model.field.z.shape[0]
    inside = ((points[:, :2] >= 0.0) & (points[:, :2] <= size)).all(axis=1)
    seen = ground[inside]
    out[seen] = surface_colour(model, points[inside], directions[seen], t[inside] * (2.0 * math.pi / width))
    return out.reshape(height, width, -1)


def stations(flight: PanoramaFlight, size_m: float, ground_z: float) -> list[Shot]:
    xs = np.arange(flight.margin_m, size_m - flight.margin_m + 1e-9, flight.line_spacing_m)
    ys = np.arange(flight.margin_m, size_m - flight.margin_m + 1e-9, flight.station_spacing_m)
    shots = []
    for line, x in enumerate(xs):
        northward = line % 2 == 0
        for y in ys if northward else ys[::-1]:
            centre = np.array([x, y, ground_z + flight.height_m])
            # Pitch 90 from nadir: the panorama's centre column looks along the line, on the horizon.
            pose = Pose.from_angles(centre, 0.0 if northward else 180.0, 90.0, 0.0)
            shots.append(Shot(pose, len(shots) * flight.seconds_between, line))
    return shots


def generate_panoramas(out_dir: Path, spec: SurveySpec, flight: PanoramaFlight) -> SurveyTruth:
    clock = time.monotonic()
    rng = np.random.default_rng(spec.seed)
    scene = build_scene(spec.scene, rng)
    model = RenderModel.build(scene, paint_texture(scene, rng), sun_direction(spec.sun_azimuth_deg,
                                                                               spec.sun_elevation_deg))
    site = locate(spec)
    shots = stations(flight, scene.size_m, float(scene.ground.z.mean()))
    barometer = Barometer(float(shots[0].pose.centre[2] - flight.height_m), 0.0, spec.barometer_sigma_m)
    images_dir = out_dir / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    photographs: list[Photograph] = []
    for index, shot in enumerate(shots):
        name = f"PANO_{index + 1:04d}.JPG"
        pixels = to_photograph(render_panorama(model, flight.width, shot.pose), rng, 1.0, spec.noise_dn)
        photo = photograph_record(spec, site, shot, name, barometer, rng)
        _write_panorama(images_dir / name, pixels, spec, photo)
        photographs.append(photo)
    truth_dir = out_dir / "truth"
    truth_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: truth_dir / f"{name}.tif" for name in ("dsm", "dtm", "orthophoto", "classes")}
    write_heights(paths["dsm"], scene.surface, site)
    write_heights(paths["dtm"], scene.ground, site)
    write_orthophoto(paths["orthophoto"], true_orthophoto(model), scene.size_m, site)
    write_bands(paths["classes"], scene.classes[..., None], scene.size_m, site, ["class"])
    gcp_path = truth_dir / "gcp_list.txt"
    gcp_path.write_text(gcp_list_text(crs_name(site.crs), []))
    size = face_size(flight.width)
    face = Lens(size, size, FOCAL_RATIO * size)
    cameras_path = truth_dir / "panoramas.json"
    cameras_path.write_text("".join(f"{p.name} {' '.join(f'{v:.4f}' for v in p.position)}\n" for p in photographs))
    west, south = site.origin[:2]
    return SurveyTruth(out_dir, images_dir, crs_name(site.crs), site, face, photographs, [], paths["dsm"],
                       paths["dtm"], paths["orthophoto"], paths["classes"], cameras_path, gcp_path,
                       flight.height_m / face.focal_px,
                       (float(west), float(south), float(west + scene.size_m), float(south + scene.size_m)),
                       {"all": time.monotonic() - clock})


def _write_panorama(path: Path, pixels: np.ndarray, spec: SurveySpec, photo: Photograph) -> None:
    """A JPEG as a 360° camera writes it: make, model, capture time and GPS in EXIF, GPano's projection in XMP."""
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = spec.make
    exif[ExifTags.Base.Model] = spec.model
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = photo.time.strftime("%Y:%m:%d %H:%M:%S")
    write_gps(exif, *photo.gps)
    height, width = pixels.shape[:2]
    xmp = dji_xmp({"GPano:ProjectionType": "equirectangular", "GPano:FullPanoWidthPixels": str(width),
                   "GPano:FullPanoHeightPixels": str(height)})
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=spec.jpeg_quality, exif=exif, xmp=xmp.encode("utf-8"))
    path.write_bytes(buffer.getvalue())
