"""Photometric corrections (photometry/): the estimate on observations made with known gains and fall-off, and
the orthophoto of Brighton Beach photographs given a known vignetting and different exposures, with and without
the corrections, measured across its seamlines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import rasterio

from aeromap_engine import photometry, pipeline
from aeromap_engine.photometry import Frame, Observations, estimate
from aeromap_engine.project import Project
from aeromap_engine.ortho.render import NO_SOURCE
from aeromap_engine.synthetic.seams import falloff_at, seam_figures, spoil

DATASET = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "brighton_beach" / "images"
SUBSET = ("DJI_0027", "DJI_0028", "DJI_0029", "DJI_0030", "DJI_0031", "DJI_0032")
# Applied to the photographs: a fall-off to 0.55 at the corners, and exposures a third apart, a little
# different per band (B, G, R).
FALLOFF = (-0.7, 0.1, 0.0)
GAINS = np.array([[0.75, 0.78, 0.74], [1.25, 1.22, 1.28], [0.9, 0.92, 0.88], [1.3, 1.28, 1.33],
                  [0.8, 0.82, 0.79], [1.1, 1.08, 1.12]])
OPTIONS = [{"name": "feature-quality", "value": "ultra"}, {"name": "fast-orthophoto", "value": True},
           {"name": "skip-3dmodel", "value": True}]


def synthetic_observations(rng: np.random.Generator, gains: np.ndarray, falloff: tuple[float, float, float],
                           points: int = 5000, views: int = 4) -> Observations:
    image = np.concatenate([rng.choice(len(gains), views, replace=False) for _ in range(points)])
    point = np.repeat(np.arange(points), views)
    radius = rng.uniform(0, 1, len(image))
    radiance = rng.uniform(40, 150, (points, 3))
    colour = radiance[point] * gains[image] * falloff_at(falloff, radius)[:, None] * np.exp(rng.normal(0, 0.01, (len(image), 3)))
    occluded = rng.random(len(image)) < 0.03  # a car, a shadow, a glint: other ground than the point's
    colour[occluded] *= rng.uniform(0.3, 2.0, (int(occluded.sum()), 1))
    return Observations(image, point, radius, np.clip(colour, 0, 255))


def test_the_estimate_finds_the_gains_and_the_falloff_that_made_the_observations() -> None:
    rng = np.random.default_rng(0)
    gains = rng.uniform(0.7, 1.3, (40, 1)) * rng.uniform(0.9, 1.1, (40, 3))  # exposure, white balance
    observations = synthetic_observations(rng, gains, FALLOFF)
    names = [f"{n}.jpg" for n in range(len(gains))]
    found = estimate(observations, names, ["camera"] * len(names), {"camera": Frame(4000, 3000, 2000.0, 1500.0)})
    assert found is not None
    relative = gains / np.exp(np.log(gains).mean(axis=0))  # the gains' geometric mean is held at 1
    assert np.abs(np.array([found.gains[n] for n in names]) / relative - 1).max() < 0.01
    radii = np.linspace(0, 1, 11)
    assert np.abs(found.vignetting("camera", radii) / falloff_at(FALLOFF, radii) - 1).max() < 0.01


def test_groups_that_share_no_point_keep_their_own_exposure() -> None:
    """A survey in two parts that no point ties together, one seen by three times the points of the other:
    nothing compares the two parts' exposures, so each keeps its own (the gains' geometric mean is 1 in each).
    One mean over both let the solver light one part up and darken the other to the gains' limits."""
    rng = np.random.default_rng(2)
    gains = rng.uniform(0.8, 1.25, (12, 3))
    west = synthetic_observations(rng, gains[:6], FALLOFF, points=3000)
    east = synthetic_observations(rng, gains[6:], FALLOFF, points=1000)
    observations = Observations(np.concatenate([west.image, east.image + 6]),
                                np.concatenate([west.point, east.point + 3000]),
                                np.concatenate([west.radius, east.radius]), np.concatenate([west.colour, east.colour]))
    names = [f"{n}.jpg" for n in range(12)]
    found = estimate(observations, names, ["camera"] * 12, {"camera": Frame(4000, 3000, 2000.0, 1500.0)})
    estimated = np.array([found.gains[n] for n in names])
    for part in (slice(0, 6), slice(6, 12)):
        relative = gains[part] / np.exp(np.log(gains[part]).mean(axis=0))
        assert np.abs(estimated[part] / relative - 1).max() < 0.02


def test_bands_that_no_exposure_relates_get_no_correction() -> None:
    """A false-colour palette (a thermal camera's) maps one temperature to colours that no gain relates from one
    photograph to the next: bands whose gains would lie far apart get no correction, rather than other colours."""
    rng = np.random.default_rng(3)
    gains = np.column_stack([np.linspace(0.5, 2.0, 10), np.linspace(2.0, 0.5, 10), np.ones(10)])
    observations = synthetic_observations(rng, gains, FALLOFF)
    names = [f"{n}.jpg" for n in range(10)]
    assert estimate(observations, names, ["camera"] * 10, {"camera": Frame(640, 512, 320.0, 256.0)}) is None


def test_too_few_shared_points_give_no_estimate_and_a_brighter_edge_no_vignetting() -> None:
    rng = np.random.default_rng(1)
    names = [f"{n}.jpg" for n in range(10)]
    frames = {"camera": Frame(100, 100, 50.0, 50.0)}
    few = synthetic_observations(rng, np.ones((10, 3)), FALLOFF, points=50)
    assert estimate(few, names, ["camera"] * 10, frames) is None
    brighter = synthetic_observations(rng, np.ones((10, 3)), (0.5, 0.0, 0.0))  # no lens does this
    assert estimate(brighter, names, ["camera"] * 10, frames).falloff == {}


def test_correcting_a_photograph_divides_out_its_gain_and_falloff() -> None:
    frame = Frame(400, 300, 200.0, 150.0)
    corrections = photometry.Photometry({"a.jpg": (0.8, 1.0, 1.25)}, {"a.jpg": "c"}, {"c": FALLOFF}, {"c": frame})
    y, x = np.mgrid[0:150, 0:200]  # half the stored size: the radius follows the image's scale
    radius = frame.radius((x + 0.5) * 2, (y + 0.5) * 2)
    image = np.rint(np.clip(100 * falloff_at(FALLOFF, radius)[..., None] * np.array([0.8, 1.0, 1.25]), 0, 255)).astype(np.uint8)
    corrected = corrections.correct(image, "a.jpg")
    assert np.abs(corrected.astype(float) - 100).max() <= 1.5
    assert corrections.correct(image, "unknown.jpg") is image


# --- Brighton Beach, vignetted and unevenly exposed ---------------------------------------------------------

def photographs(folder: Path, spoilt: bool) -> None:
    """The subset at a quarter of its size, with the known fall-off and gains applied when `spoilt`."""
    sources = [DATASET / f"{name}.JPG" for name in SUBSET]
    spoil(sources, folder, 4, FALLOFF if spoilt else None, GAINS if spoilt else None)


@pytest.fixture(scope="module")
def spoilt(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The spoilt photographs through the orthophoto (on a sparse surface), with the corrections."""
    project = Project(tmp_path_factory.mktemp("spoilt"))
    photographs(project.images_dir, spoilt=True)
    pipeline.run(project, OPTIONS)
    return project


def test_the_estimate_on_brighton_finds_the_applied_gains_and_falloff(spoilt: Project,
                                                                      tmp_path: Path) -> None:
    clean = Project(tmp_path / "clean")
    photographs(clean.images_dir, spoilt=False)
    pipeline.run(clean, OPTIONS + [{"name": "end-with", "value": "opensfm"}])
    found, natural = photometry.load(spoilt.photometry_file), photometry.load(clean.photometry_file)
    # What the photographs had of their own is in both estimates: their ratio is what was applied.
    ratio = np.array([np.array(found.gains[f"{n}.JPG"]) / natural.gains[f"{n}.JPG"] for n in SUBSET])
    applied = GAINS / np.exp(np.log(GAINS).mean(axis=0))
    assert np.abs(ratio / applied - 1).max() < 0.06
    radii = np.linspace(0, 1, 6)
    measured = (found.vignetting(found.cameras[f"{SUBSET[0]}.JPG"], radii)
                / natural.vignetting(natural.cameras[f"{SUBSET[0]}.JPG"], radii))
    assert np.abs(measured / falloff_at(FALLOFF, radii) - 1).max() < 0.06
    stats = json.loads(spoilt.stats_file.read_text())["reconstruction"]["photometry"]
    assert stats["images"] == len(SUBSET)
    assert found.hotspot is None and natural.hotspot is None  # no hotspot in these frames: none is invented


def test_the_corrections_take_the_steps_out_of_the_seams(spoilt: Project, tmp_path: Path) -> None:
    with rasterio.open(spoilt.orthophoto_sources) as dataset:
        sources = dataset.read(1)
    assert len(np.unique(sources[sources != NO_SOURCE])) >= 4  # the orthophoto is a mosaic of several photographs
    off = Project(tmp_path / "off")
    shutil.copytree(spoilt.root, off.root, symlinks=True)
    pipeline.run(off, OPTIONS + [{"name": "photometric-correction", "value": False},
                                 {"name": "rerun-from", "value": "odm_orthophoto"}])
    seam_on, inside_on = seam_figures(spoilt)
    seam_off, inside_off = seam_figures(off)
    print(f"\nseam step against inside one photograph: corrected {seam_on:.3f} / {inside_on:.3f}, "
          f"uncorrected {seam_off:.3f} / {inside_off:.3f}")
    assert seam_on <= inside_on  # across a seam no more than inside a photograph
    # The uncorrected photographs' seams show, though the seamlines run where they differ least and the
    # brightness crosses them over a wide band: more than inside a photograph, and far more than corrected.
    assert seam_off > 1.1 * inside_off
    assert seam_off / inside_off > 1.4 * seam_on / inside_on


SUNLIGHT = np.array([np.sin(np.radians(15.0)) * np.cos(np.radians(40.0)),
                     np.sin(np.radians(15.0)) * np.sin(np.radians(40.0)), -np.cos(np.radians(15.0))])
HOTSPOT = (0.2, 0.25, 0.3)  # BGR log brightening at the antisolar point: strongest in the reddest band


def rays_near_nadir(rng: np.random.Generator, count: int, reach_deg: float = 30.0) -> np.ndarray:
    tilt = np.radians(reach_deg) * np.sqrt(rng.random(count))
    turn = rng.uniform(0, 2 * np.pi, count)
    return np.stack([np.sin(tilt) * np.cos(turn), np.sin(tilt) * np.sin(turn), -np.cos(tilt)], axis=1)


def estimate_along_rays(plain: Observations, rays: np.ndarray, log_brightening: np.ndarray | None
                        ) -> photometry.Photometry | None:
    """The estimate from the observations brightened along their rays, each photograph looking straight down."""
    names = [f"{n}.jpg" for n in range(int(plain.image.max()) + 1)]
    colour = plain.colour if log_brightening is None else np.clip(plain.colour * np.exp(log_brightening), 0, 255)
    return estimate(Observations(plain.image, plain.point, plain.radius, colour, rays), names,
                    ["camera"] * len(names), {"camera": Frame(4000, 3000, 2000.0, 1500.0, 3000.0)},
                    {name: tuple(np.eye(3).ravel()) for name in names})


def test_a_hotspot_in_the_observations_is_found_beside_the_gains() -> None:
    """Observations brightened towards the antisolar point (a kernel of 6 degrees) give back the sunlight's
    direction within a quarter of a degree, the width and the amplitudes, and the gains as well as without a hotspot; the same
    observations without it give none."""
    rng = np.random.default_rng(5)
    gains = rng.uniform(0.7, 1.3, (40, 1)) * np.ones((1, 3))
    plain = synthetic_observations(rng, gains, (0.0, 0.0, 0.0), points=3000)
    rays = rays_near_nadir(rng, len(plain.image))
    found = estimate_along_rays(plain, rays, photometry.Hotspot(tuple(SUNLIGHT), 6.0, HOTSPOT).log_factor(rays))
    assert found.hotspot is not None and found.hotspot.width_deg == 6.0 and found.view_slope is None
    assert np.degrees(np.arccos(np.dot(found.hotspot.direction, SUNLIGHT))) < 0.25
    assert np.abs(np.array(found.hotspot.amplitude) - HOTSPOT).max() < 0.01
    relative = gains / np.exp(np.log(gains).mean(axis=0))
    assert np.abs(np.array([found.gains[f"{n}.jpg"] for n in range(len(gains))]) / relative - 1).max() < 0.015
    assert len(found.rotations) == len(gains)

    without = estimate_along_rays(plain, rays, None)
    assert without.hotspot is None and without.rotations == {}


def test_correcting_a_photograph_divides_out_its_hotspot() -> None:
    """A uniform photograph looking straight down, the sunlight along the ray of one of its pixels: that pixel is
    darkened by the whole brightening, pixels far from it not at all."""
    frame = Frame(400, 300, 200.0, 150.0, 300.0)
    rotation = np.diag([1.0, -1.0, -1.0])  # camera x east, y south, z down
    ray = rotation @ np.array([(300.5 - 200.0) / 300.0, (100.5 - 150.0) / 300.0, 1.0])
    correction = photometry.Photometry({"a.jpg": (1.0, 1.0, 1.0)}, {"a.jpg": "camera"}, {}, {"camera": frame},
                                       photometry.Hotspot(tuple(ray / np.linalg.norm(ray)), 6.0, HOTSPOT),
                                       {"a.jpg": tuple(rotation.ravel())})
    corrected = correction.correct(np.full((300, 400, 3), 200, np.uint8), "a.jpg").astype(float)
    np.testing.assert_allclose(corrected[100, 300], 200 / np.exp(HOTSPOT), atol=1.0)
    np.testing.assert_allclose(corrected[290, 10], 200, atol=1.0)


# BGR view slopes: looking 30 degrees east of north-east-ward tilts brightens, most in the reddest band.
SLOPE_DIRECTION = np.array([np.cos(np.radians(30.0)), np.sin(np.radians(30.0)), 0.0])
SLOPES = np.outer((0.25, 0.3, 0.35), SLOPE_DIRECTION)


def test_a_view_slope_in_the_observations_is_found_beside_the_gains_and_the_hotspot() -> None:
    """Observations brighter along rays tilted one way (and towards the antisolar point) give back the slope of
    every band within 0.02 per unit of tilt, the hotspot and the gains; without it, none is kept."""
    rng = np.random.default_rng(6)
    gains = rng.uniform(0.7, 1.3, (40, 1)) * np.ones((1, 3))
    plain = synthetic_observations(rng, gains, FALLOFF, points=3000)
    rays = rays_near_nadir(rng, len(plain.image))
    bright = (photometry.ViewSlope(tuple(map(tuple, SLOPES))).log_factor(rays)
              + photometry.Hotspot(tuple(SUNLIGHT), 6.0, HOTSPOT).log_factor(rays))
    found = estimate_along_rays(plain, rays, bright)
    assert found.view_slope is not None and found.hotspot is not None
    np.testing.assert_allclose(found.view_slope.slopes, SLOPES, atol=0.02)
    assert np.degrees(np.arccos(np.dot(found.hotspot.direction, SUNLIGHT))) < 1.0
    relative = gains / np.exp(np.log(gains).mean(axis=0))
    assert np.abs(np.array([found.gains[f"{n}.jpg"] for n in range(len(gains))]) / relative - 1).max() < 0.015
    radii = np.linspace(0, 1, 11)
    assert np.abs(found.vignetting("camera", radii) / falloff_at(FALLOFF, radii) - 1).max() < 0.015
    red_at_20_deg = np.exp(0.35 * np.sin(np.radians(20)))
    assert found.figures()["view_slope"]["brightening_at_20_deg"][0] == pytest.approx(red_at_20_deg, abs=0.01)

    without = estimate_along_rays(plain, rays, None)
    assert without.view_slope is None and without.hotspot is None


def test_a_view_slope_that_one_band_shows_far_more_is_not_corrected() -> None:
    """Water reflecting the sky brightens blue with the viewing angle far more than the other bands: such a
    slope is no property of the ground, and correcting it would tint the land."""
    rng = np.random.default_rng(7)
    gains = rng.uniform(0.7, 1.3, (40, 1)) * np.ones((1, 3))
    plain = synthetic_observations(rng, gains, FALLOFF, points=3000)
    rays = rays_near_nadir(rng, len(plain.image))
    sky = np.outer((0.4, 0.1, 0.08), SLOPE_DIRECTION)  # B, G, R
    found = estimate_along_rays(plain, rays, photometry.ViewSlope(tuple(map(tuple, sky))).log_factor(rays))
    assert found is not None and found.view_slope is None


def test_correcting_a_photograph_divides_out_its_view_slope(tmp_path: Path) -> None:
    """A uniform photograph looking straight down: the side whose rays tilt along the slope is darkened, the
    opposite side brightened, the centre kept; written and read back, the correction is the same."""
    frame = Frame(400, 300, 200.0, 150.0, 300.0)
    rotation = np.diag([1.0, -1.0, -1.0])  # camera x east, y south, z down
    slope = (0.3, 0.0, 0.0)  # brighter looking east, in every band
    correction = photometry.Photometry({"a.jpg": (1.0, 1.0, 1.0)}, {"a.jpg": "camera"}, {}, {"camera": frame},
                                       None, {"a.jpg": tuple(rotation.ravel())},
                                       photometry.ViewSlope((slope, slope, slope)))
    photometry.write(tmp_path / "photometry.json", correction)
    for current in (correction, photometry.load(tmp_path / "photometry.json")):
        corrected = current.correct(np.full((300, 400, 3), 150, np.uint8), "a.jpg").astype(float)
        tilt = 199.5 / np.hypot(199.5, 300.0)  # the east edge's ray, horizontally
        np.testing.assert_allclose(corrected[150, 399], 150 / np.exp(0.3 * tilt), atol=1.0)
        np.testing.assert_allclose(corrected[150, 0], 150 * np.exp(0.3 * tilt), atol=1.0)
        np.testing.assert_allclose(corrected[150, 200], 150, atol=1.0)
