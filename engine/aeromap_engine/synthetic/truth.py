"""The truth beside the photographs, in the CRS: the DSM and DTM (float32 GeoTIFFs), the true orthophoto, ODM's
gcp_list.txt with the control points' exact pixels, and cameras.json with the lens and each photograph's true
pose and written metadata."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import rasterio
from rasterio.transform import Affine

from ..geo import crs_name
from .camera import Lens
from .metadata import Photograph
from .scene import HeightField
from .site import Site, SurveySpec


@dataclass(frozen=True)
class ControlPoint:
    name: str
    position: np.ndarray  # in the CRS
    observations: list[tuple[str, float, float]]  # image, pixel x, pixel y (ODM's convention)


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


def write_bands(path: Path, values: np.ndarray, size_m: float, site: Site, descriptions: list[str]) -> None:
    """(rows, cols, bands) values over the scene, north up, each band named."""
    rows, cols, count = values.shape
    transform = _north_up_transform(site.origin[0], site.origin[1] + size_m, size_m / cols)
    profile = {"driver": "GTiff", "width": cols, "height": rows, "count": count, "dtype": values.dtype.name,
               "crs": site.crs, "transform": transform, "tiled": True, "compress": "deflate", "zlevel": 1}
    with rasterio.open(path, "w", **profile) as dataset:
        dataset.write(np.moveaxis(_north_up(values), 2, 0))
        for number, description in enumerate(descriptions, start=1):
            dataset.set_band_description(number, description)


def halve(rgb: np.ndarray) -> np.ndarray:
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
