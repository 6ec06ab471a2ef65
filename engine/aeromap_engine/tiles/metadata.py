"""What WebODM's map asks of a layer before drawing it (its `metadata`): the statistics of each band, or of a
vegetation index, over a preview of the whole raster (a 255-bin histogram, the 2nd and 98th percentiles the map
stretches its colours over, minimum and maximum), the colour maps it may choose from with their colours, and for
a formula WebODM's `algorithms` and `auto_bands`."""

from __future__ import annotations

from typing import Any

import numpy as np
import rasterio

from .formulas import algorithms, auto_bands, band_math
from .render import index_from, preview, raster_bands
from .style import colour, ramp

PREVIEW = 1024  # px across: the whole raster read at about this size, as rio-tiler's previews
HISTOGRAM_BINS = 255
# The colour maps WebODM offers for elevation and for a vegetation index, those Aeromap draws, with its labels.
ELEVATION_COLOR_MAPS = {"viridis": "Viridis", "jet": "Jet", "terrain": "Terrain"}
INDEX_COLOR_MAPS = {"rdylgn": "RdYlGn", "spectral": "Spectral", "rdylgn_r": "RdYlGn (Reverse)",
                    "spectral_r": "Spectral (Reverse)", "viridis": "Viridis", "plasma": "Plasma", "inferno": "Inferno",
                    "magma": "Magma", "jet": "Jet", "jet_r": "Jet (Reverse)"}


def band_statistics(values: np.ndarray, span: tuple[float, float] | None) -> dict[str, Any] | None:
    """Statistics of the finite values: the histogram over `span` (a formula's range) or else their own range,
    which is also the minimum and maximum reported, as WebODM does; None when there is no value."""
    valid = values[np.isfinite(values)].astype(np.float64)
    if valid.size == 0:
        return None
    low, high = span or (float(valid.min()), float(valid.max()))
    counts, edges = np.histogram(valid, bins=HISTOGRAM_BINS, range=(low, high))
    p2, p98 = np.percentile(valid, [2, 98])
    return {"percentiles": [float(p2), float(p98)], "min": low, "max": high, "std": float(valid.std()),
            "histogram": [counts.tolist(), edges.tolist()]}


def color_map_choices(labels: dict[str, str]) -> list[dict[str, Any]]:
    """Each colour map as WebODM lists it: its key, label and 256 RGBA colours from its low end to its high."""
    return [{"key": key, "label": label,
             "color_map": [[*rgb, 255] for rgb in colour(np.linspace(0.0, 1.0, 256), 0.0, 1.0, ramp(key))
                           .round().astype(int).tolist()]}
            for key, label in labels.items()]


def raster_metadata(src: rasterio.io.DatasetReader, elevation: bool, formula: str | None,
                    bands: str | None) -> dict[str, Any]:
    """The metadata of an elevation model (its heights), an orthophoto (its colour bands) or, with a formula and
    bands, the orthophoto's vegetation index. A formula its bands cannot feed is an InputError."""
    raster = raster_bands(src)
    if formula is not None and bands is not None:
        index = band_math(formula, bands, raster)
        values = index_from(src, index, lambda numbers: preview(src, numbers, PREVIEW))[None]
        span = index.formula.range
        choices = color_map_choices(INDEX_COLOR_MAPS)
        listed = algorithms(len(raster.numbers), raster.order)
    else:
        values = preview(src, [1] if elevation else list(raster.numbers), PREVIEW)
        span = None
        choices = color_map_choices(ELEVATION_COLOR_MAPS) if elevation else []
        listed = []
    statistics = {str(band + 1): band_statistics(data, span) for band, data in enumerate(values)}
    return {"statistics": {band: stats for band, stats in statistics.items() if stats is not None},
            "color_maps": choices, "algorithms": listed,
            "auto_bands": auto_bands(formula, bands, raster), "dtype": src.dtypes[0],
            "colorinterp": [interpretation.name for interpretation in src.colorinterp]}
