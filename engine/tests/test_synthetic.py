"""The synthetic survey generator (aeromap_engine.synthetic) and the engine's accuracy against its exact truth.

Unit tests check the generator's geometry against closed forms: the lens model's round trip, ray and height-field
intersections with a plane and a box, the control points' pixels against the checker the renderer drew, and the
metadata as the engine reads them.

The end-to-end tests fly 18 photographs (640 x 480 px, 50 m above ground, GSD 8 cm) over an 85 m scene,
process them three times (with the control points' gcp_list.txt, on the photographs' GPS alone, and on their GPS
alone with the XMP removed) and measure the DSM and the orthophoto against the truth rasters, in GSD units. Run
with `pytest -s` to see the figures. The photographs carry DJI's XMP as a DJI drone writes it (gimbal angles; the
barometer's height above the take-off point, with 0.1 m of noise and a drift of 0.05 m a minute): on GPS alone,
they are what can keep the model from leaning with the fixes' height errors (3.3 m each, which lean a plane
through these 18 fixes by several degrees). Without them, as most other cameras write their photographs, the
nadir views' average direction has to.

What is compared, and what is left out:
- only cells where both the product and the truth have data;
- not the outer 5 m of the product's area: its edge is seen by one or two photographs, and the DEM's gap filling
  extrapolates there;
- not the cells within 0.5 m of a wall or a crown's rim (where the true surface is steeper than 3:1): a vertical
  step is not resolved by a DSM at about the GSD. The dense matcher's windows (several pixels) and the DSM's
  5 x 5 median spread a step over a few cells, each of which then holds the top or the bottom height almost by
  chance; those errors of metres say nothing about the accuracy of the surfaces on either side.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import laspy
import numpy as np
import pytest
import rasterio
from rasterio.transform import Affine
from rasterio.warp import Resampling, reproject
from scipy import ndimage

from aeromap_engine import pipeline
from aeromap_engine.cloud.classes import BUILDING, GROUND, HIGH_VEGETATION, LOW_VEGETATION, MEDIUM_VEGETATION
from aeromap_engine.control_points import predict_sightings
from aeromap_engine.io.exif import exif_tags, photo_from_metadata, xmp_packet, xmp_tags
from aeromap_engine.io.gcp import parse_gcp_list
from aeromap_engine.project import Project
from aeromap_engine.synthetic import FlightSpec, LensSpec, SceneSpec, SurveySpec, SurveyTruth, generate
from aeromap_engine.synthetic.camera import Lens, Pose, footprint_extent, lawnmower, project_points
from aeromap_engine.synthetic.render import (RenderModel, intersect, max_pyramid, observe_markers, render,
                                             to_photograph)
from aeromap_engine.synthetic.scene import HeightField, Surface, build_scene
from aeromap_engine.synthetic.texture import paint_texture
from conftest import clone

SURVEY = SurveySpec(
    scene=SceneSpec(size_m=85.0),
    lens=LensSpec(width=640, height=480),
    flight=FlightSpec(height_m=50.0, forward_overlap=0.75, side_overlap=0.7, yaw_jitter_deg=2.0,
                      pitch_jitter_deg=1.0, roll_jitter_deg=1.0, position_jitter_m=0.3),
    truth_ortho_level=1,  # 5 cm: finer than the products, and a quarter of the full truth's size
    seed=1,
)
# Features at the photographs' full 640 px; depth maps at half of it ("low"), which keeps the two runs within
# a minute and a half each on two cores. No textured model, no COPC, plain GeoTIFFs: nothing measured here.
OPTIONS = [{"name": "dsm", "value": True}, {"name": "end-with", "value": "odm_orthophoto"},
           {"name": "skip-3dmodel", "value": True}, {"name": "pc-copc", "value": False},
           {"name": "cog", "value": False}, {"name": "feature-quality", "value": "ultra"},
           {"name": "min-num-features", "value": 3000}, {"name": "pc-quality", "value": "low"}]

BORDER_M = 5.0
EDGE_RADIUS_M = 0.5
STEEP = 3.0  # rise over run beyond which the true surface is a wall


# --- geometry ----------------------------------------------------------------------------------------------

LENS = Lens(640, 480, 560.0, k1=-0.08, k2=0.02, p1=0.001, p2=-0.0008)


def test_projection_round_trip_with_distortion() -> None:
    rng = np.random.default_rng(0)
    pixels = rng.uniform([0, 0], [LENS.width - 1, LENS.height - 1], size=(2000, 2))
    rays = LENS.rays(pixels)
    assert np.allclose(np.linalg.norm(rays, axis=1), 1.0)
    points = rays * rng.uniform(5, 100, size=(2000, 1))
    assert np.abs(LENS.project(points) - pixels).max() < 1e-6
    # The distortion is real: at the corners it moves the image by pixels.
    xn, yn = LENS.undistort(np.array([-LENS.cx / LENS.focal_px]), np.array([-LENS.cy / LENS.focal_px]))
    moved = np.hypot(xn[0] * LENS.focal_px + LENS.cx, yn[0] * LENS.focal_px + LENS.cy)
    assert moved > 5


def test_world_projection_matches_the_pose() -> None:
    lens = Lens(640, 480, 560.0)  # no distortion: points on the image's axes stay on them
    pose = Pose.from_angles(np.array([10.0, 20.0, 60.0]), yaw_deg=30.0, pitch_deg=0.0, roll_deg=0.0)
    # Nadir: the principal point sees the ground straight below; the image's top points along the heading.
    assert np.allclose(project_points(lens, pose, np.array([[10.0, 20.0, 0.0]]))[0], [lens.cx, lens.cy])
    ahead = np.array([[10.0 + 5 * math.sin(math.radians(30)), 20.0 + 5 * math.cos(math.radians(30)), 0.0]])
    pixel = project_points(lens, pose, ahead)[0]
    assert abs(pixel[0] - lens.cx) < 1e-6 and pixel[1] < lens.cy
    oblique = Pose.from_angles(np.array([0.0, 0.0, 50.0]), yaw_deg=0.0, pitch_deg=30.0, roll_deg=0.0)
    target = np.array([[0.0, 50.0 * math.tan(math.radians(30)), 0.0]])
    assert np.allclose(project_points(lens, oblique, target)[0], [lens.cx, lens.cy])


def _field(heights: np.ndarray, cell: float) -> tuple[HeightField, object]:
    field = HeightField(heights.astype(np.float32), cell)
    return field, max_pyramid(field)


def test_rays_meet_a_plane_where_they_cross_its_height() -> None:
    field, pyramid = _field(np.full((200, 200), 2.0), 0.1)
    rng = np.random.default_rng(1)
    angle = np.radians(rng.uniform(0, 40, 5000))
    azimuth = rng.uniform(0, 2 * np.pi, 5000)
    directions = np.stack([np.sin(angle) * np.cos(azimuth), np.sin(angle) * np.sin(azimuth), -np.cos(angle)], 1)
    origin = np.array([10.0, 10.0, 50.0])
    t = intersect(field, pyramid, origin, directions)
    assert np.abs(t - 48.0 / np.cos(angle)).max() < 1e-6


BOX = np.zeros((200, 200))
BOX[80:120, 80:120] = 5.0  # cell centres from 8.05 to 11.95 m: the walls are ramps from there to 7.95 and 12.05


def _towards(origin: np.ndarray, target: np.ndarray) -> np.ndarray:
    direction = target - origin
    return (direction / np.linalg.norm(direction))[None, :]


def test_rays_meet_a_box_on_its_roof_and_its_wall() -> None:
    field, pyramid = _field(BOX, 0.1)
    origin = np.array([10.0, 10.0, 50.0])
    assert intersect(field, pyramid, origin, np.array([[0.0, 0.0, -1.0]]))[0] == pytest.approx(45.0, abs=1e-9)
    # From the east, aimed at the ground inside the footprint: it meets the east wall, where the ray's height
    # 4 - 4 (20 - x) / 11 equals the ramp's 50 (12.05 - x).
    origin = np.array([20.0, 10.0, 4.0])
    direction = _towards(origin, np.array([9.0, 10.0, 0.0]))
    hit = origin + intersect(field, pyramid, origin, direction)[0] * direction[0]
    assert hit[0] == pytest.approx(6663.5 / 554.0, abs=1e-6)
    assert hit[2] == pytest.approx(4 - 4 * (20 - 6663.5 / 554.0) / 11, abs=1e-6)


def test_a_ray_passing_over_the_box_reaches_the_ground_beyond() -> None:
    field, pyramid = _field(BOX, 0.1)
    origin = np.array([20.0, 10.0, 10.0])
    direction = _towards(origin, np.array([7.9, 10.0, 5.2]))  # clears the roof's far edge by 0.2 m
    t = intersect(field, pyramid, origin, direction)[0]
    assert t == pytest.approx(10.0 / -direction[0, 2], abs=1e-6)
    # Lower, and the same ray meets the roof: the march did not step over it.
    lower = _towards(origin, np.array([7.9, 10.0, 4.8]))
    hit = origin + intersect(field, pyramid, origin, lower)[0] * lower[0]
    assert hit[2] == pytest.approx(5.0, abs=1e-6) and 8.0 < hit[0] < 12.0


def test_control_point_projection_matches_the_rendered_marker() -> None:
    """The pixel written to gcp_list.txt is where the checker's centre appears in the rendered photograph,
    with a tilted, rolled camera and a distorting lens."""
    rng = np.random.default_rng(5)
    spec = SceneSpec(size_m=40.0, buildings=0, trees=0, roads=0, control_points=1, marker_size_m=1.0,
                     marker_inset=0.4)
    scene = build_scene(spec, rng)
    model = RenderModel.build(scene, paint_texture(scene, rng))
    marker = scene.markers[0]
    lens = Lens(480, 360, 480.0, k1=-0.1, k2=0.03, p1=0.001, p2=-0.001)
    centre = np.array([marker.centre[0] - 8.0, marker.centre[1] - 4.0, marker.z + 16.0])
    pose = Pose.from_angles(centre, yaw_deg=20.0, pitch_deg=25.0, roll_deg=4.0)
    (seen, pixel), = observe_markers(model, lens, pose, scene.markers)
    assert seen is marker
    assert np.linalg.norm(pixel - [lens.cx, lens.cy]) > 60  # off-centre, where the distortion matters
    grey = cv2.cvtColor(to_photograph(render(model, lens, pose), rng, noise_dn=0.0), cv2.COLOR_RGB2GRAY)
    start = (pixel + [1.5, -1.0]).astype(np.float32).reshape(1, 1, 2)
    corner = cv2.cornerSubPix(grey.astype(np.float32), start, (5, 5), (-1, -1),
                              (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 100, 1e-4))
    assert np.linalg.norm(corner.reshape(2) - pixel) < 0.2


def test_flight_plan_keeps_footprints_inside_and_overlaps_as_asked() -> None:
    lens = SURVEY.lens.lens()
    flight = SURVEY.flight
    shots = lawnmower(lens, FlightSpec(height_m=50.0, forward_overlap=0.75, side_overlap=0.7), 110.0, 0.0,
                      np.random.default_rng(0))
    extent = footprint_extent(lens, flight.height_m, 0.0)
    xs = sorted({round(float(s.pose.centre[0]), 6) for s in shots})
    ys = sorted({round(float(s.pose.centre[1]), 6) for s in shots})
    assert len(shots) == 40 and len(xs) == 5 and len(ys) == 8
    assert np.diff(xs).max() <= (1 - 0.7) * extent.width + 1e-9
    assert np.diff(ys).max() <= (1 - 0.75) * extent.length + 1e-9
    assert min(xs) + extent.west >= 0 and max(xs) + extent.east <= 110.0
    headings = [s.pose.yaw_deg for s in shots]
    assert headings[0] == 0.0 and headings[8] == -180.0  # serpentine
    assert all(b.seconds > a.seconds for a, b in zip(shots, shots[1:]))


# --- the survey's files as the engine reads them -----------------------------------------------------------

@pytest.fixture(scope="module")
def small_survey(tmp_path_factory: pytest.TempPathFactory) -> SurveyTruth:
    spec = SurveySpec(scene=SceneSpec(size_m=48.0, buildings=2, trees=6, control_points=3),
                      lens=LensSpec(width=240, height=180),
                      flight=FlightSpec(height_m=20.0, forward_overlap=0.6, side_overlap=0.5, yaw_jitter_deg=3.0,
                                        pitch_jitter_deg=2.0, roll_jitter_deg=1.0, oblique_pitch_deg=10.0),
                      seed=3)
    return generate(tmp_path_factory.mktemp("small"), spec)


def test_metadata_as_the_engine_reads_it(small_survey: SurveyTruth) -> None:
    truth = small_survey
    document = json.loads(truth.cameras_json.read_text())
    assert len(truth.photographs) >= 4
    times = []
    for photo, entry in zip(truth.photographs, document["photographs"]):
        data = (truth.images_dir / photo.name).read_bytes()
        read = photo_from_metadata(photo.name, truth.lens.width, truth.lens.height, exif_tags(data),
                                   xmp_tags(xmp_packet(data)))
        lon, lat, alt = photo.gps
        assert (read.longitude, read.latitude, read.altitude) == pytest.approx((lon, lat, alt), abs=1e-9)
        assert entry["gps_written"] == {"longitude": lon, "latitude": lat, "altitude": alt}
        assert read.camera_make == "DJI" and read.focal_length_35mm == 35
        assert read.focal_ratio * truth.lens.width == pytest.approx(truth.lens.focal_px)
        assert read.sensor_width == pytest.approx(13.2, abs=0.01)
        assert read.pitch == pytest.approx(photo.pose.pitch_deg, abs=0.006)
        assert read.roll == pytest.approx(photo.pose.roll_deg, abs=0.006)
        yaw = (photo.pose.yaw_deg + truth.site.grid_north_azimuth_deg + 180) % 360 - 180
        assert (read.yaw - yaw + 180) % 360 - 180 == pytest.approx(0.0, abs=0.006)
        assert read.relative_altitude == pytest.approx(photo.relative_altitude)
        times.append(read.utc_time)
    assert times == sorted(times) and len(set(times)) == len(times)
    # The noise is there: the written fixes are not the true positions.
    offsets = np.array([p.gps_position - p.position for p in truth.photographs])
    assert np.abs(offsets).max() > 0.5


def test_truth_files_agree_with_each_other(small_survey: SurveyTruth) -> None:
    truth = small_survey
    gcps = parse_gcp_list(truth.gcp_list.read_text())
    assert gcps.crs.to_epsg() == 32632
    # A control point that no photograph shows whole and unhidden has no line in the file.
    seen = sorted(c.name for c in truth.control_points if c.observations)
    assert len(seen) >= 2 and sorted(p.name for p in gcps.points) == seen
    with rasterio.open(truth.dsm) as dsm:
        assert dsm.crs.to_epsg() == 32632
        assert tuple(dsm.bounds) == pytest.approx(truth.bounds)
        heights = dsm.read(1)
        for point in gcps.points:
            # A control point lies on the surface the DSM describes.
            row, col = dsm.index(point.xyz[0], point.xyz[1])
            assert heights[row, col] == pytest.approx(point.xyz[2], abs=0.01)
            for observation in point.observations:
                photo = next(p for p in truth.photographs if p.name == observation.image)
                local = point.xyz - truth.site.origin
                expected = project_points(truth.lens, photo.pose, local[None, :])[0]
                # Pixels are written to 0.01 px and coordinates to the millimetre (0.01 px here).
                assert np.allclose(observation.pixel, expected, atol=0.02)
    with rasterio.open(truth.orthophoto) as ortho:
        assert ortho.count == 3 and tuple(ortho.bounds) == pytest.approx(truth.bounds)


# --- accuracy of the engine's products ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def survey(tmp_path_factory: pytest.TempPathFactory) -> SurveyTruth:
    began = time.monotonic()
    truth = generate(tmp_path_factory.mktemp("survey"), SURVEY, workers=min(2, os.cpu_count() or 1))
    print(f"\n[synthetic] {len(truth.photographs)} photographs, GSD {truth.gsd_m * 100:.2f} cm, generated in "
          f"{time.monotonic() - began:.1f} s ({', '.join(f'{k} {v:.1f} s' for k, v in truth.seconds.items())})")
    return truth


XMP_SIGNATURE = b"http://ns.adobe.com/xap/1.0/\x00"


def without_xmp(jpeg: bytes) -> bytes:
    """The photograph without its XMP packet (the APP1 segment that opens with Adobe's namespace), its pixels and
    EXIF untouched: what a camera that writes EXIF only would have written."""
    kept, i = bytearray(jpeg[:2]), 2
    while jpeg[i] == 0xFF and jpeg[i + 1] != 0xDA:  # segments up to the start of the scan
        end = i + 2 + int.from_bytes(jpeg[i + 2:i + 4], "big")
        if not (jpeg[i + 1] == 0xE1 and jpeg[i + 4:end].startswith(XMP_SIGNATURE)):
            kept += jpeg[i:end]
        i = end
    return bytes(kept + jpeg[i:])


CHECKPOINTS = 3  # of the survey's 8 control points, kept out of the georeferencing to measure it


def with_checkpoints(text: str, count: int) -> str:
    """gcp_list.txt as a person would mark it, each mark up to a pixel off (0.5 px standard deviation), the last
    `count` points (by name) marked as checkpoints."""
    header, *lines = [line for line in text.splitlines() if line.strip()]
    checks = set(sorted({line.split()[6] for line in lines})[-count:])
    rng = np.random.default_rng(11)
    marked = []
    for line in lines:
        x, y, z, px, py, image, name = line.split()[:7]
        dx, dy = np.clip(rng.normal(0, 0.5, 2), -1, 1)
        check = " check" if name in checks else ""
        marked.append(f"{x} {y} {z} {float(px) + dx:.2f} {float(py) + dy:.2f} {image} {name}{check}")
    return "\n".join([header, *marked]) + "\n"


def _process(truth: SurveyTruth, root: Path, with_gcps: bool, engine_log, xmp: bool = True) -> Project:
    project = Project(root)
    if xmp:  # hard links: the engine only reads the photographs
        shutil.copytree(truth.images_dir, project.images_dir, copy_function=os.link)
    else:
        project.images_dir.mkdir(parents=True)
        for photo in truth.photographs:
            (project.images_dir / photo.name).write_bytes(without_xmp((truth.images_dir / photo.name).read_bytes()))
    if with_gcps:
        project.gcp_file.write_text(with_checkpoints(truth.gcp_list.read_text(), CHECKPOINTS))
    began = time.monotonic()
    with engine_log() as captured, contextlib.redirect_stdout(io.StringIO()):  # the log kept, progress lines not
        pipeline.run(project, OPTIONS)
        lines = captured.lines
    # What the georeferencing said (levelling by the gimbal, uncertain tilt...), for the developer.
    said = [line for line in lines if re.search(r"tilt|Ground control|GPS", line)]
    print(f"\n[synthetic] {'GCP' if with_gcps else 'GPS'}{'' if xmp else ' (EXIF only)'} run: "
          f"{time.monotonic() - began:.1f} s"
          + "".join(f"\n[synthetic]   engine: {line}" for line in dict.fromkeys(said)))
    return project


@pytest.fixture(scope="module")
def gcp_run(survey: SurveyTruth, tmp_path_factory: pytest.TempPathFactory, engine_log) -> Project:
    return _process(survey, tmp_path_factory.mktemp("gcp"), with_gcps=True, engine_log=engine_log)


@pytest.fixture(scope="module")
def gps_run(survey: SurveyTruth, tmp_path_factory: pytest.TempPathFactory, engine_log) -> Project:
    return _process(survey, tmp_path_factory.mktemp("gps"), with_gcps=False, engine_log=engine_log)


@pytest.fixture(scope="module")
def exif_only_run(survey: SurveyTruth, tmp_path_factory: pytest.TempPathFactory, engine_log) -> Project:
    """The same photographs as most cameras other than DJI's write them: EXIF GPS only, no gimbal angles and no
    barometer."""
    return _process(survey, tmp_path_factory.mktemp("exif"), with_gcps=False, engine_log=engine_log, xmp=False)


@dataclass(frozen=True)
class Raster:
    values: np.ndarray  # (bands, rows, cols)
    transform: Affine
    valid: np.ndarray  # (rows, cols)

    @property
    def cell(self) -> float:
        return abs(self.transform.a)

    def centres(self) -> tuple[np.ndarray, np.ndarray]:
        rows, cols = np.mgrid[0:self.values.shape[1], 0:self.values.shape[2]]
        return self.to_crs(cols + 0.5, rows + 0.5)

    def to_crs(self, col: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self.transform
        return t.c + col * t.a, t.f + row * t.e

    def to_grid(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self.transform
        return (x - t.c) / t.a, (y - t.f) / t.e


def read_raster(path: Path) -> Raster:
    with rasterio.open(path) as dataset:
        values = dataset.read()
        if dataset.count == 4:
            valid = values[3] == 255
        elif dataset.nodata is not None:
            valid = values[0] != dataset.nodata
        else:
            valid = dataset.dataset_mask() > 0
        assert dataset.transform.b == 0 and dataset.transform.d == 0, "north-up rasters only"
        return Raster(values, dataset.transform, valid)


def sample(raster: Raster, x: np.ndarray, y: np.ndarray, band: int = 0) -> np.ndarray:
    """Bilinear samples of a north-up raster at CRS coordinates (NaN outside it)."""
    col, row = raster.to_grid(x, y)
    col, row = col - 0.5, row - 0.5
    grid = raster.values[band].astype(np.float32)
    values = ndimage.map_coordinates(grid, [row, col], order=1, mode="nearest")
    outside = (col < 0) | (row < 0) | (col > grid.shape[1] - 1) | (row > grid.shape[0] - 1)
    return np.where(outside, np.nan, values)


def near_walls(truth_dsm: Raster) -> Raster:
    """1 within EDGE_RADIUS_M of where the true surface is steeper than STEEP, on the truth's grid."""
    gy, gx = np.gradient(truth_dsm.values[0].astype(np.float32), truth_dsm.cell)
    radius = int(round(EDGE_RADIUS_M / truth_dsm.cell))
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    mask = cv2.dilate((np.hypot(gx, gy) > STEEP).astype(np.uint8), disc)
    return Raster(mask[None].astype(np.float32), truth_dsm.transform, np.ones(mask.shape, bool))


def compared_cells(product: Raster, walls: Raster) -> np.ndarray:
    """The product's cells that are measured (module docstring)."""
    inner = ndimage.distance_transform_edt(product.valid) * product.cell > BORDER_M
    x, y = product.centres()
    wall = sample(walls, x, y)
    return inner & np.isfinite(wall) & (wall < 0.5)


@dataclass(frozen=True)
class DsmResiduals:
    x: np.ndarray
    y: np.ndarray
    dz: np.ndarray  # product minus truth
    share: float  # of the product's cells that were compared


def dsm_residuals(project: Project, truth: SurveyTruth, shift: tuple[float, float] = (0.0, 0.0)) -> DsmResiduals:
    """Product minus truth at the compared cells, the truth displaced by shift (metres east, north)."""
    product = read_raster(project.path("odm_dem", "dsm.tif"))
    true_dsm = read_raster(truth.dsm)
    cells = compared_cells(product, near_walls(true_dsm))
    x, y = product.centres()
    expected = sample(true_dsm, x[cells] - shift[0], y[cells] - shift[1])
    dz = product.values[0][cells] - expected
    keep = np.isfinite(dz)
    return DsmResiduals(x[cells][keep], y[cells][keep], dz[keep], float(keep.sum() / product.valid.sum()))


def plane_tilt_deg(residuals: DsmResiduals) -> float:
    """The slope of the plane through the residuals, fitted to those within 3 MADs of the median so that the
    few large errors (trees, gaps) do not lean on it."""
    dz = residuals.dz
    mad = np.median(np.abs(dz - np.median(dz)))
    keep = np.abs(dz - np.median(dz)) < 3 * 1.4826 * mad + 1e-6
    x, y = residuals.x[keep], residuals.y[keep]
    design = np.stack([x - x.mean(), y - y.mean(), np.ones(len(x))], axis=1)
    (a, b, _), *_ = np.linalg.lstsq(design, dz[keep], rcond=None)
    return math.degrees(math.atan(math.hypot(a, b)))


PATCH = 64  # px of the orthophoto: about 4.6 m, enough texture for a sharp correlation peak


def ortho_shifts(project: Project, truth: SurveyTruth) -> tuple[np.ndarray, np.ndarray]:
    """Local displacements (metres east, north) of the orthophoto against the true one, by phase correlation of
    64 px patches, with the patches' centres. The truth is resampled (area average) onto the product's grid."""
    product = read_raster(project.path("odm_orthophoto", "odm_orthophoto.tif"))
    true_ortho = read_raster(truth.orthophoto)
    expected = np.zeros((3, *product.valid.shape), np.uint8)
    with rasterio.open(truth.orthophoto) as source:
        reproject(true_ortho.values, expected, src_transform=true_ortho.transform, src_crs=source.crs,
                  dst_transform=product.transform, dst_crs=source.crs, resampling=Resampling.average)
    grey_product = cv2.cvtColor(np.moveaxis(product.values[:3], 0, 2), cv2.COLOR_RGB2GRAY).astype(np.float32)
    grey_truth = cv2.cvtColor(np.moveaxis(expected, 0, 2), cv2.COLOR_RGB2GRAY).astype(np.float32)
    cells = compared_cells(product, near_walls(read_raster(truth.dsm)))
    window = cv2.createHanningWindow((PATCH, PATCH), cv2.CV_32F)
    shifts, centres = [], []
    rows, cols = cells.shape
    for r in range(0, rows - PATCH, PATCH):
        for c in range(0, cols - PATCH, PATCH):
            # Whole patches of measured cells (walls excluded up to a tenth: roofs are part of the map).
            if not product.valid[r:r + PATCH, c:c + PATCH].all() or cells[r:r + PATCH, c:c + PATCH].mean() < 0.9:
                continue
            # Contiguous copies: OpenCV's phase correlation misreads a view's strided rows.
            (dx, dy), response = cv2.phaseCorrelate(grey_truth[r:r + PATCH, c:c + PATCH].copy(),
                                                    grey_product[r:r + PATCH, c:c + PATCH].copy(), window)
            if response > 0.15:
                shifts.append((dx * product.cell, -dy * product.cell))  # rows run south
                centres.append(product.to_crs(c + PATCH / 2, r + PATCH / 2))
    return np.array(shifts), np.array(centres)


# In `make test-long` (CI's time on a slower machine): the synthetic survey's two full runs.
@pytest.mark.long
def test_dsm_with_control_points(gcp_run: Project, survey: SurveyTruth) -> None:
    residuals = dsm_residuals(gcp_run, survey)
    gsd = survey.gsd_m
    error = float(np.median(np.abs(residuals.dz))) / gsd
    print(f"\n[synthetic] DSM with GCPs: median |error| {error:.2f} GSD ({error * gsd * 100:.1f} cm), median "
          f"signed {np.median(residuals.dz) * 100:+.1f} cm, 90th percentile "
          f"{np.percentile(np.abs(residuals.dz), 90) / gsd:.2f} GSD, tilt {plane_tilt_deg(residuals):.3f} deg, "
          f"{residuals.share:.0%} of the DSM compared")
    assert residuals.share > 0.5
    assert error <= 1.5


# Truth classes the point classes are compared with, and the distance from another class within which a point
# is not judged (walls, eaves, the blur of the dense cloud at an edge).
TRUTH_CLASSES = {"ground": (Surface.GRASS, Surface.SOIL, Surface.ROAD), "building": (Surface.ROOF,),
                 "vegetation": (Surface.TREE,)}
LAS_CLASSES = {"ground": (GROUND,), "building": (BUILDING,),
               "vegetation": (LOW_VEGETATION, MEDIUM_VEGETATION, HIGH_VEGETATION)}
CLASS_EDGE_M = 0.75


def true_classes_at(truth: SurveyTruth, xy: np.ndarray) -> np.ndarray:
    """The truth's class name index (order of TRUTH_CLASSES) at each point, -1 near an edge between classes."""
    with rasterio.open(truth.classes) as source:
        surface, transform = source.read(1), source.transform
    kinds = np.full(surface.shape, -1, np.int8)
    margin = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * round(CLASS_EDGE_M / transform.a) + 1,) * 2)
    for index, codes in enumerate(TRUTH_CLASSES.values()):
        kinds[cv2.erode(np.isin(surface, codes).astype(np.uint8), margin).astype(bool)] = index
    cols, rows = ~transform * (xy[:, 0], xy[:, 1])
    rows, cols = np.floor(rows).astype(int), np.floor(cols).astype(int)
    inside = (rows >= 0) & (rows < surface.shape[0]) & (cols >= 0) & (cols < surface.shape[1])
    found = np.full(len(xy), -1, np.int8)
    found[inside] = kinds[rows[inside], cols[inside]]
    return found


# In `make test-long` (CI's time on a slower machine): the synthetic survey's two full runs.
@pytest.mark.long
def test_point_classes_match_the_scene(gcp_run: Project, survey: SurveyTruth, tmp_path: Path) -> None:
    """pc-classify on the rendered scene: every point of the georeferenced cloud, its class against the scene's
    class under it (away from the edges between classes)."""
    project = clone(gcp_run, tmp_path / "classified")
    options = {o["name"]: o["value"] for o in OPTIONS} | {"pc-classify": True, "end-with": "odm_georeferencing"}
    pipeline.run(project, [{"name": name, "value": value} for name, value in options.items()])
    cloud = laspy.read(project.georeferenced_model("laz"))
    truth = true_classes_at(survey, np.c_[cloud.x, cloud.y])
    found = np.asarray(cloud.classification)
    figures = {}
    for index, (name, codes) in enumerate(TRUTH_CLASSES.items()):
        said, true = np.isin(found, LAS_CLASSES[name]) & (truth >= 0), truth == index
        figures[name] = ((said & true).sum() / max(said.sum(), 1), (said & true).sum() / max(true.sum(), 1))
    print("\n[synthetic] point classes (precision, recall): " + ", ".join(
        f"{name} {p:.3f} / {r:.3f}" for name, (p, r) in figures.items())
          + f"; {np.mean(truth >= 0):.0%} of {len(truth)} points judged")
    assert min(figures["building"]) >= 0.9
    assert min(figures["ground"]) >= 0.95
    assert project.read_stats()["classification"]["building"] > 0


# In `make test-long` (CI's time on a slower machine): the synthetic survey's two full runs.
@pytest.mark.long
def test_checkpoints_measure_the_model_they_took_no_part_in(gcp_run: Project, survey: SurveyTruth) -> None:
    """Three of the eight points marked as checkpoints, every mark up to a pixel off: the other five place the
    model, the three measure it within 1.5 GSD horizontally and 2 GSD vertically (root mean square), in
    stats.json and ground_control_points.geojson."""
    reconstruction = json.loads(gcp_run.stats_file.read_text())["reconstruction"]
    control, checks = reconstruction["gcp_residual_m"], reconstruction["checkpoint_residual_m"]
    checked = {point["name"] for point in checks["points"]}
    assert len(checked) == CHECKPOINTS and not checks["not_measured"]
    assert not checked & {point["name"] for point in control["points"]}
    gsd = survey.gsd_m
    print(f"\n[synthetic] checkpoints RMSE {checks['rmse_horizontal'] / gsd:.2f} GSD horizontal, "
          f"{checks['rmse_vertical'] / gsd:.2f} GSD vertical")
    assert checks["rmse_horizontal"] <= 1.5 * gsd and checks["rmse_vertical"] <= 2 * gsd
    features = json.loads(gcp_run.control_points_geojson.read_text())["features"]
    assert {f["properties"]["id"] for f in features if f["properties"]["checkpoint"]} == checked


def predicted_misses(truth: SurveyTruth, tmp: Path, model: Project | None, leave_one_out: bool = False
                     ) -> tuple[list[float], int]:
    """How far the ground-control editor's predictions fall from each target's true pixel (the truth's
    observations), and how many observations were not offered at all. From the model's files when given (with
    leave_one_out, each photograph's spot predicted from the point's true marks in the others), else from the
    photographs' GPS."""
    gcps = parse_gcp_list(truth.gcp_list.read_text())
    misses, unseen = [], 0
    for point in gcps.points:
        for observation in point.observations:
            marks = [{"image": o.image, "x": o.pixel[0], "y": o.pixel[1]}
                     for o in point.observations if leave_one_out and o.image != observation.image]
            request = tmp / "points.json"
            request.write_text(json.dumps({"crs": gcps.crs.to_string(), "points": [
                {"name": point.name, "x": point.xyz[0], "y": point.xyz[1], "z": point.xyz[2], "marks": marks}]}))
            files = ((model.path("cameras.json"), model.report_dir / "shots.geojson", None) if model
                     else (None, None, truth.images_dir))
            spots = {s["image"]: (s["x"], s["y"]) for s in predict_sightings(request, *files)["points"][0]["sightings"]}
            if observation.image not in spots:
                unseen += 1
                continue
            misses.append(float(np.hypot(*np.subtract(spots[observation.image], observation.pixel))))
    return misses, unseen


def test_editor_predicts_targets_from_the_gps_before_processing(small_survey: SurveyTruth, tmp_path: Path) -> None:
    """From GPS fixes metres off and the gimbal's angles: every target's photograph offered, the spot within a
    fifth of the frame (tens of pixels), enough to zoom on."""
    misses, unseen = predicted_misses(small_survey, tmp_path, None)
    side = max(small_survey.lens.width, small_survey.lens.height)
    print(f"\n[synthetic] GPS predictions: median {np.median(misses):.1f} px, worst {max(misses):.1f} px of {side}")
    assert unseen == 0 and max(misses) < 0.2 * side and np.median(misses) < 0.15 * side


# In `make test-long` (CI's time on a slower machine): the synthetic survey's two full runs.
@pytest.mark.long
def test_editor_predicts_targets_from_the_model(gcp_run: Project, survey: SurveyTruth, tmp_path: Path) -> None:
    """From the solved model: the surveyed coordinates within 2 px of the target, and within 1 px once the point is
    placed by its marks in the other photographs."""
    surveyed, unseen = predicted_misses(survey, tmp_path, gcp_run)
    marked, _ = predicted_misses(survey, tmp_path, gcp_run, leave_one_out=True)
    print(f"\n[synthetic] model predictions: worst {max(surveyed):.2f} px from the survey, {max(marked):.2f} px "
          f"from the other marks ({unseen} not offered)")
    assert unseen == 0 and max(surveyed) < 2 and max(marked) < 1


def gps_noise_tilt_deg(truth: SurveyTruth) -> float:
    """The tilt of the plane through the written fixes' height errors: what a model fitted to the fixes'
    heights would lean by."""
    true = np.array([p.position for p in truth.photographs])
    errors = np.array([p.gps_position - p.position for p in truth.photographs])
    design = np.stack([true[:, 0] - true[:, 0].mean(), true[:, 1] - true[:, 1].mean(), np.ones(len(true))], axis=1)
    (a, b, _), *_ = np.linalg.lstsq(design, errors[:, 2], rcond=None)
    return math.degrees(math.atan(math.hypot(a, b)))


@dataclass(frozen=True)
class GpsRunErrors:
    """A run on GPS alone against the truth, once one constant shift is removed: horizontally the orthophoto's
    median displacement (the DSM comes from the same model), vertically the median height difference after it."""
    shift: tuple[float, float, float]  # metres east, north, up
    dsm_error_gsd: float  # median |height difference|
    dsm_tilt_deg: float
    ortho_spread_gsd: float  # median local displacement of the orthophoto about its median
    patches: int
    share: float  # of the DSM compared


def gps_run_errors(project: Project, truth: SurveyTruth) -> GpsRunErrors:
    shifts, _ = ortho_shifts(project, truth)
    horizontal = np.median(shifts, axis=0) if len(shifts) else np.zeros(2)
    residuals = dsm_residuals(project, truth, (float(horizontal[0]), float(horizontal[1])))
    vertical = float(np.median(residuals.dz))
    gsd = truth.gsd_m
    spread = float(np.median(np.hypot(*(shifts - horizontal).T))) / gsd if len(shifts) else float("nan")
    return GpsRunErrors((float(horizontal[0]), float(horizontal[1]), vertical),
                        float(np.median(np.abs(residuals.dz - vertical))) / gsd, plane_tilt_deg(residuals), spread,
                        len(shifts), residuals.share)


def report_gps_run(label: str, errors: GpsRunErrors, truth: SurveyTruth) -> None:
    east, north, up = errors.shift
    print(f"\n[synthetic] DSM on {label}: shift ({east:+.2f}, {north:+.2f}, {up:+.2f}) m; after it, median |error| "
          f"{errors.dsm_error_gsd:.2f} GSD ({errors.dsm_error_gsd * truth.gsd_m * 100:.1f} cm), tilt "
          f"{errors.dsm_tilt_deg:.3f} deg (the fixes' height errors lean {gps_noise_tilt_deg(truth):.2f} deg); "
          f"orthophoto's local displacement about its median {errors.ortho_spread_gsd:.2f} GSD over "
          f"{errors.patches} patches")


@pytest.mark.long
def test_dsm_on_gps_alone(gps_run: Project, survey: SurveyTruth) -> None:
    errors = gps_run_errors(gps_run, survey)
    report_gps_run("GPS alone", errors, survey)
    assert errors.share > 0.5
    assert errors.dsm_error_gsd <= 3.0


@pytest.mark.long
def test_dsm_and_orthophoto_on_gps_without_gimbal_or_barometer(exif_only_run: Project, survey: SurveyTruth) -> None:
    """Without the XMP, the heights are the GPS's own (3.3 m of noise each) and no gimbal angle says where the
    vertical is: fitted to the heights, the model leaned with their noise by about 5.6 degrees (DSM 18 GSD off,
    orthophoto 8.7 GSD). The nadir photographs' viewing directions average to vertical and level it as the
    barometer does."""
    errors = gps_run_errors(exif_only_run, survey)
    report_gps_run("EXIF GPS alone", errors, survey)
    assert errors.share > 0.5 and errors.patches >= 50
    assert errors.dsm_error_gsd <= 3.0
    assert errors.ortho_spread_gsd <= 1.0
    # The tilt's stated uncertainty is the views', not the several degrees the heights alone would leave.
    assert exif_only_run.read_stats()["reconstruction"]["gps_uncertainty"]["tilt_deg"] <= 1.0


# In `make test-long` (CI's time on a slower machine): the synthetic survey's two full runs.
@pytest.mark.long
def test_orthophoto_planimetric_error(gcp_run: Project, survey: SurveyTruth) -> None:
    shifts, _ = ortho_shifts(gcp_run, survey)
    gsd = survey.gsd_m
    assert len(shifts) >= 50, "too few textured patches to measure"
    distances = np.hypot(shifts[:, 0], shifts[:, 1]) / gsd
    median_shift = np.median(shifts, axis=0)
    print(f"\n[synthetic] orthophoto with GCPs: median local displacement {np.median(distances):.2f} GSD, 90th "
          f"percentile {np.percentile(distances, 90):.2f} GSD over {len(shifts)} patches; median offset "
          f"({median_shift[0] * 100:+.1f}, {median_shift[1] * 100:+.1f}) cm")
    assert np.median(distances) <= 1.0
