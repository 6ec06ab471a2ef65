"""From a band's digital numbers to reflectance, with what the camera records of each photograph.

The model is the one DJI documents for its multispectral cameras (P4 Multispectral, Mavic 3M), whose terms
MicaSense and Parrot record under other names: the signal is the digital number less the black level, divided by
the sensor gain and the exposure time (microseconds), multiplied by the vignetting correction
1 + k0 r + k1 r^2 + ... (r: pixels from the optical centre; MicaSense's polynomial of the same form is the
fall-off itself, which divides instead); the reflectance is that signal times the band's
gain adjustment, divided by the irradiance the sunlight sensor measured at the same instant. MicaSense states its
bands' sensitivity instead as a radiometric calibration (a1, a2, a3): the radiance is a1 (DN - black) / 2^bits
over gain and exposure (seconds), divided by 1 + a2 y / exposure - a3 y on row y (the sensor's rows read one
after the other), and the reflectance pi radiance over its sunlight sensor's spectral irradiance; a1 scaled to
this model's units is the band's gain adjustment then. Parrot's Sequoia states its sensor's response as
(A, B, C): the signal is f^2 (DN - B) / (A exposure ISO + C), f the f-number, exposure in seconds. The Sequoia
and MicaSense's later cameras state the fall-off as a polynomial of x / width and y / height (exponent pairs
and coefficients), divided out. The Sequoia's sunshine sensor records its readings in each photograph
(`IrradianceList`, base64 records of time, two channels' counts, gain index and integration time) with the
counts its four gains gave under one light (`IrradianceCalibrationMeasurement`): the irradiance is the last three
readings' counts, each brought to gain 1 and 600 integration units, over that calibration's at gain 1. Pure."""

from __future__ import annotations

import base64
import binascii
import math
import statistics
import struct
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Calibration = Literal["none", "camera", "camera+sun"]
CALIBRATIONS: tuple[Calibration, ...] = ("none", "camera", "camera+sun")


def first_number(*values: Any) -> float | None:
    """The first value that reads as a finite number (EXIF rationals, XMP strings), None if none does."""
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if np.isfinite(number):
            return number
    return None


def number_list(text: str | None) -> tuple[float, ...]:
    """Numbers of an XMP list written "a, b, c" or "a b c"."""
    if not text:
        return ()
    try:
        return tuple(float(part) for part in text.replace(",", " ").split())
    except ValueError:
        return ()


@dataclass(frozen=True)
class Radiometry:
    """What a photograph records of its radiometry; None where it does not say."""

    black_level: float
    gain: float
    exposure_us: float | None
    adjustment: float  # the band's gain adjustment (DJI SensorGainAdjustment), 1 where not recorded
    irradiance: float | None  # the sunlight sensor's reading
    vignetting: tuple[float, ...]  # k0, k1, ... of the correction polynomial
    centre: tuple[float, float] | None  # the optical centre the vignetting is measured from, pixels
    row_gradient: tuple[float, float] | None = None  # MicaSense's a2, a3
    falloff: bool = False  # the polynomial is the lens's fall-off (MicaSense), not its correction (DJI)
    falloff_2d: tuple[tuple[float, float, float], ...] = ()  # x power, y power, coefficient
    sensor_model: tuple[float, float, float, float] | None = None  # Sequoia's A, B, C and the f-number

    @staticmethod
    def of(exif: dict[str, Any], xmp: dict[str, str]) -> "Radiometry":
        iso = first_number(exif.get("ISOSpeedRatings"))
        seconds = first_number(exif.get("ExposureTime"))
        black = first_number(xmp.get("drone-dji:BlackLevel"), xmp.get("Camera:BlackLevel"),
                             _first(exif.get("BlackLevel")))
        centre_x = first_number(xmp.get("drone-dji:CalibratedOpticalCenterX"))
        centre_y = first_number(xmp.get("drone-dji:CalibratedOpticalCenterY"))
        micasense_centre = number_list(xmp.get("Camera:VignettingCenter"))
        centre = ((centre_x, centre_y) if centre_x is not None and centre_y is not None
                  else micasense_centre[:2] if len(micasense_centre) >= 2 else None)
        micasense = number_list(xmp.get("Camera:RadiometricCalibration"))
        dji_vignetting = number_list(xmp.get("drone-dji:VignettingData"))
        bits = first_number(_first(exif.get("BitsPerSample"))) or 16
        sequoia = number_list(xmp.get("Camera:SensorModel"))
        f_number = first_number(exif.get("FNumber"))
        sensor_model = (*sequoia[:3], f_number) if len(sequoia) == 3 and f_number and iso else None
        return Radiometry(
            black_level=sensor_model[1] if sensor_model else black or 0.0,
            gain=first_number(xmp.get("drone-dji:SensorGain")) or (iso / 100.0 if iso else 1.0),
            exposure_us=first_number(xmp.get("drone-dji:ExposureTime")) or (seconds * 1e6 if seconds else None),
            adjustment=first_number(xmp.get("drone-dji:SensorGainAdjustment"))
            or (math.pi * 1e6 * micasense[0] / 2 ** bits if micasense and micasense[0] > 0 else 1.0),
            irradiance=first_number(xmp.get("drone-dji:Irradiance"), xmp.get("Camera:SpectralIrradiance"),
                                    xmp.get("Camera:Irradiance"), xmp.get("DLS:SpectralIrradiance"),
                                    sunshine_irradiance(xmp.get("Camera:IrradianceList"),
                                                        xmp.get("Camera:IrradianceCalibrationMeasurement"))),
            vignetting=dji_vignetting or number_list(xmp.get("Camera:VignettingPolynomial")),
            centre=centre,
            row_gradient=(micasense[1], micasense[2]) if len(micasense) >= 3 else None,
            falloff=not dji_vignetting,
            falloff_2d=_polynomial_2d(number_list(xmp.get("Camera:VignettingPolynomial2DName")),
                                      number_list(xmp.get("Camera:VignettingPolynomial2D"))),
            sensor_model=sensor_model)

    def to_json(self) -> dict[str, Any]:
        return {"black_level": self.black_level, "gain": self.gain, "exposure_us": self.exposure_us,
                "adjustment": self.adjustment, "irradiance": self.irradiance, "vignetting": list(self.vignetting),
                "centre": list(self.centre) if self.centre else None,
                "row_gradient": list(self.row_gradient) if self.row_gradient else None, "falloff": self.falloff,
                "falloff_2d": [list(term) for term in self.falloff_2d],
                "sensor_model": list(self.sensor_model) if self.sensor_model else None}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Radiometry":
        row_gradient, sensor_model = data.get("row_gradient"), data.get("sensor_model")  # absent from earlier runs'
        return Radiometry(data["black_level"], data["gain"], data["exposure_us"], data["adjustment"],
                          data["irradiance"], tuple(data["vignetting"]),
                          tuple(data["centre"]) if data["centre"] else None,
                          tuple(row_gradient) if row_gradient else None, data.get("falloff", False),
                          tuple(tuple(term) for term in data.get("falloff_2d", [])),
                          tuple(sensor_model) if sensor_model else None)

    def sensitivity(self) -> float:
        """What turns the digital numbers less the black level, the fall-off corrected, into the band's signal:
        the gain adjustment over gain and exposure; Sequoia's f^2 / (A exposure ISO + C) where it states it."""
        if self.sensor_model:
            a, _, c, f_number = self.sensor_model
            return f_number ** 2 / (a * self.exposure_us * 1e-6 * self.gain * 100 + c)
        return self.adjustment / (self.gain * self.exposure_us)


_SUNSHINE_RECORD = struct.Struct("<QHHHHfff")  # time, CH0, CH1, gain index, integration time, yaw, pitch, roll
SUNSHINE_READINGS = 3  # the last readings averaged: the sensor's noise, not the light's change over a second
SUNSHINE_TIME = 600.0  # the integration time readings are brought to


def sunshine_irradiance(readings: str | None, calibration: str | None) -> float | None:
    """The Sequoia sunshine sensor's irradiance at a photograph (relative to its calibration light), None where
    the readings or the calibration are missing or unreadable."""
    gains = number_list(calibration)
    if not readings or len(gains) != 16 or any(gains[i] <= 0 for i in (1, 5, 9, 13)):
        return None
    # Counts per SUNSHINE_TIME at each gain index under the calibration light.
    at_gain = [gains[4 * i + 2] * SUNSHINE_TIME / gains[4 * i + 1] for i in range(4)]
    try:
        raw = base64.b64decode(readings, validate=False)
    except (binascii.Error, ValueError):
        return None
    usable = len(raw) - len(raw) % _SUNSHINE_RECORD.size
    values = [count * at_gain[1] / at_gain[gain] * SUNSHINE_TIME / time
              for _, count, _, gain, time, *_ in _SUNSHINE_RECORD.iter_unpack(raw[:usable])
              if gain < 4 and time > 0 and at_gain[gain] > 0]
    if len(values) < SUNSHINE_READINGS or at_gain[1] <= 0:
        return None
    return statistics.fmean(values[-SUNSHINE_READINGS:]) / at_gain[1]


def _polynomial_2d(powers: tuple[float, ...],
                   coefficients: tuple[float, ...]) -> tuple[tuple[float, float, float], ...]:
    """The terms of a 2D fall-off polynomial from its exponent pairs and coefficients; none if they disagree."""
    if not coefficients or len(powers) != 2 * len(coefficients):
        return ()
    return tuple((powers[2 * i], powers[2 * i + 1], c) for i, c in enumerate(coefficients))


def _first(value: Any) -> Any:
    """EXIF BlackLevel may be one value per colour channel: the first."""
    return value[0] if isinstance(value, (tuple, list)) and value else value


def vignetting_correction(shape: tuple[int, int], radiometry: Radiometry) -> np.ndarray | None:
    """(h, w) float32 factors that undo the lens's falloff, None when the photograph records none."""
    if not radiometry.vignetting and not radiometry.falloff_2d:
        return None
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    correction = np.ones(shape, np.float32)
    if radiometry.vignetting:
        cx, cy = radiometry.centre or ((w - 1) / 2, (h - 1) / 2)
        r = np.hypot(xx - np.float32(cx), yy - np.float32(cy))
        polynomial = np.ones(shape, np.float32)
        power = np.ones(shape, np.float32)
        for k in radiometry.vignetting:
            power *= r
            polynomial += np.float32(k) * power
        correction = 1 / polynomial if radiometry.falloff else polynomial
    if radiometry.falloff_2d:
        u, v = xx / np.float32(w), yy / np.float32(h)
        falloff = sum(np.float32(c) * u ** np.float32(px) * v ** np.float32(py) for px, py, c in radiometry.falloff_2d)
        correction /= falloff
    return correction


def reference_irradiance(readings: list[Radiometry]) -> float | None:
    """The survey's typical sunlight (median of the readings), which `camera` calibration takes as constant."""
    values = [r.irradiance for r in readings if r.irradiance]
    return statistics.median(values) if values else None


def calibrate(values: np.ndarray, radiometry: Radiometry, calibration: Calibration,
              reference: float | None) -> np.ndarray:
    """A band's digital numbers (h, w) as float32: as they are (`none`); the camera's signal divided by the
    survey's typical irradiance (`camera`: reflectance when the sunlight held steady); or by the irradiance at
    this photograph (`camera+sun`: reflectance). Without exposure time the signal cannot be made comparable
    between photographs and the digital numbers are kept."""
    values = values.astype(np.float32)
    if calibration == "none" or radiometry.exposure_us is None:
        return values
    signal = np.maximum(values - np.float32(radiometry.black_level), 0)
    correction = vignetting_correction(values.shape, radiometry)
    if correction is not None:
        signal *= correction
    if radiometry.row_gradient:
        a2, a3 = radiometry.row_gradient
        rows = np.arange(values.shape[0], dtype=np.float32)[:, None]
        signal /= 1 + np.float32(a2 / (radiometry.exposure_us * 1e-6)) * rows - np.float32(a3) * rows
    signal *= np.float32(radiometry.sensitivity())
    sunlight = radiometry.irradiance if calibration == "camera+sun" and radiometry.irradiance else reference
    return signal / np.float32(sunlight) if sunlight else signal


def temperatures(values: np.ndarray) -> np.ndarray:
    """A thermal band's values in °C (float32): whole numbers are centi-kelvin, as MicaSense's Altum writes its
    LWIR band; fractional ones (the dataset stage's temperatures of R-JPEGs) are degrees already."""
    if np.issubdtype(values.dtype, np.integer):
        return values.astype(np.float32) / np.float32(100) - np.float32(273.15)
    return values.astype(np.float32)
