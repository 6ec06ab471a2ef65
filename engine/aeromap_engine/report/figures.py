"""The report's charts, drawn with matplotlib's Agg renderer from plain arrays into PNG (photographs into JPEG).

World-frame coordinates are shown as distances from the south-west corner of what is drawn, so the axes read
in metres (in the model's own units for a survey in a local frame). Elevation uses the viridis ramp and the
hillshade of the map tiles, so the previews look like the maps.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, Colormap, LinearSegmentedColormap, ListedColormap, Normalize
from matplotlib.figure import Figure
from PIL import Image

from ..tiles.style import ramp, style_elevation
from .overlap import WELL_COVERED, OverlapMap

DPI = 150
FONT_SIZE = 8
CAMERA_COLOUR = "#00b7eb"
GPS_COLOUR = "#ff7f0e"
# Images per cell: 0 grey, then from red (1) to green (WELL_COVERED or more), as ODM's overlap diagram.
OVERLAP_COLOURS = ("#9e9e9e", "#d7191c", "#fdae61", "#ffffbf", "#a6d96a", "#1a9641")


@dataclass(frozen=True)
class Chart:
    """An encoded image and its size in pixels."""

    data: bytes
    width: int
    height: int

    @property
    def aspect(self) -> float:
        """Height over width."""
        return self.height / self.width


@dataclass(frozen=True)
class RasterPreview:
    """A raster read at preview scale: RGBA uint8 (H, W, 4) or values (H, W) with NaN where there is none."""

    pixels: np.ndarray
    extent: tuple[float, float, float, float]  # (xmin, xmax, ymin, ymax), world frame
    resolution: float  # world units per preview pixel


def ramp_colormap(name: str = "viridis") -> LinearSegmentedColormap:
    """A matplotlib colour map of the tiles' ramp of that name."""
    colours = ramp(name)
    return LinearSegmentedColormap.from_list(name, list(zip(colours.positions.tolist(),
                                                            (colours.colours / 255.0).tolist())))


def _figure(width_in: float, height_in: float) -> Figure:
    figure = Figure(figsize=(width_in, height_in), dpi=DPI)
    FigureCanvasAgg(figure)  # the Agg renderer, without pyplot's global figures
    figure.set_layout_engine("constrained")
    return figure


def _png(figure: Figure) -> Chart:
    """The figure as PNG, grown to hold whatever the layout pushed past its edges (titles and tick labels of
    images with a fixed aspect)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.04)
    with Image.open(io.BytesIO(buffer.getvalue())) as image:
        width, height = image.size
    return Chart(buffer.getvalue(), width, height)


def _axes_in_units(axes: Axes, unit: str) -> None:
    axes.set_aspect("equal")
    axes.set_xlabel(f"east ({unit})", fontsize=FONT_SIZE)
    axes.set_ylabel(f"north ({unit})", fontsize=FONT_SIZE)
    axes.tick_params(labelsize=FONT_SIZE)


def _shifted(extent: tuple[float, float, float, float], origin: np.ndarray) -> tuple[float, float, float, float]:
    xmin, xmax, ymin, ymax = extent
    return xmin - origin[0], xmax - origin[0], ymin - origin[1], ymax - origin[1]


def photo(rgba: np.ndarray, quality: int = 85) -> Chart:
    """An RGBA image on white, as JPEG."""
    alpha = rgba[..., 3:4].astype(np.float32) / 255.0
    rgb = (rgba[..., :3].astype(np.float32) * alpha + 255.0 * (1.0 - alpha)).round().astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    return Chart(buffer.getvalue(), rgb.shape[1], rgb.shape[0])


def topview(centres: np.ndarray, gps: np.ndarray, background: RasterPreview | None, points: np.ndarray,
            colours: np.ndarray, unit: str) -> Chart:
    """Camera positions (N, 2), in capture order and joined by the flight path, with their GPS fixes (N, 2, NaN
    where none) joined to them, over the orthophoto or else the sparse points (M, 2) in their colours (M, 3)."""
    located = np.isfinite(gps).all(axis=1)
    shown = [centres, gps[located]] + ([] if background is not None else [points])
    everything = np.concatenate([s for s in shown if len(s)])
    low, high = everything.min(axis=0), everything.max(axis=0)
    if background is not None:
        xmin, xmax, ymin, ymax = background.extent
        low, high = np.minimum(low, [xmin, ymin]), np.maximum(high, [xmax, ymax])
    origin = low
    figure = _figure(4.6, 4.6 * float(np.clip((high[1] - low[1]) / max(high[0] - low[0], 1e-9), 0.45, 1.3)))
    axes = figure.add_subplot()
    if background is not None:
        axes.imshow(background.pixels, extent=_shifted(background.extent, origin), interpolation="bilinear")
    elif len(points):
        axes.set_facecolor("#202020")
        axes.scatter(points[:, 0] - origin[0], points[:, 1] - origin[1], s=1.5, c=colours / 255.0, linewidths=0)
    camera = centres - origin
    axes.plot(camera[:, 0], camera[:, 1], "-", color="white", linewidth=0.8, alpha=0.8)
    if located.any():
        # One polyline, broken by NaN between the pairs: one artist however many images there are.
        links = np.stack([camera[located], gps[located] - origin, np.full((located.sum(), 2), np.nan)], axis=1)
        axes.plot(*links.reshape(-1, 2).T, "-", color=GPS_COLOUR, linewidth=1.0)
        axes.plot(*(gps[located] - origin).T, "v", color=GPS_COLOUR, markersize=4, label="GPS position")
    axes.plot(camera[:, 0], camera[:, 1], "o", color=CAMERA_COLOUR, markeredgecolor="black", markeredgewidth=0.4,
              markersize=5, label="computed camera position")
    pad = 0.03 * max(high - low)
    axes.set_xlim(-pad, high[0] - low[0] + pad)
    axes.set_ylim(-pad, high[1] - low[1] + pad)
    _axes_in_units(axes, unit)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=2, fontsize=FONT_SIZE, frameon=False)
    return _png(figure)


def elevation(preview: RasterPreview, low: float, high: float, title: str, unit: str) -> Chart:
    """An elevation model in the map tiles' style over [low, high], with its colour scale."""
    rgba = style_elevation(preview.pixels, preview.resolution, low, high)
    aspect = preview.pixels.shape[0] / preview.pixels.shape[1]
    figure = _figure(3.4, 3.4 * float(np.clip(aspect, 0.4, 1.6)) + 0.6)
    axes = figure.add_subplot()
    axes.imshow(rgba, interpolation="bilinear")
    axes.set_axis_off()
    axes.set_title(title, fontsize=FONT_SIZE + 1)
    scale = figure.colorbar(_mappable(ramp_colormap(), Normalize(low, high)), ax=axes,
                            orientation="horizontal", fraction=0.06, pad=0.03)
    scale.set_label(f"elevation ({unit})", fontsize=FONT_SIZE)
    scale.ax.tick_params(labelsize=FONT_SIZE)
    return _png(figure)


def _mappable(colormap: Colormap, norm: Normalize) -> ScalarMappable:
    mappable = ScalarMappable(norm=norm, cmap=colormap)
    mappable.set_array([])
    return mappable


def overlap(overlap_map: OverlapMap, unit: str) -> Chart:
    """Images per ground cell, coloured from red (one) to green (WELL_COVERED or more), with its legend."""
    levels = len(OVERLAP_COLOURS)
    counts = np.minimum(overlap_map.counts, levels - 1)
    xmin, xmax, ymin, ymax = overlap_map.extent
    origin = np.array([xmin, ymin])
    figure = _figure(5.2, 5.2 * float(np.clip((ymax - ymin) / max(xmax - xmin, 1e-9), 0.45, 1.3)) + 0.5)
    axes = figure.add_subplot()
    colormap = ListedColormap(OVERLAP_COLOURS).with_extremes(bad=(0.0, 0.0, 0.0, 0.0))
    norm = BoundaryNorm(np.arange(levels + 1) - 0.5, levels)
    axes.imshow(np.ma.masked_invalid(counts), extent=_shifted(overlap_map.extent, origin), cmap=colormap,
                norm=norm, interpolation="nearest")
    _axes_in_units(axes, unit)
    legend = figure.colorbar(_mappable(colormap, norm), ax=axes, orientation="horizontal",
                             fraction=0.05, pad=0.08, ticks=np.arange(levels))
    legend.ax.set_xticklabels([str(n) for n in range(levels - 1)] + [f"{WELL_COVERED}+"])
    legend.set_label("images that see the ground", fontsize=FONT_SIZE)
    legend.ax.tick_params(labelsize=FONT_SIZE)
    return _png(figure)


def features_per_image(names: Sequence[str], detected: np.ndarray, reconstructed: np.ndarray) -> Chart:
    """Features found in each image, and those that are part of a reconstructed point."""
    figure = _figure(7.0, 2.8)
    axes = figure.add_subplot()
    positions = np.arange(len(names))
    axes.bar(positions, detected, color="#c8d6e5", label="detected")
    axes.bar(positions, reconstructed, color="#1f5f8b", label="reconstructed")
    if len(names) <= 40:
        axes.set_xticks(positions, list(names), rotation=90, fontsize=FONT_SIZE - 2)
    else:
        axes.set_xlabel("images", fontsize=FONT_SIZE)
        axes.set_xticks([])
    axes.set_ylabel("features", fontsize=FONT_SIZE)
    axes.tick_params(axis="y", labelsize=FONT_SIZE)
    axes.legend(fontsize=FONT_SIZE, loc="upper right", framealpha=0.85)
    return _png(figure)


def feature_heatmap(normalized_xy: np.ndarray, aspect: float) -> Chart:
    """Where in the image frame the reconstructed features lie (x, y in 0..1 of the width and height), over all
    images: empty corners or bands show where the lens calibration has nothing to hold on to."""
    columns = 40
    rows = max(1, round(columns * aspect))
    counts, _, _ = np.histogram2d(normalized_xy[:, 1], normalized_xy[:, 0], bins=(rows, columns),
                                  range=((0, 1), (0, 1)))
    figure = _figure(3.4, 3.4 * aspect + 0.7)
    axes = figure.add_subplot()
    image = axes.imshow(counts, cmap=ramp_colormap(), extent=(0, 1, 1, 0), aspect=aspect)
    axes.set_xticks([])
    axes.set_yticks([])
    bar = figure.colorbar(image, ax=axes, orientation="horizontal", fraction=0.06, pad=0.04)
    bar.set_label("reconstructed features per cell", fontsize=FONT_SIZE)
    bar.ax.tick_params(labelsize=FONT_SIZE)
    return _png(figure)


def reconstruction_histograms(track_lengths: np.ndarray, residuals_px: np.ndarray) -> Chart:
    """Two histograms: images per reconstructed point, and reprojection errors of the observations."""
    figure = _figure(7.0, 2.6)
    tracks, errors = figure.subplots(1, 2)
    lengths = np.asarray(track_lengths, dtype=np.int64)
    if len(lengths):
        edges = np.arange(lengths.min(), lengths.max() + 2) - 0.5
        tracks.hist(lengths, bins=edges, color="#1f5f8b")
    tracks.set_xlabel("images that see a point (track length)", fontsize=FONT_SIZE)
    tracks.set_ylabel("points", fontsize=FONT_SIZE)
    if len(residuals_px):
        upper = max(float(np.percentile(residuals_px, 99.5)), 1e-3)
        errors.hist(np.minimum(residuals_px, upper), bins=30, range=(0, upper), color="#1f5f8b")
    errors.set_xlabel("reprojection error (pixels)", fontsize=FONT_SIZE)
    errors.set_ylabel("observations", fontsize=FONT_SIZE)
    for axes in (tracks, errors):
        axes.tick_params(labelsize=FONT_SIZE)
    return _png(figure)
