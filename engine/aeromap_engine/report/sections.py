"""The quality report's content, in the order of ODM's: title, dataset summary, processing summary with the
camera positions, previews, survey data (overlap), GPS/GCP errors, ground control points, features,
reconstruction, camera calibration, processing time and memory per stage.

Every number printed is read from the statistics (stats.json as the stage writes it) so that the report and
the file agree, but for the overlap figures and the 90 % reprojection error, which stats.json does not hold; the
charts are drawn from the arrays of ReportContent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tiles.style import value_range
from . import figures
from .document import Cell, Document, Row
from .figures import RasterPreview
from .overlap import WELL_COVERED, OverlapMap
from .statistics import value_at_level

GEOREFERENCE_TEXT = {"gps": "GPS", "gcp": "GCP (ground control points)",
                     "none": "none (local frame, not georeferenced)"}
VERDICT_TEXT = {"good": "good: every check passed", "doubtful": "doubtful: see the warnings below",
                "failed": "failed: no trustworthy model"}
CHECK_LABELS = {"images_registered": "Images placed", "gps_agreement": "GPS fits the photographs' layout",
                "gps_residual": "Distance to the GPS positions",
                "groups_placed_by_gps": "Groups placed by GPS alone",
                "points_per_image": "Sparse points per image", "track_length": "Views per point",
                "lens_frame": "Lens model over the frame",
                "sparse_height_range": "Heights of the sparse model",
                "cloud_height_range": "Heights of the point cloud"}
CAMERA_PARAMETERS = ("focal", "focal_x", "focal_y", "c_x", "c_y", "k1", "k2", "k3", "p1", "p2", "k4")


@dataclass(frozen=True)
class CameraLayout:
    """Registered cameras in capture order: their computed centres and GPS positions (world frame)."""

    names: list[str]
    centres: np.ndarray  # (N, 3)
    gps: np.ndarray  # (N, 3), NaN where an image has none


@dataclass(frozen=True)
class FeatureCounts:
    """Per registered image: features found and features that belong to a reconstructed point; and where the
    latter lie in the frame, as fractions of the width and height (all images together)."""

    names: list[str]
    detected: np.ndarray
    reconstructed: np.ndarray
    normalized_xy: np.ndarray  # (M, 2)
    aspect: float  # image height over width


@dataclass(frozen=True)
class ReportContent:
    version: str
    dataset: str
    stats: dict[str, Any]  # odm_report/stats.json, this stage's sections included
    stage_records: dict[str, dict[str, float]]  # stage -> seconds, peak_memory_mb (stages run before the report)
    cameras: CameraLayout
    features: FeatureCounts
    track_lengths: np.ndarray
    residuals_px: np.ndarray
    sparse_xyz: np.ndarray  # (M, 3) world frame
    sparse_rgb: np.ndarray  # (M, 3) uint8
    camera_models: dict[str, dict[str, Any]]  # cameras.json
    orthophoto: RasterPreview | None = None
    elevations: dict[str, RasterPreview] = field(default_factory=dict)
    overlap: OverlapMap | None = None


@dataclass(frozen=True)
class BuiltReport:
    pdf: bytes
    rows: list[Row]
    pages: int

    def find(self, key: str, section: str | None = None) -> Row:
        """The first row with that label (in that section); KeyError when the report has none."""
        for row in self.rows:
            if row.key == key and (section is None or row.section == section):
                return row
        raise KeyError(key)


def count_text(value: int) -> str:
    return f"{value:,}"


def metres_text(value: float, unit: str = "m", digits: int = 2) -> str:
    return f"{value:.{digits}f} {unit}"


def area_text(square_metres: float, unit: str) -> str:
    if unit != "m":
        return f"{square_metres:,.1f} square {unit}"
    return f"{square_metres:,.0f} m² ({square_metres / 10_000:.2f} ha)"


def build_report(content: ReportContent) -> BuiltReport:
    stats = content.stats
    reconstruction = stats["reconstruction"]
    unit = "m" if reconstruction.get("crs") else "model units"
    document = Document("Aeromap Quality Report", [
        f"Processed with Aeromap engine version {content.version}",
        f"Dataset: {content.dataset}",
    ])
    dataset_summary(document, stats, unit)
    quality_summary(document, stats)
    processing_summary(document, content, unit)
    previews(document, content, unit)
    survey_data(document, content.overlap, unit)
    position_errors(document, stats)
    control_points(document, reconstruction.get("gcp_residual_m"))
    checkpoints(document, reconstruction.get("checkpoint_residual_m"))
    features_details(document, content)
    reconstruction_details(document, content)
    camera_models(document, content.camera_models)
    processing_time(document, content.stage_records)
    return BuiltReport(document.output(), document.rows, document.pages)


def dataset_summary(document: Document, stats: dict[str, Any], unit: str) -> None:
    processing = stats["processing_statistics"]
    odm = stats["odm_processing_statistics"]
    dataset = stats.get("dataset", {})
    crs = stats["reconstruction"].get("crs")
    document.section("Dataset Summary")
    rows = [
        ("Processed on", Cell(f"{processing['date']} (UTC)", processing["date"])),
        ("Capture start", Cell(processing["start_date"], processing["start_date"])),
        ("Capture end", Cell(processing["end_date"], processing["end_date"])),
        ("Area covered", Cell(area_text(processing["area"], unit), processing["area"])),
        ("Processing time", Cell(f"{odm['total_time_human']} (the stages before this report)",
                                 odm["total_time"])),
    ]
    if dataset:
        rows.append(("Images", Cell(f"{dataset['images_total']} given, {dataset['images_usable']} usable, "
                                    f"{dataset['images_with_gps']} with GPS", dataset["images_usable"])))
        rows.append(("Cameras", Cell(", ".join(dataset["cameras"]), dataset["cameras"])))
    rows.append(("Coordinate system", Cell(crs or "none (local frame)", crs)))
    document.key_values(rows)


def quality_summary(document: Document, stats: dict[str, Any]) -> None:
    """The verdict, each check's finding, and the photographs left out of the model with the reason."""
    quality = stats.get("quality")
    if not quality:
        return
    document.section("Quality")
    rows = [("Verdict", Cell(VERDICT_TEXT[quality["verdict"]], quality["verdict"]))]
    for name, check in quality["checks"].items():
        status = "" if check["passed"] else "Failed: " if check["fatal"] else "Warning: "
        rows.append((CHECK_LABELS.get(name, name), Cell(status + check["message"], check["passed"])))
    recon = stats["reconstruction"]
    placement = recon.get("absolute_uncertainty_m")
    if placement:
        rows.append(("Absolute position uncertainty",
                     Cell(f"{metres_text(placement['horizontal'])} horizontally, "
                          f"{metres_text(placement['vertical'])} vertically", placement["horizontal"])))
    document.key_values(rows)
    left_out = recon.get("images_left_out") or {}
    if left_out:
        document.subheading("Images left out")
        document.key_values([(name, Cell(reason, reason)) for name, reason in sorted(left_out.items())], 0.25)
    outliers = recon.get("gps_outliers") or {}
    if outliers:
        document.subheading("GPS positions not used to place the model")
        document.key_values([(name, Cell(f"{metres_text(distance, digits=0)} from where the photographs place "
                                         f"the camera", distance)) for name, distance in sorted(outliers.items())],
                            0.25)


def processing_summary(document: Document, content: ReportContent, unit: str) -> None:
    stats = content.stats
    recon = stats["reconstruction_statistics"]
    engine = stats["reconstruction"]
    features = stats["features_statistics"]
    registered, total = recon["reconstructed_shots_count"], recon["initial_shots_count"]
    document.section("Processing Summary")
    rows = [
        ("Reconstructed images", Cell(f"{registered} of {total} ({100.0 * registered / max(total, 1):.1f} %)",
                                      registered)),
        ("Reconstructed points (sparse)", Cell(f"{count_text(recon['reconstructed_points_count'])} points",
                                               recon["reconstructed_points_count"])),
    ]
    cloud = stats.get("point_cloud_statistics")
    if cloud:
        count = cloud["stats"]["statistic"][0]["count"]
        label = "Reconstructed points (dense)" if cloud["dense"] else "Point cloud points (from sparse)"
        rows.append((label, Cell(f"{count_text(count)} points", count)))
    gsd = stats["odm_processing_statistics"]["average_gsd"]
    rows.append(("Average ground sampling distance",
                 Cell(f"{gsd:.2f} cm" if gsd is not None else "unknown (local frame)", gsd)))
    rows.append(("Detected features (median per image)",
                 Cell(f"{count_text(features['detected_features']['median'])} features",
                      features["detected_features"]["median"])))
    rows.append(("Reconstructed features (median per image)",
                 Cell(f"{count_text(features['reconstructed_features']['median'])} features",
                      features["reconstructed_features"]["median"])))
    source = engine["georef_source"]
    rows.append(("Georeference", Cell(GEOREFERENCE_TEXT[source], source)))
    for key, label in (("gps_errors", "GPS error (mean distance)"), ("gcp_errors", "GCP error (mean distance)")):
        if stats.get(key):
            error = stats[key]["average_error"]
            rows.append((label, Cell(metres_text(error), error)))
    document.key_values(rows)
    cameras = content.cameras
    figure = figures.topview(cameras.centres[:, :2], cameras.gps[:, :2], content.orthophoto,
                             content.sparse_xyz[:, :2], content.sparse_rgb, unit)
    document.figures([figure], width=min(document.width, 130 / figure.aspect),
                     caption="Computed camera positions (blue, joined in capture order) and their GPS positions "
                             "(orange), over the orthophoto or, without one, the sparse points.")


def previews(document: Document, content: ReportContent, unit: str) -> None:
    if content.orthophoto is None and not content.elevations:
        return
    stats = content.stats
    ortho = figures.photo(content.orthophoto.pixels) if content.orthophoto is not None else None
    ortho_width = min(document.width, 120 / ortho.aspect) if ortho is not None else None
    facts = stats.get("orthophoto", {})
    caption = (f"{facts['width']:,} × {facts['height']:,} px at {facts['resolution_cm']:.1f} cm per pixel."
               if facts else "")
    document.section("Previews", needs=document.figure_height([ortho], ortho_width, caption) + 7 if ortho else 90)
    if ortho is not None:
        document.subheading("Orthophoto", needs=document.figure_height([ortho], ortho_width, caption))
        document.figures([ortho], width=ortho_width, caption=caption)
    charts, rows = [], []
    for kind, preview in content.elevations.items():
        extremes = stats[f"{kind}_statistics"]
        low, high = value_range(preview.pixels)
        charts.append(figures.elevation(preview, low, high, kind.upper(), unit))
        rows.append([Cell(kind.upper()), Cell(metres_text(extremes["min"], unit), extremes["min"]),
                     Cell(metres_text(extremes["max"], unit), extremes["max"]),
                     Cell(f"{low:.2f} to {high:.2f} {unit}", (low, high))])
    if charts:
        width = min(85.0, (document.width - 4) / len(charts))
        caption = ("Colours span the 2nd to 98th percentile of the heights, as on the map tiles; shading lit from "
                   "the north-west.")
        document.subheading("Elevation models", needs=document.table_height(len(rows) + 1)
                            + document.figure_height(charts, width, caption))
        document.table(["Model", "Minimum", "Maximum", "Colour scale"], rows, widths=(1, 1, 1, 1.4))
        document.figures(charts, width=width, caption=caption)


def survey_data(document: Document, overlap: OverlapMap | None, unit: str) -> None:
    if overlap is None:
        return
    chart = figures.overlap(overlap, unit)
    width = min(document.width, 140 / chart.aspect)
    caption = ("How many images see each ground cell of the surveyed area. Dense matching needs two; "
               f"{WELL_COVERED} or more give the most complete surface.")
    document.section("Survey Data", needs=document.figure_height([chart], width, caption))
    document.figures([chart], width=width, caption=caption)
    share = overlap.share_with_at_least(WELL_COVERED)
    document.key_values([
        ("Images per ground cell (median)", Cell(f"{overlap.median:.0f}", overlap.median)),
        (f"Area seen by {WELL_COVERED} or more images", Cell(f"{100 * share:.1f} %", share)),
        ("Area seen by fewer than 2 images", Cell(f"{100 * (1 - overlap.share_with_at_least(2)):.1f} %",
                                                  1 - overlap.share_with_at_least(2))),
    ])


def position_errors(document: Document, stats: dict[str, Any]) -> None:
    sources = [(key, label) for key, label in (("gps_errors", "GPS"), ("gcp_errors", "GCP")) if stats.get(key)]
    document.section(" / ".join(label for _, label in sources) + " Errors Details" if sources
                     else "Georeferencing Errors", needs=7 + document.table_height(7))
    if not sources:
        document.note("No GPS positions or ground control points tie this model to the Earth: it is in a local "
                      "frame, and its position errors are unknown.")
        return
    for key, label in sources:
        errors = stats[key]
        document.subheading(f"{label}: the computed positions minus the {label} positions",
                            needs=document.table_height(7))
        rows = [[Cell(axis.upper())] + [Cell(metres_text(errors[part][axis]), errors[part][axis])
                                        for part in ("mean", "std", "error")] for axis in ("x", "y", "z")]
        document.table(["Axis", "Mean", "Standard deviation", "RMS error"], rows, widths=(1, 1, 1, 1))
        document.key_values([
            (f"{label} average error (3D)", Cell(metres_text(errors["average_error"]), errors["average_error"])),
            (f"{label} CE90 (horizontal, 90 %)", Cell(metres_text(errors["ce90"]), errors["ce90"])),
            (f"{label} LE90 (vertical, 90 %)", Cell(metres_text(errors["le90"]), errors["le90"])),
        ])


def control_points(document: Document, residuals: dict[str, Any] | None) -> None:
    if not residuals:
        return
    document.section("Ground Control Points", needs=document.table_height(min(len(residuals["points"]), 12) + 1))
    rows = [[Cell(point["name"], point["name"]), Cell(str(point["images"]), point["images"]),
             Cell(metres_text(point["horizontal_m"], digits=3), point["horizontal_m"]),
             Cell(metres_text(point["vertical_m"], digits=3), point["vertical_m"]),
             Cell(f"{point['reprojection_px']:.2f} px", point["reprojection_px"]),
             Cell("yes" if point["used"] else "no (disagrees)", point["used"])]
            for point in residuals["points"]]
    document.table(["Point", "Images", "Horizontal error", "Vertical error", "Reprojection", "Used"], rows,
                   widths=(2.2, 1, 1.4, 1.4, 1.3, 1.4))
    document.key_values([
        ("RMS horizontal error", Cell(metres_text(residuals["rmse_horizontal"], digits=3),
                                      residuals["rmse_horizontal"])),
        ("RMS vertical error", Cell(metres_text(residuals["rmse_vertical"], digits=3), residuals["rmse_vertical"])),
    ])


def checkpoints(document: Document, residuals: dict[str, Any] | None) -> None:
    """The checkpoints: surveyed points kept out of the georeferencing, so their errors are the model's accuracy."""
    if not residuals:
        return
    points = residuals["points"]
    document.section("Checkpoints", needs=document.table_height(min(len(points), 12) + 1))
    document.note("Surveyed points kept out of the georeferencing: their errors measure the model's accuracy.")
    rows = [[Cell(point["name"], point["name"]), Cell(str(point["images"]), point["images"])]
            + [Cell(metres_text(value, digits=3), value) for value in point["delta_m"]]
            for point in points]
    if rows:
        document.table(["Point", "Images", "Error X (east)", "Error Y (north)", "Error Z"], rows,
                       widths=(2.2, 1, 1.6, 1.6, 1.6))
        document.key_values([(label, Cell(metres_text(residuals[key], digits=3), residuals[key]))
                             for key, label in (("rmse_x", "RMS error X"), ("rmse_y", "RMS error Y"),
                                                ("rmse_z", "RMS error Z"),
                                                ("rmse_horizontal", "RMS horizontal error"),
                                                ("rmse_vertical", "RMS vertical error"))])
    for text in residuals["not_measured"]:
        document.note(f"Not measured: {text}")


def features_details(document: Document, content: ReportContent) -> None:
    stats = content.stats["features_statistics"]
    features = content.features
    heatmap = figures.feature_heatmap(features.normalized_xy, features.aspect)
    width = min(90.0, 90 / heatmap.aspect)
    caption = "Where the reconstructed features lie in the image frame, all images together."
    document.section("Features Details",
                     needs=document.figure_height([heatmap], width, caption) + document.table_height(3))
    document.figures([heatmap], width=width, caption=caption)
    rows = [[Cell(label)] + [Cell(count_text(stats[key][part]), stats[key][part])
                             for part in ("min", "max", "mean", "median")]
            for key, label in (("detected_features", "Detected"), ("reconstructed_features", "Reconstructed"))]
    document.table(["Features per image", "Min.", "Max.", "Mean", "Median"], rows, widths=(2, 1, 1, 1, 1))
    document.figures([figures.features_per_image(features.names, features.detected, features.reconstructed)],
                     caption="Features found in each image and those that belong to a reconstructed point.")


def reconstruction_details(document: Document, content: ReportContent) -> None:
    recon = content.stats["reconstruction_statistics"]
    document.section("Reconstruction Details", needs=document.table_height(6))
    document.key_values([
        ("Reprojection error (mean per point)", Cell(f"{recon['reprojection_error_pixels']:.2f} px",
                                                     recon["reprojection_error_pixels"])),
        ("Reprojection error (90 % of observations within)",
         Cell(f"{value_at_level(content.residuals_px):.2f} px", value_at_level(content.residuals_px))),
        ("Observations", Cell(count_text(recon["observations_count"]), recon["observations_count"])),
        ("Average track length", Cell(f"{recon['average_track_length']:.2f} images",
                                      recon["average_track_length"])),
        ("Average track length (tracks longer than 2)",
         Cell(f"{recon['average_track_length_over_two']:.2f} images", recon["average_track_length_over_two"])),
        ("Structure from motion", Cell(content.stats["reconstruction"]["sfm_algorithm"],
                                       content.stats["reconstruction"]["sfm_algorithm"])),
    ])
    document.figures([figures.reconstruction_histograms(content.track_lengths, content.residuals_px)],
                     caption="Left: how many images see each reconstructed point. Right: distance between each "
                             "observed feature and the projection of its point (the last 0.5 % folded into the "
                             "last bar).")


def camera_models(document: Document, cameras: dict[str, dict[str, Any]]) -> None:
    if not cameras:
        return
    document.section("Camera Models Details", needs=7 + document.table_height(2))
    for camera_id, values in cameras.items():
        document.subheading(camera_id, needs=document.table_height(2))
        parameters = [name for name in CAMERA_PARAMETERS if name in values]
        document.table(["Parameter"] + parameters,
                       [[Cell("Calibrated")] + [Cell(f"{values[name]:.5f}", values[name]) for name in parameters]],
                       widths=(1.5,) + (1,) * len(parameters))
        document.note(f"Projection {values.get('projection_type', 'unknown')}, {values.get('width')} × "
                      f"{values.get('height')} px; focal length and principal point as fractions of the larger "
                      "image side (ODM's cameras.json).")


def processing_time(document: Document, records: dict[str, dict[str, float]]) -> None:
    if not records:
        return
    document.section("Processing Time and Memory", needs=document.table_height(len(records) + 2))
    rows = [[Cell(stage), Cell(f"{record['seconds']:.1f} s", record["seconds"]),
             Cell(f"{record['peak_memory_mb']:,.0f} MB", record["peak_memory_mb"])]
            for stage, record in records.items()]
    total = sum(record["seconds"] for record in records.values())
    peak = max(record["peak_memory_mb"] for record in records.values())
    rows.append([Cell("all stages"), Cell(f"{total:.1f} s", total), Cell(f"{peak:,.0f} MB", peak)])
    document.table(["Stage", "Time", "Peak memory"], rows, widths=(2, 1, 1))
