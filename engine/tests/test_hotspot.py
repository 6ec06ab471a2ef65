"""The ground's brightness by viewing angle on rendered surveys. The hotspot: flown under a high sun whose
antisolar point falls inside the frames, with the ground brightened towards it (synthetic/render.py Hotspot); the
engine finds the sunlight's direction, and the orthophoto's brightness around each photograph's antisolar point,
against the true orthophoto, is flat once the hotspot is divided out, where without the correction it is not.
The view slope: the ground brighter looking away from the sun (synthetic/render.py ViewSlope); the engine finds
it, and the orthophoto's brightness against the truth, smoothed over a few metres, keeps no flight pattern."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
import rasterio
from rasterio.enums import Resampling
from rasterio.transform import Affine
from rasterio.warp import reproject

from aeromap_engine import photometry
from aeromap_engine.project import Project
from aeromap_engine.stages.odm_orthophoto import NO_SOURCE
from aeromap_engine.synthetic.camera import FlightSpec, LensSpec
from aeromap_engine.synthetic.render import sun_direction
from aeromap_engine.synthetic.scene import SceneSpec
from aeromap_engine.synthetic.seams import seam_steps
from aeromap_engine.synthetic.site import SurveySpec
from aeromap_engine.synthetic.survey import SurveyTruth, generate
from conftest import registered_layers, with_and_without_corrections

SPEC = SurveySpec(scene=SceneSpec(size_m=85.0, buildings=0, trees=0, roads=1, control_points=0),
                  lens=LensSpec(width=640, height=480),
                  flight=FlightSpec(height_m=50.0, forward_overlap=0.75, side_overlap=0.7),
                  truth_ortho_level=1, seed=4, sun_elevation_deg=84.0, sun_azimuth_deg=135.0,
                  hotspot_amplitude=0.25, hotspot_width_deg=6.0)
OPTIONS = [{"name": "fast-orthophoto", "value": True}, {"name": "skip-report", "value": True},
           {"name": "skip-3dmodel", "value": True}, {"name": "feature-quality", "value": "ultra"},
           {"name": "min-num-features", "value": 3000}]
DISC_M, RING_M = 3.0, (6.0, 10.0)  # around each antisolar point: the disc measured, the ring it is compared with


# A lower sun (its antisolar point outside the frames), the ground exp(0.3 sin(tilt)) brighter looking away from it.
SLOPE_SPEC = replace(SPEC, sun_elevation_deg=50.0, hotspot_amplitude=0.0, view_slope=0.3)
SMOOTHING_PX = 61  # about 4 m: the orthophoto's brightness is compared with the truth's over boxes this wide


# Runs of two surveys, each with and without the corrections: in `make test-long` (test_photometry finds the
# hotspot and the view slope in observations within `make test`).
pytestmark = pytest.mark.long


def processed(root: Path, spec: SurveySpec) -> tuple[SurveyTruth, Project, Project]:
    """The survey processed with the photometric corrections (the default) and without them."""
    truth = generate(root / "corrected", spec, workers=2)
    corrected = Project(root / "corrected")
    return truth, corrected, with_and_without_corrections(corrected, OPTIONS, root / "plain")


@pytest.fixture(scope="module")
def hotspot_survey(tmp_path_factory: pytest.TempPathFactory) -> tuple[SurveyTruth, Project, Project]:
    return processed(tmp_path_factory.mktemp("hotspot"), SPEC)


@pytest.fixture(scope="module")
def view_slope_survey(tmp_path_factory: pytest.TempPathFactory) -> tuple[SurveyTruth, Project, Project]:
    return processed(tmp_path_factory.mktemp("view-slope"), SLOPE_SPEC)


def registered(project: Project, truth: SurveyTruth) -> tuple[np.ndarray, np.ndarray, np.ndarray, Affine]:
    """The orthophoto's brightness, the true orthophoto's registered on it (conftest.registered_layers), where both
    hold ground, and the grid's transform."""
    with rasterio.open(project.orthophoto()) as ortho:
        values = ortho.read().astype(np.float32)
        expected = np.full((3, ortho.height, ortho.width), np.nan, np.float32)
        with rasterio.open(truth.orthophoto) as source:
            reproject(source.read().astype(np.float32), expected, src_transform=source.transform,
                      src_crs=source.crs, dst_transform=ortho.transform, dst_crs=ortho.crs,
                      resampling=Resampling.average, dst_nodata=np.nan)
        transform = ortho.transform
    brightness, true = values[:3].mean(axis=0), np.nan_to_num(np.nanmean(expected, axis=0))
    true = registered_layers(brightness, true, true[None], (values[3] > 0) & (true > 5))[0]
    return brightness, true, (values[3] > 0) & (true > 5), transform


def disc_steps(project: Project, truth: SurveyTruth, sunlight: np.ndarray) -> np.ndarray:
    """Per photograph, the orthophoto's brightness over the true orthophoto's within DISC_M of its antisolar point
    on the ground, against the same in the ring around it, less 1."""
    brightness, true, valid, transform = registered(project, truth)
    ratio = np.where(valid, brightness / np.maximum(true, 1), np.nan)
    rows, cols = np.indices(ratio.shape)
    steps = []
    for photo in json.loads(truth.cameras_json.read_text())["photographs"]:
        centre = np.array(photo["position"])
        ground = centre + sunlight * SPEC.flight.height_m / -sunlight[2]  # down the sunlight from the camera
        col, row = ~transform @ (ground[0], ground[1])
        distance = np.hypot(cols - col, rows - row) * abs(transform.a)
        disc, ring = ratio[distance < DISC_M], ratio[(distance > RING_M[0]) & (distance < RING_M[1])]
        if np.isfinite(disc).sum() > 500 and np.isfinite(ring).sum() > 2000:
            steps.append(np.nanmean(disc) / np.nanmean(ring) - 1)
    return np.array(steps)


def test_the_hotspot_is_found_and_divided_out(hotspot_survey) -> None:
    truth, corrected, plain = hotspot_survey
    sunlight = -sun_direction(SPEC.sun_azimuth_deg, SPEC.sun_elevation_deg)
    found = photometry.load(corrected.photometry_file).hotspot
    assert found is not None and np.degrees(np.arccos(np.dot(found.direction, sunlight))) < 0.5
    assert 0.2 < min(found.amplitude) and max(found.amplitude) < 0.3  # exp(0.25) brighter, as rendered
    stats = corrected.read_stats()["reconstruction"]["photometry"]["hotspot"]
    assert stats["width_deg"] == found.width_deg

    flat, bright = disc_steps(corrected, truth, sunlight), disc_steps(plain, truth, sunlight)
    assert len(flat) >= 10 and len(bright) == len(flat)
    assert np.abs(flat).max() <= 0.02, np.round(flat, 3)
    # Without the correction the discs show: the typical one several times as bright against its ring.
    assert np.abs(bright).max() > 0.04 and np.median(np.abs(bright)) > 4 * np.median(np.abs(flat)), np.round(bright, 3)


def test_the_seams_add_no_step_to_the_ground(hotspot_survey) -> None:
    """bench/ortho_seams.py's measure, the brightness step across the seams against the same inside one
    photograph's part: on this scene the ground itself steps more along the seams than elsewhere (they follow its
    texture), so the orthophoto's steps are weighed against the true orthophoto's along the same seams."""
    truth, corrected, _ = hotspot_survey
    brightness, true, valid, _ = registered(corrected, truth)
    with rasterio.open(corrected.orthophoto_sources) as dataset:
        sources = dataset.read(1).astype(np.int32)
    sources[sources == NO_SOURCE] = -1
    across, inside = seam_steps(brightness, valid, sources)
    true_across, true_inside = seam_steps(true, valid, sources)
    assert across <= 1.03 * true_across and inside <= 1.03 * true_inside, (across, true_across, inside, true_inside)
    assert across / inside <= 1.03 * true_across / true_inside


def smoothed_log_ratio(project: Project, truth: SurveyTruth) -> np.ndarray:
    """The log of the orthophoto's brightness over the true orthophoto's, each averaged over SMOOTHING_PX boxes,
    where the boxes hold ground whole: what is left is the map's brightness pattern, not the texture's."""
    brightness, true, valid, _ = registered(project, truth)
    box = (SMOOTHING_PX, SMOOTHING_PX)
    means = [cv2.blur(np.where(valid, v, 0).astype(np.float32), box) for v in (brightness, true)]
    whole = cv2.erode(valid.astype(np.uint8), np.ones(box, np.uint8)) > 0
    return np.log(means[0][whole] / means[1][whole])


def test_the_view_slope_is_found_and_divided_out(view_slope_survey) -> None:
    truth, corrected, plain = view_slope_survey
    found = photometry.load(corrected.photometry_file)
    assert found is not None and found.view_slope is not None and found.hotspot is None
    sun = sun_direction(SLOPE_SPEC.sun_azimuth_deg, SLOPE_SPEC.sun_elevation_deg)
    away = -sun[:2] / np.linalg.norm(sun[:2])
    for slope in np.array(found.view_slope.slopes):
        assert 0.2 < np.linalg.norm(slope) < 0.4, slope  # 0.3, as rendered
        assert np.degrees(np.arccos(np.dot(slope[:2], away) / np.linalg.norm(slope[:2]))) < 5.0, slope
    assert corrected.read_stats()["reconstruction"]["photometry"]["view_slope"] is not None

    flat, patterned = smoothed_log_ratio(corrected, truth), smoothed_log_ratio(plain, truth)
    # Corrected, 9 boxes in 10 within 3 % of the truth (measured); uncorrected, the survey's edges seen from
    # inside it are 9 % brighter on one side and darker on the other.
    assert np.percentile(np.abs(flat), 90) < 0.05, np.percentile(flat, [5, 50, 95])
    assert flat.std() < 0.5 * patterned.std(), (flat.std(), patterned.std())
