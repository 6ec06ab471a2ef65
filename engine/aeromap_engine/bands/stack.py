"""A capture's bands as the orthophoto reads them: each band's file calibrated (radiometry.py), resampled onto
the primary band's pixels by the rig's homography and the lenses' difference (alignment.py), stacked in the
survey's band order, and each band's brightening with the viewing angle divided out (view_angle.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from ..io.images import read_band
from ..photometry import Photometry
from .alignment import BandAlignment, best_alignment, nominal, sampling_map, warp_to_primary
from .groups import BandSurvey
from .lenses import BandLens, stated_alignment
from .radiometry import Calibration, Radiometry, calibrate, reference_irradiance, temperatures
from .view_angle import darkening

ALIGNMENT_SAMPLES = 6  # captures the rig's alignment is estimated on, spread over the flight


@dataclass
class BandStack:
    images_dir: Path
    survey: BandSurvey
    radiometry: dict[str, Radiometry]  # per file
    calibration: Calibration
    lenses: dict[str, BandLens] = field(default_factory=dict)  # band -> its lens as the metadata state it
    alignments: dict[str, BandAlignment] = field(default_factory=dict)  # band -> primary px to band px
    view_terms: dict[str, Photometry] = field(default_factory=dict)  # band -> its hotspot and view slope
    unit: float = 1.0  # a value twice the survey's typical one: what the seam placement compares colours by

    def __post_init__(self) -> None:
        self.reference = reference_irradiance(list(self.radiometry.values()))
        self._thermal = {files["LWIR"] for files in self.survey.captures.values() if "LWIR" in files}
        # The same for every capture: worked out once per band and frame size.
        self._maps: dict[tuple[str, tuple[int, int], tuple[int, int]], tuple[np.ndarray, np.ndarray]] = {}

    @staticmethod
    def load(images_dir: Path, document: dict, calibration: Calibration) -> "BandStack":
        """The stack of the dataset stage's bands.json."""
        return BandStack(images_dir, BandSurvey.from_json(document), {
            file: Radiometry.from_json(values) for file, values in document["radiometry"].items()}, calibration,
            {band: BandLens.from_json(lens) for band, lens in document.get("lenses", {}).items()})

    def samples(self) -> list[dict[str, str]]:
        """A few captures spread over the survey, band -> file."""
        captures = sorted(self.survey.captures)
        step = max(1, len(captures) // ALIGNMENT_SAMPLES)
        return [self.survey.captures[name] for name in captures[::step][:ALIGNMENT_SAMPLES]]

    def measure_unit(self) -> None:
        primaries = [self.band_values(files[self.survey.primary]) for files in self.samples()]
        typical = float(np.median([np.nanmedian(values) for values in primaries]))
        # Temperatures may be at or below zero: their spread over a frame is their scale then.
        spread = float(np.median([np.subtract(*np.nanpercentile(values, [98, 2])) for values in primaries]))
        self.unit = 2 * typical if typical > 0 else 2 * spread if spread > 0 else 1.0

    def band_values(self, filename: str) -> np.ndarray:
        """One band file's calibrated values, full resolution; a thermal band's in °C."""
        values = read_band(self.images_dir / filename)
        if filename in self._thermal:
            return temperatures(values)
        return calibrate(values, self.radiometry[filename], self.calibration, self.reference)

    def read(self, primary_file: str, scale: float) -> np.ndarray:
        """(h, w, bands) float32 of a capture on its primary photograph's pixels at `scale` (NaN where a band's
        frame does not reach)."""
        files = self.survey.captures[primary_file]
        primary = self.band_values(files[self.survey.primary])
        layers = []
        for band in self.survey.bands:
            if band == self.survey.primary:
                layers.append(primary)
                continue
            values = self.band_values(files[band])
            layers.append(warp_to_primary(values, self._sampling(band, primary.shape, values.shape)))
        stack = np.dstack(layers)
        if scale < 1:
            h, w = primary.shape
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            stack = cv2.resize(stack, size, interpolation=cv2.INTER_AREA)
        stack = stack.reshape(stack.shape[0], stack.shape[1], len(layers))
        for index, band in enumerate(self.survey.bands):
            if band in self.view_terms:
                factor = darkening(self.view_terms[band], primary_file, stack.shape[1], stack.shape[0])
                if factor is not None:
                    stack[:, :, index] *= factor
        return stack

    def stated(self, band: str, primary_shape: tuple[int, int]) -> BandAlignment | None:
        """The alignment the primary's and the band's lenses predict, where the metadata state both."""
        primary, lens = self.lenses.get(self.survey.primary), self.lenses.get(band)
        return None if primary is None or lens is None else stated_alignment(primary, lens, primary_shape)

    def _sampling(self, band: str, primary_shape: tuple[int, int],
                  band_shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        key = (band, primary_shape, band_shape)
        if key not in self._maps:
            found = self.alignments.get(band)
            self._maps[key] = sampling_map(nominal(primary_shape, band_shape) if found is None else found.homography,
                                           None if found is None else found.lens, primary_shape)
        return self._maps[key]

    def align(self) -> dict[str, BandAlignment | None]:
        """Estimate every band's alignment on a few captures spread over the survey, from what the lenses'
        metadata state where they do; a band whose estimate fails keeps the stated alignment, else the nominal
        one. Returns what was found per band."""
        samples = self.samples()
        primaries = [self.band_values(files[self.survey.primary]) for files in samples]
        found: dict[str, BandAlignment | None] = {}
        for band in self.survey.bands:
            if band == self.survey.primary:
                continue
            pairs = [(primary, self.band_values(files[band])) for primary, files in zip(primaries, samples)]
            found[band] = best_alignment(pairs, self.stated(band, primaries[0].shape))
            if found[band] is not None:
                self.alignments[band] = found[band]
                self._maps.clear()
        return found
