"""Contour lines of an elevation model at a chosen interval, simplified (Douglas-Peucker, OpenCV) and written in
another CRS if asked, in WebODM's contour formats (io/lines.py)."""

from __future__ import annotations

from pathlib import Path

import contourpy
import cv2
import numpy as np
import rasterio
from pyproj import CRS, Transformer

from ..errors import InputError
from ..io.lines import LINE_FORMATS, write_lines

MAX_LEVELS = 2000  # more lines than this over one model is a mistaken interval, not a map


def contour_lines(heights: np.ndarray, x: np.ndarray, y: np.ndarray, interval: float,
                  simplify: float = 0.0) -> list[tuple[float, np.ndarray]]:
    """(height, (n, 2) points) of every contour line of `heights` (NaN: no data) on the grid of cell centres x
    (columns) and y (rows), at the multiples of `interval`; each simplified within `simplify` map units."""
    if not interval > 0:
        raise InputError("The contour interval must be a positive number of metres")
    known = heights[np.isfinite(heights)]
    if known.size == 0:
        raise InputError("The elevation model holds no height")
    levels = np.arange(np.ceil(known.min() / interval), np.floor(known.max() / interval) + 1) * interval
    if len(levels) > MAX_LEVELS:
        raise InputError(f"An interval of {interval} m makes {len(levels)} contours over heights from "
                         f"{known.min():.1f} to {known.max():.1f} m: choose a larger interval")
    generator = contourpy.contour_generator(x, y, np.ma.masked_invalid(heights), line_type="Separate")
    lines = []
    for level in levels:
        for points in generator.lines(float(level)):
            line = simplified(points, simplify)
            if len(line) >= 2:
                lines.append((float(level), line))
    return lines


def simplified(points: np.ndarray, tolerance: float) -> np.ndarray:
    """Douglas-Peucker within `tolerance`, about the line's first point (OpenCV's float32 would round map
    coordinates such as UTM's to half a metre)."""
    if tolerance <= 0 or len(points) < 3:
        return points
    origin = points[0]
    kept = cv2.approxPolyDP((points - origin).astype(np.float32).reshape(-1, 1, 2), tolerance, closed=False)
    return kept.reshape(-1, 2).astype(np.float64) + origin


def write_contours(dem: Path, output: Path, interval: float, simplify: float, fmt: str, crs: str | None) -> int:
    """The DEM's contours to `output` in `fmt`, in `crs` (None: the DEM's). Returns the number of lines."""
    if fmt not in LINE_FORMATS:
        raise InputError(f"Unknown contour format {fmt}: the formats are {', '.join(LINE_FORMATS)}")
    with rasterio.open(dem) as source:
        heights = source.read(1, masked=True).astype(np.float64).filled(np.nan)
        transform, source_crs = source.transform, source.crs
    x = transform.c + (np.arange(heights.shape[1]) + 0.5) * transform.a
    y = transform.f + (np.arange(heights.shape[0]) + 0.5) * transform.e
    lines = contour_lines(heights, x, y, interval, simplify)
    target = CRS.from_user_input(crs) if crs else CRS.from_user_input(source_crs)
    if target != CRS.from_user_input(source_crs):
        to_target = Transformer.from_crs(source_crs, target, always_xy=True)
        lines = [(level, np.column_stack(to_target.transform(points[:, 0], points[:, 1]))) for level, points in lines]
    write_lines(output, lines, target.to_string(), fmt, "contours")
    return len(lines)
