"""Each band's brightening with the viewing angle (the hotspot, the view slope), estimated on the band's own
values at the sparse points, as photometry/ does for colour photographs: the hotspot is strongest in the near
infrared, and a reflectance map keeps the flight pattern unless every band has its own taken out. The bands'
gains and fall-off are left to the radiometric calibration, which knows the exposures and the sunlight."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pycolmap

from .. import photometry
from ..log import log
from ..photometry import Hotspot, Observations, Photometry
from ..photometry.view_angle import SEARCH, HotspotShape
from ..sfm.pixels import frame_of, observe_values, rotations_of

if TYPE_CHECKING:
    from .stack import BandStack

# Points whose observations a band's amplitudes are solved from: a few unknowns more than the photographs' gains,
# against the colour estimate's 10,000 for the whole model with the search.
BAND_TRACKS = 3000
LEVELS = 255.0  # the estimate compares 8-bit colours: a band's values are scaled so its typical one sits mid-way
# Where the primary band shows no hotspot, the band it is sought in: shadows hide behind leaves most in the near
# infrared, where leaves are brightest.
SOUGHT_IN = "NIR"


def band_view_terms(stack: "BandStack", model: pycolmap.Reconstruction, primary_hotspot: Hotspot | None,
                    threads: int) -> dict[str, Photometry]:
    """Per band whose values brighten with the viewing angle, the estimate holding its hotspot and view slope
    (its gains and fall-off are not applied: see the module's notes). The sunlight's direction and the hotspot's
    width are the same in every band: those found on the primary band, else those sought in SOUGHT_IN's values
    (seeking them in every band would cost a quarter of the survey's time); only the amplitudes are solved band
    by band."""
    if all(band == "LWIR" for band in stack.survey.bands):
        return {}
    names, observations, _ = observe_values(model, lambda name: stack.read(name, 1.0), threads)
    observations = some_points(observations, BAND_TRACKS)
    cameras = [str(model.find_image_with_name(name).camera_id) for name in names]
    frames = {str(i): frame_of(c) for i, c in model.cameras.items()}
    rotations = rotations_of(model)

    def estimate(index: int, hotspot: HotspotShape) -> Photometry | None:
        return photometry.estimate(band_observations(observations, index), names, cameras, frames, rotations,
                                   hotspot)

    shape: HotspotShape = primary_hotspot
    if shape is None and SOUGHT_IN in stack.survey.bands and SOUGHT_IN != stack.survey.primary:
        sought = estimate(stack.survey.bands.index(SOUGHT_IN), SEARCH)
        shape = sought.hotspot if sought is not None else None
        log.info("The %s band shows %s", SOUGHT_IN, "no hotspot either" if shape is None else
                 f"the hotspot that {stack.survey.primary} does not: {shape.width_deg:g} degrees wide")
    terms = {}
    for index, band in enumerate(stack.survey.bands):
        if band == "LWIR":  # temperatures, not a brightness that the viewing angle scales
            continue
        found = estimate(index, shape)
        if found is not None and (found.hotspot is not None or found.view_slope is not None):
            terms[band] = found
    return terms


def some_points(observations: Observations, most: int) -> Observations:
    """The observations of at most `most` of their points, chosen at random (the same for every band)."""
    points = np.unique(observations.point)
    if len(points) <= most:
        return observations
    keep = np.isin(observations.point, np.random.default_rng(0).choice(points, most, replace=False))
    return Observations(observations.image[keep], observations.point[keep], observations.radius[keep],
                        observations.colour[keep], None if observations.ray is None else observations.ray[keep])


def band_observations(observations: Observations, index: int) -> Observations:
    """One band's values of multi-band observations as the grey colours the estimate reads: twice the band's
    median at LEVELS (the bands' reflectances differ manyfold: soil is bright in red, leaves in near infrared),
    none where the band's frame does not reach (NaN, below the estimate's dark limit)."""
    values = observations.colour[:, index]
    typical = float(np.nanmedian(values)) if np.isfinite(values).any() else 0.0
    grey = np.nan_to_num(values * (LEVELS / (2 * typical)), nan=0.0) if typical > 0 else np.zeros_like(values)
    return Observations(observations.image, observations.point, observations.radius,
                        np.repeat(grey[:, None], 3, axis=1), observations.ray)


def darkening(terms: Photometry, name: str, width: int, height: int) -> np.ndarray | None:
    """(height, width): what divides a band's brightening with the viewing angle out of the capture `name` read
    at width x height."""
    darken = terms.view_darkening(name, width, height)
    return None if darken is None else darken[:, :, 0]


def view_angle_figures(terms: Photometry) -> dict:
    """What stats.json records of a band's terms: the hotspot's brightening, width and direction, and the view
    slope's brightening at 20 degrees (one value: a band's grey has three equal channels)."""
    figures = terms.figures()
    hotspot, slope = figures["hotspot"], figures["view_slope"]
    return {"hotspot": None if hotspot is None else {**hotspot, "brightening": hotspot["brightening"][0]},
            "view_slope": None if slope is None else {"brightening_at_20_deg": slope["brightening_at_20_deg"][0]}}
