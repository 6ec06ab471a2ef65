"""A synthetic survey on disk: the photographs as a drone writes them (JPEG, EXIF, DJI's XMP; metadata.py) and
the truth beside them (DSM, DTM and orthophoto GeoTIFFs, camera poses, ODM's gcp_list.txt; truth.py), placed on
the Earth in a UTM zone (site.py).

    out_dir/images/DJI_0001.JPG ...       the photographs, GPS with the receiver's noise
    out_dir/truth/dsm.tif, dtm.tif        float32 heights (metres above the ellipsoid the GPS altitudes use)
    out_dir/truth/orthophoto.tif          RGB at the albedo's resolution
    out_dir/truth/cameras.json            the lens, each photograph's true pose and what its metadata say
    out_dir/truth/gcp_list.txt            the control points' true positions and exact pixels
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from ..geo import crs_name
from ..parallel import forked_map
from .camera import Lens, Shot, lawnmower
from .metadata import Barometer, Photograph, photograph_record, write_jpeg
from .render import (Hotspot, RenderModel, ViewSlope, observe_markers, render, sun_direction, to_photograph,
                     true_orthophoto)
from .scene import Marker, Scene, build_scene
from .site import Site, SurveySpec, locate
from .texture import Texture, paint_texture
from .truth import (ControlPoint, cameras_document, gcp_list_text, halve, write_bands, write_heights,
                    write_orthophoto)


@dataclass(frozen=True)
class SurveyTruth:
    root: Path
    images_dir: Path
    crs: str
    site: Site
    lens: Lens
    photographs: list[Photograph]
    control_points: list[ControlPoint]
    dsm: Path
    dtm: Path
    orthophoto: Path
    classes: Path  # the surface class (scene.Surface) of each cell, north-up
    cameras_json: Path
    gcp_list: Path
    gsd_m: float  # at the flight height above the mean ground, nadir
    bounds: tuple[float, float, float, float]  # the scene in the CRS: west, south, east, north
    seconds: dict[str, float]


def lit_model(spec: SurveySpec, scene: Scene, texture: Texture) -> RenderModel:
    """The scene to render under the spec's sun, with its brightening towards the antisolar point and looking
    away from the sun where the spec asks for them."""
    hotspot = Hotspot(spec.hotspot_amplitude, spec.hotspot_width_deg) if spec.hotspot_amplitude else None
    view_slope = ViewSlope(spec.view_slope) if spec.view_slope else None
    return RenderModel.build(scene, texture, sun_direction(spec.sun_azimuth_deg, spec.sun_elevation_deg), hotspot,
                             view_slope)


def generate(out_dir: Path, spec: SurveySpec, workers: int = 1) -> SurveyTruth:
    """Build the scene, fly it, write the photographs and the truth. With workers > 1 the photographs are
    rendered in that many processes (forked, so the scene is shared rather than copied); the result does not
    depend on the count, each photograph drawing its noise from its own generator."""
    seconds: dict[str, float] = {}
    clock = time.monotonic()
    rng = np.random.default_rng(spec.seed)
    scene = build_scene(spec.scene, rng)
    texture = paint_texture(scene, rng)
    model = lit_model(spec, scene, texture)
    seconds["scene"] = time.monotonic() - clock

    clock = time.monotonic()
    site = locate(spec)
    lens = spec.lens.lens()
    shots = lawnmower(lens, spec.flight, scene.size_m, float(scene.ground.z.mean()), rng)
    takeoff_z = float(scene.ground.sample(shots[0].pose.centre[:1], shots[0].pose.centre[1:2])[0])
    drift = spec.barometer_drift_m_per_min / 60.0 * (1.0 if rng.random() < 0.5 else -1.0)
    barometer = Barometer(takeoff_z, drift, spec.barometer_sigma_m)
    images_dir = out_dir / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    render_lens = replace(lens, width=lens.width // spec.render_downscale, height=lens.height // spec.render_downscale,
                          focal_px=lens.focal_px / spec.render_downscale)
    job = _PhotographJob(spec, site, model, lens, render_lens, render_lens.pixel_rays(), barometer, images_dir,
                         scene.markers)
    photographs: list[Photograph] = []
    observations: dict[str, list[tuple[str, float, float]]] = {m.name: [] for m in scene.markers}
    for photo, seen in forked_map(job, list(enumerate(shots)), workers):
        photographs.append(photo)
        for marker_name, pixel in seen:
            observations[marker_name].append((photo.name, pixel[0], pixel[1]))
    seconds["photographs"] = time.monotonic() - clock

    clock = time.monotonic()
    truth_dir = out_dir / "truth"
    truth_dir.mkdir(parents=True, exist_ok=True)
    control_points = [ControlPoint(m.name, site.to_crs([m.centre[0], m.centre[1], m.z]), observations[m.name])
                      for m in scene.markers]
    crs = crs_name(site.crs)
    paths = {name: truth_dir / f"{name}.tif" for name in ("dsm", "dtm", "orthophoto", "classes")}
    write_heights(paths["dsm"], scene.surface, site)
    write_heights(paths["dtm"], scene.ground, site)
    ortho = true_orthophoto(model)
    for _ in range(spec.truth_ortho_level):
        ortho = halve(ortho)
    write_orthophoto(paths["orthophoto"], ortho, scene.size_m, site)
    write_bands(paths["classes"], scene.classes[..., None], scene.size_m, site, ["class"])
    gcp_path = truth_dir / "gcp_list.txt"
    gcp_path.write_text(gcp_list_text(crs, control_points))
    gsd = spec.flight.height_m / lens.focal_px
    cameras_path = truth_dir / "cameras.json"
    document = cameras_document(spec, site, lens, photographs, control_points, gsd)
    document["barometer"] = {"takeoff_altitude": barometer.takeoff_z + float(site.origin[2]),
                             "drift_m_per_min": barometer.drift_m_per_s * 60.0, "sigma_m": barometer.sigma_m}
    cameras_path.write_text(json.dumps(document, indent=1) + "\n")
    seconds["truth"] = time.monotonic() - clock
    west, south = site.origin[:2]
    bounds = (float(west), float(south), float(west + scene.size_m), float(south + scene.size_m))
    return SurveyTruth(out_dir, images_dir, crs, site, lens, photographs, control_points, paths["dsm"],
                       paths["dtm"], paths["orthophoto"], paths["classes"], cameras_path, gcp_path, gsd, bounds, seconds)


@dataclass(frozen=True)
class _PhotographJob:
    """What every photograph needs, shared by the worker processes."""

    spec: SurveySpec
    site: Site
    model: RenderModel
    lens: Lens
    render_lens: Lens  # the lens at the size the photographs are rendered at
    camera_rays: np.ndarray
    barometer: Barometer
    images_dir: Path
    markers: list[Marker]

    def readout_motion(self, shot: Shot) -> np.ndarray | None:
        """The camera's travel while a rolling shutter reads the sensor: along the flight, which is the image's
        up direction (the top of the frame looks ahead)."""
        if not self.spec.readout_ms:
            return None
        ahead = shot.pose.to_world_directions(np.array([[0.0, -1.0, 0.0]]))[0]
        ahead[2] = 0.0
        return ahead / np.linalg.norm(ahead) * self.spec.flight.speed_m_s * self.spec.readout_ms / 1000.0

    def __call__(self, item: tuple[int, Shot]) -> tuple[Photograph, list[tuple[str, tuple[float, float]]]]:
        index, shot = item
        rng = np.random.default_rng([self.spec.seed, index])
        name = f"DJI_{index + 1:04d}.JPG"
        linear = render(self.model, self.render_lens, shot.pose, self.camera_rays, self.readout_motion(shot))
        if self.render_lens.width != self.lens.width:
            linear = cv2.resize(linear, (self.lens.width, self.lens.height), interpolation=cv2.INTER_CUBIC)
        exposure = float(np.exp(rng.normal(0.0, self.spec.exposure_jitter)))
        pixels = to_photograph(linear, rng, exposure, self.spec.noise_dn)
        photo = photograph_record(self.spec, self.site, shot, name, self.barometer, rng)
        write_jpeg(self.images_dir / name, pixels, self.spec, self.lens, photo, self.site)
        seen = [(marker.name, (float(pixel[0]), float(pixel[1])))
                for marker, pixel in observe_markers(self.model, self.lens, shot.pose, self.markers)]
        return photo, seen
