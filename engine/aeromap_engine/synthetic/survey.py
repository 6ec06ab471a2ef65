"""A synthetic survey on disk: the photographs as a drone writes them (JPEG, EXIF, DJI's XMP) and the truth
beside them (DSM, DTM and orthophoto GeoTIFFs, camera poses, ODM's gcp_list.txt), placed on the Earth in a UTM
zone.

    out_dir/images/DJI_0001.JPG ...       the photographs, GPS with the receiver's noise
    out_dir/truth/dsm.tif, dtm.tif        float32 heights (metres above the ellipsoid the GPS altitudes use)
    out_dir/truth/orthophoto.tif          RGB at the albedo's resolution
    out_dir/truth/cameras.json            the lens, each photograph's true pose and what its metadata say
    out_dir/truth/gcp_list.txt            the control points' true positions and exact pixels

Geometry stays in the scene's local frame (camera.py, scene.py); this module adds the offset to the CRS, which
is one translation: the local frame's axes are the UTM grid's.
"""

from __future__ import annotations

import io
import json
import math
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
import pyproj
import rasterio
from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational
from rasterio.transform import Affine

from ..geo import crs_name, utm_crs
from ..parallel import forked_map
from .camera import FlightSpec, Lens, LensSpec, Pose, Shot, lawnmower
from .render import RenderModel, observe_markers, render, to_photograph, true_orthophoto
from .scene import HeightField, Marker, SceneSpec, build_scene
from .texture import paint_texture


@dataclass(frozen=True)
class SurveySpec:
    scene: SceneSpec = field(default_factory=SceneSpec)
    lens: LensSpec = field(default_factory=LensSpec)
    flight: FlightSpec = field(default_factory=FlightSpec)
    latitude: float = 45.81  # the scene's centre: the Po plain north of Milan, near UTM 32N's central meridian
    longitude: float = 9.02
    base_altitude_m: float = 230.0  # the scene's local z = 0
    gps_sigma_horizontal_m: float = 1.5  # a consumer receiver's fix
    gps_sigma_vertical_m: float = 3.3
    # DJI's RelativeAltitude comes from a barometer: precise from one photograph to the next, but drifting with
    # the weather and the board's temperature over a flight (the sign of the drift is drawn from the seed).
    barometer_sigma_m: float = 0.1
    barometer_drift_m_per_min: float = 0.05
    dji_xmp: bool = True
    make: str = "DJI"
    model: str = "Synthetic"
    jpeg_quality: int = 92
    noise_dn: float = 1.5
    exposure_jitter: float = 0.02  # auto-exposure's variation between photographs
    start: datetime = datetime(2025, 6, 14, 10, 30, 0)
    truth_ortho_level: int = 0  # the true orthophoto's cells are the albedo's times 2 ** level
    seed: int = 1
    readout_ms: float = 0.0  # a rolling shutter's readout time; 0 is a global shutter
    # Photographs rendered at 1/n of their size and enlarged: the pixel count a benchmark needs for a fraction of
    # the rendering time, with no detail finer than n pixels (feature extraction at "high" halves them anyway).
    render_downscale: int = 1


@dataclass(frozen=True)
class Site:
    """Where the scene lies: its CRS and the CRS coordinates of the local frame's origin."""

    crs: pyproj.CRS
    origin: np.ndarray  # (easting, northing, altitude) of local (0, 0, 0)
    grid_north_azimuth_deg: float  # grid north measured clockwise from true north

    def to_crs(self, local: np.ndarray) -> np.ndarray:
        return np.asarray(local, dtype=np.float64) + self.origin

    def to_lonlat(self, easting: np.ndarray, northing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _transformer(crs_name(self.crs), "EPSG:4326").transform(easting, northing)


def locate(spec: SurveySpec) -> Site:
    """The UTM zone of the requested centre, the local origin at whole metres so that truth files read cleanly,
    and the grid's convergence, which turns headings on the grid into the true-north yaw a drone records."""
    crs = utm_crs(spec.longitude, spec.latitude)
    to_utm = pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    easting, northing = to_utm.transform(spec.longitude, spec.latitude)
    half = spec.scene.size_m / 2.0
    origin = np.array([round(easting - half), round(northing - half), spec.base_altitude_m])
    to_wgs84 = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    (lon0, lon1), (lat0, lat1) = to_wgs84.transform([origin[0] + half] * 2, [origin[1] + half, origin[1] + half + 1])
    azimuth, _, _ = pyproj.Geod(ellps="WGS84").inv(lon0, lat0, lon1, lat1)
    return Site(crs, origin, float(azimuth))


@dataclass(frozen=True)
class Photograph:
    name: str
    pose: Pose  # local frame
    position: np.ndarray  # true camera centre in the CRS
    gps: tuple[float, float, float]  # longitude, latitude, altitude as written (noise included)
    gps_position: np.ndarray  # the written fix in the CRS
    relative_altitude: float  # as written: above the take-off point, with the barometer's noise and drift
    time: datetime
    line: int


@dataclass(frozen=True)
class ControlPoint:
    name: str
    position: np.ndarray  # in the CRS
    observations: list[tuple[str, float, float]]  # image, pixel x, pixel y (ODM's convention)


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
    cameras_json: Path
    gcp_list: Path
    gsd_m: float  # at the flight height above the mean ground, nadir
    bounds: tuple[float, float, float, float]  # the scene in the CRS: west, south, east, north
    seconds: dict[str, float]


def generate(out_dir: Path, spec: SurveySpec, workers: int = 1) -> SurveyTruth:
    """Build the scene, fly it, write the photographs and the truth. With workers > 1 the photographs are
    rendered in that many processes (forked, so the scene is shared rather than copied); the result does not
    depend on the count, each photograph drawing its noise from its own generator."""
    seconds: dict[str, float] = {}
    clock = time.monotonic()
    rng = np.random.default_rng(spec.seed)
    scene = build_scene(spec.scene, rng)
    texture = paint_texture(scene, rng)
    model = RenderModel.build(scene, texture)
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
    paths = {name: truth_dir / f"{name}.tif" for name in ("dsm", "dtm", "orthophoto")}
    write_heights(paths["dsm"], scene.surface, site)
    write_heights(paths["dtm"], scene.ground, site)
    ortho = true_orthophoto(model)
    for _ in range(spec.truth_ortho_level):
        ortho = _halve(ortho)
    write_orthophoto(paths["orthophoto"], ortho, scene.size_m, site)
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
                       paths["dtm"], paths["orthophoto"], cameras_path, gcp_path, gsd, bounds, seconds)


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
        photo = _metadata(self.spec, self.site, shot, name, self.barometer, rng)
        _write_jpeg(self.images_dir / name, pixels, self.spec, self.lens, photo, self.site)
        seen = [(marker.name, (float(pixel[0]), float(pixel[1])))
                for marker, pixel in observe_markers(self.model, self.lens, shot.pose, self.markers)]
        return photo, seen


@dataclass(frozen=True)
class Barometer:
    takeoff_z: float  # local frame
    drift_m_per_s: float
    sigma_m: float

    def reading(self, shot: Shot, rng: np.random.Generator) -> float:
        error = self.drift_m_per_s * shot.seconds + rng.normal(0.0, self.sigma_m)
        return round(float(shot.pose.centre[2] - self.takeoff_z + error), 2)


def _metadata(spec: SurveySpec, site: Site, shot: Shot, name: str, barometer: Barometer,
              rng: np.random.Generator) -> Photograph:
    position = site.to_crs(shot.pose.centre)
    noise = rng.normal(size=3) * [spec.gps_sigma_horizontal_m, spec.gps_sigma_horizontal_m,
                                  spec.gps_sigma_vertical_m]
    lon, lat, alt = _as_written(site, position + noise)
    gps_position = np.array([*_transformer("EPSG:4326", crs_name(site.crs)).transform(lon, lat), alt])
    moment = spec.start + timedelta(seconds=shot.seconds)
    return Photograph(name, shot.pose, position, (lon, lat, alt), gps_position, barometer.reading(shot, rng),
                      moment, shot.line)


@lru_cache(maxsize=16)
def _transformer(source: str, target: str) -> pyproj.Transformer:
    return pyproj.Transformer.from_crs(source, target, always_xy=True)


def _as_written(site: Site, position: np.ndarray) -> tuple[float, float, float]:
    """Longitude, latitude and altitude rounded as EXIF stores them (millionths of a second of arc, millimetres),
    so that the truth file states exactly what the photograph says."""
    lon, lat = site.to_lonlat(position[0], position[1])
    return _round_dms(float(lon)), _round_dms(float(lat)), round(float(position[2]), 3)


def _dms(value: float) -> tuple[int, int, int]:
    """Degrees, minutes and millionths of a second of arc."""
    micro = int(round(abs(value) * 3600e6))
    degrees, rest = divmod(micro, 3600 * 10**6)
    minutes, seconds = divmod(rest, 60 * 10**6)
    return degrees, minutes, seconds


def _round_dms(value: float) -> float:
    degrees, minutes, micro = _dms(value)
    return math.copysign(degrees + minutes / 60.0 + micro / 3600e6, value)


def exif_for(spec: SurveySpec, lens: Lens, photo: Photograph) -> Image.Exif:
    """The tags a drone's camera writes: make and model, capture time, optics and the GPS fix."""
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = spec.make
    exif[ExifTags.Base.Model] = spec.model
    exif[ExifTags.Base.Orientation] = 1
    exif[ExifTags.Base.Software] = "aeromap-synthetic"
    stamp = photo.time.strftime("%Y:%m:%d %H:%M:%S")
    exif[ExifTags.Base.DateTime] = stamp
    details = exif.get_ifd(ExifTags.IFD.Exif)
    details[ExifTags.Base.DateTimeOriginal] = stamp
    details[ExifTags.Base.DateTimeDigitized] = stamp
    details[ExifTags.Base.SubsecTimeOriginal] = f"{photo.time.microsecond // 10000:02d}"
    details[ExifTags.Base.ExposureTime] = IFDRational(1, 1000)
    details[ExifTags.Base.FNumber] = IFDRational(56, 10)
    details[ExifTags.Base.ISOSpeedRatings] = 100
    details[ExifTags.Base.FocalLength] = IFDRational(int(round(spec.lens.focal_mm * 100)), 100)
    details[ExifTags.Base.FocalLengthIn35mmFilm] = spec.lens.focal_35mm
    details[ExifTags.Base.ExifImageWidth] = lens.width
    details[ExifTags.Base.ExifImageHeight] = lens.height
    # Pixels per centimetre on the sensor, as DJI states it (unit 3).
    details[ExifTags.Base.FocalPlaneXResolution] = IFDRational(int(round(lens.width / spec.lens.sensor_width_mm
                                                                          * 10 * 1000)), 1000)
    details[ExifTags.Base.FocalPlaneYResolution] = details[ExifTags.Base.FocalPlaneXResolution]
    details[ExifTags.Base.FocalPlaneResolutionUnit] = 3
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    lon, lat, alt = photo.gps
    gps[ExifTags.GPS.GPSVersionID] = b"\x02\x03\x00\x00"
    gps[ExifTags.GPS.GPSLatitudeRef] = "N" if lat >= 0 else "S"
    gps[ExifTags.GPS.GPSLatitude] = _rationals(lat)
    gps[ExifTags.GPS.GPSLongitudeRef] = "E" if lon >= 0 else "W"
    gps[ExifTags.GPS.GPSLongitude] = _rationals(lon)
    gps[ExifTags.GPS.GPSAltitudeRef] = b"\x00" if alt >= 0 else b"\x01"
    gps[ExifTags.GPS.GPSAltitude] = IFDRational(int(round(abs(alt) * 1000)), 1000)
    return exif


def _rationals(value: float) -> tuple[IFDRational, IFDRational, IFDRational]:
    degrees, minutes, micro = _dms(value)
    return IFDRational(degrees, 1), IFDRational(minutes, 1), IFDRational(micro, 10**6)


def dji_xmp(spec: SurveySpec, site: Site, photo: Photograph) -> str:
    """DJI's XMP packet: gimbal and aircraft angles (degrees; gimbal pitch -90 looks straight down; yaw clockwise
    from true north) and the heights, signed with two decimals as DJI writes them."""
    pose = photo.pose
    lon, lat, alt = photo.gps
    gimbal_yaw = _wrap(pose.yaw_deg + site.grid_north_azimuth_deg)
    flight_yaw = _wrap(pose.flight_yaw_deg + site.grid_north_azimuth_deg)
    attributes = {
        "tiff:Make": spec.make, "tiff:Model": spec.model, "dc:format": "image/jpeg",
        "drone-dji:AbsoluteAltitude": f"{alt:+.3f}", "drone-dji:RelativeAltitude": f"{photo.relative_altitude:+.2f}",
        "drone-dji:GpsLatitude": f"{lat:.9f}", "drone-dji:GpsLongitude": f"{lon:.9f}",
        "drone-dji:GimbalRollDegree": f"{pose.roll_deg:+.2f}",
        "drone-dji:GimbalYawDegree": f"{gimbal_yaw:+.2f}",
        "drone-dji:GimbalPitchDegree": f"{pose.pitch_deg - 90.0:+.2f}",
        "drone-dji:FlightRollDegree": "+0.00", "drone-dji:FlightYawDegree": f"{flight_yaw:+.2f}",
        "drone-dji:FlightPitchDegree": "+0.00",
    }
    lines = "\n".join(f'   {key}="{value}"' for key, value in attributes.items())
    return ('<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
            '<x:xmpmeta xmlns:x="adobe:ns:meta/">\n'
            ' <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
            '  <rdf:Description rdf:about="DJI Meta Data"\n'
            '   xmlns:tiff="http://ns.adobe.com/tiff/1.0/"\n'
            '   xmlns:dc="http://purl.org/dc/elements/1.1/"\n'
            '   xmlns:drone-dji="http://www.dji.com/drone-dji/1.0/"\n'
            f"{lines}>\n"
            "  </rdf:Description>\n"
            " </rdf:RDF>\n"
            "</x:xmpmeta>\n"
            '<?xpacket end="w"?>')


def _wrap(degrees: float) -> float:
    return (degrees + 180.0) % 360.0 - 180.0


def _write_jpeg(path: Path, pixels: np.ndarray, spec: SurveySpec, lens: Lens, photo: Photograph, site: Site) -> None:
    extra = {"xmp": dji_xmp(spec, site, photo).encode("utf-8")} if spec.dji_xmp else {}
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=spec.jpeg_quality, exif=exif_for(spec, lens, photo),
                                 **extra)
    path.write_bytes(buffer.getvalue())


def _north_up(grid: np.ndarray) -> np.ndarray:
    """Scene grids have row 0 in the south; GeoTIFFs start in the north."""
    return np.ascontiguousarray(grid[::-1])


def _north_up_transform(west: float, north: float, cell: float) -> Affine:
    return Affine(cell, 0.0, west, 0.0, -cell, north)


def write_heights(path: Path, heights: HeightField, site: Site) -> None:
    rows, cols = heights.z.shape
    transform = _north_up_transform(site.origin[0], site.origin[1] + rows * heights.cell, heights.cell)
    profile = {"driver": "GTiff", "width": cols, "height": rows, "count": 1, "dtype": "float32", "crs": site.crs,
               "transform": transform, "tiled": True, "compress": "deflate", "predictor": 3, "zlevel": 1}
    with rasterio.open(path, "w", **profile) as dataset:
        dataset.write(_north_up(heights.z + np.float32(site.origin[2])), 1)


def write_orthophoto(path: Path, rgb: np.ndarray, size_m: float, site: Site) -> None:
    rows, cols = rgb.shape[:2]
    cell = size_m / cols
    transform = _north_up_transform(site.origin[0], site.origin[1] + size_m, cell)
    profile = {"driver": "GTiff", "width": cols, "height": rows, "count": 3, "dtype": "uint8", "crs": site.crs,
               "transform": transform, "tiled": True, "compress": "deflate", "predictor": 2, "zlevel": 1,
               "photometric": "RGB"}
    with rasterio.open(path, "w", **profile) as dataset:
        dataset.write(np.moveaxis(_north_up(rgb), 2, 0))


def _halve(rgb: np.ndarray) -> np.ndarray:
    rows, cols = rgb.shape[0] // 2 * 2, rgb.shape[1] // 2 * 2
    blocks = rgb[:rows, :cols].reshape(rows // 2, 2, cols // 2, 2, 3).astype(np.uint16)
    return ((blocks.sum(axis=(1, 3)) + 2) // 4).astype(np.uint8)


def gcp_list_text(crs: str, points: list[ControlPoint]) -> str:
    """ODM's gcp_list.txt: the CRS, then one line per observation (x y z pixel_x pixel_y image name)."""
    lines = [crs]
    for point in points:
        x, y, z = point.position
        for image, px, py in point.observations:
            lines.append(f"{x:.3f} {y:.3f} {z:.3f} {px:.2f} {py:.2f} {image} {point.name}")
    return "\n".join(lines) + "\n"


def cameras_document(spec: SurveySpec, site: Site, lens: Lens, photographs: list[Photograph],
                     control_points: list[ControlPoint], gsd: float) -> dict:
    return {
        "crs": crs_name(site.crs),
        "local_origin": site.origin.tolist(),
        "grid_north_azimuth_deg": site.grid_north_azimuth_deg,
        "gsd_m": gsd,
        "camera": {"width": lens.width, "height": lens.height, "focal_px": lens.focal_px, "cx": lens.cx,
                   "cy": lens.cy, "k1": lens.k1, "k2": lens.k2, "p1": lens.p1, "p2": lens.p2,
                   "focal_mm": spec.lens.focal_mm, "focal_35mm": spec.lens.focal_35mm,
                   "sensor_width_mm": spec.lens.sensor_width_mm,
                   "pixel_convention": "first pixel's centre at (0, 0)",
                   "model": "OpenCV/COLMAP OPENCV (Brown: k1, k2 radial, p1, p2 tangential)"},
        "photographs": [{
            "name": p.name, "time": p.time.isoformat(), "line": p.line,
            "position": p.position.tolist(),
            "rotation_world_from_camera": p.pose.rotation.tolist(),
            "yaw_deg": p.pose.yaw_deg, "pitch_from_nadir_deg": p.pose.pitch_deg, "roll_deg": p.pose.roll_deg,
            "gps_written": {"longitude": p.gps[0], "latitude": p.gps[1], "altitude": p.gps[2]},
            "gps_position": p.gps_position.tolist(), "relative_altitude": p.relative_altitude,
        } for p in photographs],
        "control_points": [{"name": c.name, "position": c.position.tolist(),
                            "observations": [{"image": i, "x": x, "y": y} for i, x, y in c.observations]}
                           for c in control_points],
        "frames": "world: the CRS (x east, y north, z up); camera: x right, y down, z forward; "
                  "rotation_world_from_camera columns are the camera's axes in the world",
    }
