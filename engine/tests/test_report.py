"""The odm_report stage: report.pdf and the statistics in ODM's section names, on a reconstruction of six Brighton
Beach images downscaled to 1000 px (conftest's `sparse`, built once per test process by the engine's own stages),
plus the report's pure helpers on inputs whose answer is known."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import laspy
import numpy as np
import pycolmap
import pytest

from aeromap_engine import pipeline
from aeromap_engine.cloud.boundary import Boundary
from aeromap_engine.dense.views import View
from aeromap_engine.options import resolve
from aeromap_engine.project import Project
from aeromap_engine.report.document import Cell, Document
from aeromap_engine.report.overlap import images_per_point, overlap_map
from aeromap_engine.report.sections import BuiltReport, build_report, checkpoints
from aeromap_engine.report.statistics import (DATE_FORMAT, EMPTY_CLOUD, UNKNOWN, CloudMoments, ErrorStats,
                                              capture_dates, duration_text, point_cloud_statistics,
                                              track_length_histogram, value_at_level)
from aeromap_engine.stages import odm_report
from conftest import BRIGHTON_SIX, clone, datasets_dir
from test_sfm import exif_lonlat_alt

DATASET = datasets_dir() / "brighton_beach" / "images"
SUBSET = BRIGHTON_SIX
# Every run repeats the structure-from-motion options of the fixture; no mesh, which the report does not show.
BASE = [{"name": "feature-quality", "value": "ultra"}, {"name": "skip-3dmodel", "value": True}]


def options(**values: object) -> list[dict]:
    return BASE + [{"name": name.replace("_", "-"), "value": value} for name, value in values.items()]


def stats(project: Project) -> dict:
    return json.loads(project.stats_file.read_text())


def page_count(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?!s)", pdf))


def rendered(project: Project) -> BuiltReport:
    """The report as the stage makes it, with the rows it printed (stats.json is rewritten the same way)."""
    return build_report(odm_report.prepare(project))


def run_report_stage(project: Project) -> None:
    specs = pipeline.all_options()
    ctx = pipeline.StageContext(project, resolve(specs, BASE)[0], "odm_report", 0.0, 100.0)
    odm_report.run(ctx)


def webodm_statistics(data: dict) -> dict:
    """The task statistics WebODM derives from stats.json (its Task.get_statistics)."""
    cloud = data.get("point_cloud_statistics", {})
    if cloud.get("dense", False):
        points = cloud.get("stats", {}).get("statistic", [{}])[0].get("count")
    else:
        points = data.get("reconstruction_statistics", {}).get("reconstructed_points_count")
    processing = data.get("processing_statistics", {})
    return {"points": points, "gsd": data.get("odm_processing_statistics", {}).get("average_gsd"),
            "area": processing.get("area"), "start_date": processing.get("start_date"),
            "end_date": processing.get("end_date")}


# --- the stage on a real reconstruction ------------------------------------------------------------------------

def test_report_is_a_pdf_of_a_few_pages(products: Project) -> None:
    pdf = products.report_file.read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert 4 <= page_count(pdf) <= 8
    built = rendered(products)
    assert built.pages == page_count(built.pdf)
    sections = list(dict.fromkeys(row.section for row in built.rows))
    assert sections[:4] == ["Dataset Summary", "Quality", "Processing Summary", "Previews"]
    assert "Processing Time and Memory" == sections[-1]


def test_report_prints_the_numbers_of_stats_json(products: Project) -> None:
    built = rendered(products)
    data = stats(products)
    recon = data["reconstruction"]
    images = built.find("Reconstructed images")
    assert images.value == recon["images_registered"] == data["reconstruction_statistics"]["reconstructed_shots_count"]
    assert images.text.startswith(f"{recon['images_registered']} of {recon['images_total']} (")
    gsd = built.find("Average ground sampling distance")
    assert gsd.value == data["odm_processing_statistics"]["average_gsd"] == recon["gsd_cm"]
    assert gsd.text == f"{recon['gsd_cm']:.2f} cm"
    area = built.find("Area covered")
    assert area.value == data["processing_statistics"]["area"] == data["point_cloud"]["area_m2"]
    assert area.text.startswith(f"{data['point_cloud']['area_m2']:,.0f} m²")
    assert built.find("Georeference").value == "gps"
    assert built.find("Verdict", "Quality").value == data["quality"]["verdict"]
    assert built.find("GPS fits the photographs' layout").value is data["quality"]["checks"]["gps_agreement"]["passed"]
    assert built.find("GPS error (mean distance)").value == pytest.approx(recon["gps_residual_m"]["mean"])
    assert built.find("Z / RMS error", "GPS Errors Details").value == data["gps_errors"]["error"]["z"]
    for kind in ("DSM", "DTM"):
        assert built.find(f"{kind} / Minimum").value == data[f"{kind.lower()}_statistics"]["min"]
    recorded = {stage: record["seconds"] for stage, record in
                ((name, json.loads((products.state_dir / f"{name}.done").read_text()))
                 for name in ("dataset", "opensfm", "odm_orthophoto"))}
    for stage, seconds in recorded.items():
        assert built.find(f"{stage} / Time").value == seconds


def test_cloud_read_in_chunks_gives_the_whole_clouds_statistics(products: Project,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = products.path("odm_georeferencing", "odm_georeferenced_model.laz")
    las = laspy.read(path)
    xyz = np.column_stack([las.x, las.y, las.z])
    monkeypatch.setattr(odm_report, "CHUNK_POINTS", 7_919)
    monkeypatch.setattr(odm_report, "SAMPLE_POINTS", 5_000)
    summary = odm_report.read_cloud(path)
    assert summary.moments.count == len(xyz) > 5 * 7_919
    np.testing.assert_allclose(summary.moments.mean, xyz.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(summary.moments.squares / len(xyz), xyz.var(axis=0), rtol=1e-9)
    assert 2_500 < len(summary.sample) <= 5_000 + len(xyz) // 7_919 + 1
    assert abs(summary.sample[:, 2].mean() - xyz[:, 2].mean()) < 0.2 * xyz[:, 2].std()


def test_stats_json_has_the_sections_webodm_reads(products: Project) -> None:
    data = stats(products)
    with laspy.open(products.path("odm_georeferencing", "odm_georeferenced_model.laz")) as cloud:
        points = cloud.header.point_count
    webodm = webodm_statistics(data)
    assert webodm["points"] == points > 10_000
    assert data["point_cloud_statistics"]["dense"] is True
    assert webodm["gsd"] == data["reconstruction"]["gsd_cm"] and 0.5 < webodm["gsd"] < 20
    assert webodm["area"] > 100
    start, end = (datetime.strptime(webodm[key], DATE_FORMAT) for key in ("start_date", "end_date"))
    assert start.year == 2016 and start < end  # six photographs taken seconds apart
    recon = data["reconstruction_statistics"]
    assert recon["has_gps"] is True and recon["has_gcp"] is False and data["gcp_errors"] == {}
    assert sum(recon["histogram_track_length"].values()) == recon["reconstructed_points_count"]
    assert data["gps_errors"]["average_error"] == pytest.approx(data["reconstruction"]["gps_residual_m"]["mean"])
    assert data["features_statistics"]["reconstructed_features"]["median"] > 100
    total = sum(json.loads((products.state_dir / f"{name}.done").read_text())["seconds"]
                for name in ("dataset", "opensfm", "openmvs", "odm_filterpoints", "odm_georeferencing", "odm_dem",
                             "odm_orthophoto") if (products.state_dir / f"{name}.done").exists())
    assert data["odm_processing_statistics"]["total_time"] >= total > 0
    assert data["dataset"]["images_usable"] == len(SUBSET)  # the engine's own sections are kept


@pytest.mark.long
def test_without_elevation_models_no_dem_previews(products: Project, tmp_path: Path) -> None:
    project = clone(products, tmp_path / "p")
    pipeline.run(project, options(end_with="odm_report"))  # dsm and dtm off: the models are removed
    data = stats(project)
    assert "dsm_statistics" not in data and "dtm_statistics" not in data
    built = rendered(project)
    assert not [row for row in built.rows if row.key.startswith(("DSM", "DTM"))]
    assert built.find("Reconstructed images").value == len(SUBSET)
    assert project.report_file.read_bytes().startswith(b"%PDF-")


def test_control_points_get_their_table(sparse: Project, tmp_path: Path) -> None:
    """Control points surveyed on the GPS-referenced model (names outside Latin-1), report made right after
    structure from motion: no cloud, no orthophoto, and still a report."""
    project = clone(sparse, tmp_path / "p")
    model = pycolmap.Reconstruction(str(project.path("opensfm", "reconstruction")))
    offset = np.array([*json.loads(project.path("opensfm", "georef.json").read_text())["offset"], 0.0])
    tracks = sorted((p for p in model.points3D.values() if p.track.length() >= 4), key=lambda p: p.xyz[0])
    lines = ["WGS84 UTM 15N"]
    names = [f"Żuraw-Ω{n}" for n in range(5)]
    for name, point in zip(names, (tracks[int(i)] for i in np.linspace(0, len(tracks) - 1, 5))):
        xyz = point.xyz + offset
        for element in point.track.elements:
            image = model.image(element.image_id)
            x, y = image.points2D[element.point2D_idx].xy - 0.5
            lines.append(f"{xyz[0]:.3f} {xyz[1]:.3f} {xyz[2]:.3f} {x:.2f} {y:.2f} {image.name} {name}")
    project.gcp_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    pipeline.run(project, options(rerun_from="opensfm", end_with="opensfm"))
    run_report_stage(project)

    data = stats(project)
    assert data["reconstruction"]["georef_source"] == "gcp"
    assert data["reconstruction_statistics"]["has_gcp"] is True
    assert data["gcp_errors"]["average_error"] < 0.2 and "point_cloud_statistics" not in data
    built = rendered(project)
    assert built.find("Georeference").value == "gcp"
    assert [built.find(name, "Ground Control Points").text for name in names] == names
    assert built.find(f"{names[0]} / Used").value is True
    assert built.find("GCP average error (3D)").value == data["gcp_errors"]["average_error"]
    assert project.report_file.read_bytes().startswith(b"%PDF-")


@pytest.mark.long
def test_gps_outliers_and_the_placements_uncertainty_are_reported(sparse: Project, tmp_path: Path) -> None:
    """One fix 80 m off among six: the Quality section names it with its distance and states how uncertain the
    GPS leaves the model's absolute position."""
    project = clone(sparse, tmp_path / "p")
    wild = f"{SUBSET[2]}.JPG"
    lon, lat, alt = exif_lonlat_alt(DATASET / wild)
    project.geo_file.write_text(f"EPSG:4326\n{wild} {lon + 80 / (111_320 * np.cos(np.radians(lat)))} {lat} {alt}\n")
    pipeline.run(project, options(rerun_from="dataset", end_with="opensfm"))
    run_report_stage(project)
    recon = stats(project)["reconstruction"]
    assert list(recon["gps_outliers"]) == [wild] and recon["gps_outliers"][wild] > 70
    built = rendered(project)
    assert built.find(wild, "Quality").value == recon["gps_outliers"][wild]
    assert built.find("Absolute position uncertainty").value == recon["absolute_uncertainty_m"]["horizontal"]


# --- pure helpers ------------------------------------------------------------------------------------------------

def test_value_at_level_is_the_nearest_rank() -> None:
    assert value_at_level(np.arange(1, 11)) == 9
    assert value_at_level(np.arange(1, 31)[::-1]) == 27  # 0.9 x 30 must not round up to rank 28
    assert value_at_level([3.0, 1.0, 2.0]) == 3.0  # too few samples: the largest
    assert np.isnan(value_at_level([]))


def test_error_stats_per_axis_and_ce90_le90() -> None:
    deltas = np.array([[3.0, 4.0, -1.0]] * 9 + [[30.0, 40.0, 10.0]])
    errors = ErrorStats.of(deltas)
    assert errors is not None and errors.count == 10
    assert errors.mean == pytest.approx([5.7, 7.6, 0.1])
    assert errors.rms[2] == pytest.approx(np.sqrt((9 * 1 + 100) / 10))
    assert errors.std[0] == pytest.approx(np.std(deltas[:, 0]))
    assert errors.ce90 == pytest.approx(5.0) and errors.le90 == pytest.approx(1.0)  # the outlier is the last 10 %
    assert errors.average == pytest.approx((9 * np.sqrt(26) + np.sqrt(2600)) / 10)
    odm = errors.to_odm()
    assert set(odm) == {"mean", "std", "error", "average_error", "ce90", "le90"} and odm["error"]["z"] == errors.rms[2]
    assert ErrorStats.of(np.zeros((0, 3))) is None


def test_durations_and_capture_dates() -> None:
    assert [duration_text(s) for s in (52.4, 59.6, 185, 3725)] == ["52s", "1m:00s", "3m:05s", "1h:02m:05s"]
    start, end = capture_dates([1466699519000.0, None, 1466699526000.0, 1466699400000.0])
    assert (start, end) == ("23/06/2016 at 16:30:00", "23/06/2016 at 16:32:06")
    assert capture_dates([None, None]) == (UNKNOWN, UNKNOWN)


def test_track_histogram_and_cloud_counts() -> None:
    assert track_length_histogram(np.array([2, 3, 3, 7])) == {"2": 1, "3": 2, "7": 1}
    cloud = point_cloud_statistics(CloudMoments.of(np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]])), dense=True)
    assert [s["count"] for s in cloud["stats"]["statistic"]] == [2, 2, 2]
    assert cloud["stats"]["statistic"][2]["average"] == 4.0 and cloud["stats"]["bbox"]["native"]["bbox"]["maxx"] == 3
    assert point_cloud_statistics(CloudMoments.of(np.zeros((0, 3))), dense=False)["stats"]["statistic"][0]["count"] == 0


def test_cloud_moments_merged_in_parts_match_the_whole() -> None:
    rng = np.random.default_rng(3)
    xyz = rng.normal([500_000.0, 4_000_000.0, 150.0], [80.0, 60.0, 3.0], (10_001, 3))
    whole = CloudMoments.of(xyz)
    parts = EMPTY_CLOUD
    for chunk in np.array_split(xyz, [1, 2_500, 2_501, 7_000]):
        parts = parts.merge(CloudMoments.of(chunk))
    assert parts.count == len(xyz)
    np.testing.assert_array_equal(parts.low, xyz.min(axis=0))
    np.testing.assert_array_equal(parts.high, xyz.max(axis=0))
    np.testing.assert_allclose(parts.mean, xyz.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(parts.squares / parts.count, xyz.var(axis=0), rtol=1e-9)
    np.testing.assert_allclose(whole.squares, parts.squares, rtol=1e-9)


def _nadir_view(name: str, x: float) -> View:
    """A 100x100 px pinhole camera 50 m above the ground at (x, 0), seeing 50 m x 50 m of it."""
    camera = pycolmap.Camera.create_from_model_id(1, pycolmap.CameraModelId.PINHOLE, 100.0, 100, 100)
    rotation = np.diag([1.0, -1.0, -1.0])  # looking down, image rows southwards
    return View(name, camera, rotation, -rotation @ np.array([x, 0.0, 50.0]), np.zeros(0, dtype=np.int64))


def test_overlap_counts_the_images_over_each_cell() -> None:
    views = [_nadir_view("a", 0.0), _nadir_view("b", 30.0)]  # footprints x -25..25 and 5..55
    ground = np.array([[-10.0, 0.0, 0.0], [15.0, 0.0, 0.0], [40.0, 0.0, 0.0], [80.0, 0.0, 0.0]])
    assert images_per_point(views, ground).tolist() == [1, 2, 1, 0]
    square = Boundary(np.array([[-20.0, -20.0], [50.0, -20.0], [50.0, 20.0], [-20.0, 20.0]]))
    rng = np.random.default_rng(0)
    surface = np.c_[rng.uniform(-20, 50, 2000), rng.uniform(-20, 20, 2000), np.zeros(2000)]
    diamond = Boundary(np.array([[15.0, -20.0], [50.0, 0.0], [15.0, 20.0], [-20.0, 0.0]]))
    full = overlap_map(views, square, surface, cells_across=70)
    assert np.isfinite(full.counts).all() and set(np.unique(full.counts)) == {1.0, 2.0}
    assert full.share_with_at_least(2) == pytest.approx(20 / 70, abs=0.03)  # x from 5 to 25
    cut = overlap_map(views, diamond, surface, cells_across=70)
    assert 0.4 < np.isfinite(cut.counts).mean() < 0.6  # NaN outside the boundary


def test_document_records_what_it_prints_in_any_script() -> None:
    document = Document("Title", ["subtitle"])
    document.section("Ground Control Points")
    document.key_values([("Point", Cell("Żuraw-Ω Жук ✓", 7))])
    document.table(["Name", "Error"], [[Cell("Ω1"), Cell("0.10 m", 0.1)]])
    pdf = document.output()
    assert pdf.startswith(b"%PDF-") and page_count(pdf) == 1
    assert [(r.section, r.key, r.text, r.value) for r in document.rows] == [
        ("Ground Control Points", "Point", "Żuraw-Ω Жук ✓", 7), ("Ground Control Points", "Ω1", "Ω1", None),
        ("Ground Control Points", "Ω1 / Error", "0.10 m", 0.1)]


def test_the_checkpoints_section_lists_each_error_and_the_rms() -> None:
    document = Document("Title", ["subtitle"])
    residuals = {"points": [{"name": "chk1", "images": 4, "delta_m": [0.03, -0.04, 0.12]},
                            {"name": "chk2", "images": 3, "delta_m": [-0.03, 0.04, -0.05]}],
                 "not_measured": ["chk3 is marked in fewer than 2 placed photographs"],
                 "rmse_x": 0.03, "rmse_y": 0.04, "rmse_z": 0.092, "rmse_horizontal": 0.05, "rmse_vertical": 0.092}
    checkpoints(document, residuals)
    assert page_count(document.output()) == 1
    printed = {r.key: r.value for r in document.rows if r.section == "Checkpoints"}
    assert printed["chk1 / Error Z"] == 0.12 and printed["chk2 / Error Y (north)"] == 0.04
    assert printed["RMS horizontal error"] == 0.05 and printed["RMS vertical error"] == 0.092
    checkpoints(document, None)  # no checkpoints: no section
    assert sum(r.key == "RMS vertical error" for r in document.rows) == 1
