"""The photometric model's parts and its file: the fall-off, the frames, the hotspot and view slope along rays, and
the corrections each photograph's pixels get."""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np

from ..atomic_files import read_json, write_json

POWERS = (2, 4, 6)  # the even powers of r in the fall-off
DARKENING_STEP_DEG = 0.25  # the angle between the rays that the view terms are worked out on


def log_falloff(coefficients: np.ndarray | tuple[float, ...], radius: np.ndarray) -> np.ndarray:
    """a1 r^2 + a2 r^4 + a3 r^6: the log of the fall-off at normalised radii (coefficients (3,), or (N, 3) for N
    radii)."""
    return sum(c * radius**p for c, p in zip(np.asarray(coefficients, np.float64).T, POWERS))


@dataclass(frozen=True)
class Observations:
    """Colours of sparse points where photographs see them: one row per observation."""

    image: np.ndarray  # (N,) index into the photographs
    point: np.ndarray  # (N,) the point's id
    radius: np.ndarray  # (N,) distance from the principal point over the half diagonal
    colour: np.ndarray  # (N, 3) BGR, 0..255, smoothed around the observation
    ray: np.ndarray | None = None  # (N, 3) unit directions from the camera to the point (world frame)


@dataclass(frozen=True)
class Frame:
    """A camera's frame: its size and principal point (pixels of the stored image)."""

    width: int
    height: int
    cx: float
    cy: float
    focal: float = 0.0  # pixels; what a pixel's ray needs

    def radius(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.hypot(x - self.cx, y - self.cy) / (0.5 * np.hypot(self.width, self.height))


@dataclass(frozen=True)
class Hotspot:
    """How much brighter the ground looks along rays near the sunlight's direction."""

    direction: tuple[float, float, float]  # unit: the sunlight's direction, towards the ground (world frame)
    width_deg: float
    amplitude: tuple[float, float, float]  # BGR log brightening at the antisolar point

    def log_factor(self, rays: np.ndarray) -> np.ndarray:
        """(N, 3) BGR log brightening along (N, 3) unit rays."""
        return kernel(rays @ np.asarray(self.direction), self.width_deg)[:, None] * np.asarray(self.amplitude)


@dataclass(frozen=True)
class ViewSlope:
    """How much brighter the ground looks along rays tilted one way: per band a world vector, perpendicular to the
    survey's mean view, whose dot product with a ray is the log brightening along it."""

    slopes: tuple[tuple[float, float, float], ...]  # B, G, R

    def log_factor(self, rays: np.ndarray) -> np.ndarray:
        """(N, 3) BGR log brightening along (N, 3) unit rays."""
        return rays @ np.asarray(self.slopes).T


def kernel(cosines: np.ndarray, width_deg: float) -> np.ndarray:
    """exp(-alpha / width) of the angles whose cosines are given."""
    return np.exp(-np.degrees(np.arccos(np.clip(cosines, -1.0, 1.0))) / width_deg)


@dataclass(frozen=True)
class Photometry:
    """Per photograph its camera and BGR gains; per camera the fall-off coefficients and frame; the hotspot and the
    view slope, with each photograph's rotation (world from camera, row by row) that their rays need."""

    gains: dict[str, tuple[float, float, float]]
    cameras: dict[str, str]  # photograph -> camera key
    falloff: dict[str, tuple[float, float, float]]  # camera key -> (a1, a2, a3)
    frames: dict[str, Frame]  # camera key -> frame
    hotspot: Hotspot | None = None
    rotations: dict[str, tuple[float, ...]] = field(default_factory=dict)
    view_slope: ViewSlope | None = None

    def vignetting(self, camera: str, radius: np.ndarray) -> np.ndarray:
        """The fall-off factor (1 at the principal point) at normalised radii."""
        a = self.falloff.get(camera, (0.0, 0.0, 0.0))
        return np.exp(log_falloff(a, radius))

    def factors(self, names: np.ndarray, radius: np.ndarray, rays: np.ndarray | None = None) -> np.ndarray:
        """(N, 3) BGR: how much brighter each photograph in `names` shows the ground at each radius (and along
        each ray, for the hotspot and the view slope) than it is."""
        unique, inverse = np.unique(names, return_inverse=True)
        gains = np.array([self.gains.get(n, (1.0, 1.0, 1.0)) for n in unique])[inverse.ravel()]
        falloff = np.array([self.falloff.get(self.cameras.get(n, ""), (0.0, 0.0, 0.0)) for n in unique])
        factors = gains * np.exp(log_falloff(falloff[inverse.ravel()], radius))[:, None]
        if rays is not None:
            factors *= np.exp(self.log_view_factor(rays))
        return factors

    def log_view_factor(self, rays: np.ndarray) -> np.ndarray:
        """(N, 3) BGR log brightening along (N, 3) unit rays that the hotspot and the view slope make."""
        terms = [term.log_factor(rays) for term in (self.hotspot, self.view_slope) if term is not None]
        return sum(terms) if terms else np.zeros((len(rays), 3))

    def correct(self, image: np.ndarray, name: str) -> np.ndarray:
        """The photograph (BGR uint8, stored size or reduced by any factor) with its gains and its camera's
        vignetting divided out."""
        camera = self.cameras.get(name)
        if camera is None:
            return image
        h, w = image.shape[:2]
        boost = _boost_map(self.falloff.get(camera, (0.0, 0.0, 0.0)), self.frames[camera], w, h)
        boosts = [boost] * 3
        darken = self.view_darkening(name, w, h)
        if darken is not None:
            boosts = [boost * darken[:, :, band] for band in range(3)]
        bands = [cv2.multiply(band, factor, dtype=cv2.CV_8U, scale=1.0 / gain)
                 for band, factor, gain in zip(cv2.split(image), boosts, self.gains[name])]
        return cv2.merge(bands)

    def view_darkening(self, name: str, width: int, height: int) -> np.ndarray | None:
        """(height, width, 3) BGR: what divides the hotspot and the view slope out of the photograph's pixels
        read at width x height; None where there is nothing to divide out. Worked out on rays DARKENING_STEP_DEG
        apart and resized, rather than a ray per pixel of a large photograph: between them, even at the hotspot's
        sharp peak, linear interpolation is off by a fraction of a percent."""
        if not (self.hotspot or self.view_slope) or name not in self.rotations:
            return None
        frame = self.frames[self.cameras[name]]
        step = max(1, int(np.radians(DARKENING_STEP_DEG) * frame.focal * width / frame.width))
        coarse_w, coarse_h = -(-width // step), -(-height // step)
        darken = np.exp(-self.log_view_factor(self.pixel_rays(name, coarse_w, coarse_h))).astype(np.float32)
        return cv2.resize(darken.reshape(coarse_h, coarse_w, 3), (width, height), interpolation=cv2.INTER_LINEAR)

    def pixel_rays(self, name: str, width: int, height: int) -> np.ndarray:
        """(width * height, 3) unit world rays of the pixels of the photograph read at width x height (a
        pinhole: the terms are too smooth for the distortion to matter)."""
        frame = self.frames[self.cameras[name]]
        x = (np.arange(width, dtype=np.float64) + 0.5) * frame.width / width
        y = (np.arange(height, dtype=np.float64) + 0.5) * frame.height / height
        xx, yy = np.meshgrid((x - frame.cx) / frame.focal, (y - frame.cy) / frame.focal)
        rays = np.stack([xx.ravel(), yy.ravel(), np.ones(xx.size)], axis=1) @ np.reshape(self.rotations[name], (3, 3)).T
        return rays / np.linalg.norm(rays, axis=1, keepdims=True)

    def figures(self) -> dict:
        """What stats.json records: the fall-off at the corner per camera and the spread of the gains."""
        gains = np.array(list(self.gains.values())) if self.gains else np.ones((1, 3))
        hotspot = None if self.hotspot is None else {
            "brightening": [round(float(np.exp(a)), 3) for a in self.hotspot.amplitude[::-1]],
            "width_deg": self.hotspot.width_deg, "direction": [round(v, 4) for v in self.hotspot.direction]}
        # Per band (R, G, B), the brightening of a ray tilted 20 degrees the brightest way over one looking along
        # the mean view.
        view_slope = None if self.view_slope is None else {
            "brightening_at_20_deg": [round(float(np.exp(np.sin(np.radians(20.0)) * np.linalg.norm(s))), 3)
                                      for s in self.view_slope.slopes[::-1]]}
        return {"corner_falloff": {c: round(float(self.vignetting(c, np.array(1.0))), 3) for c in self.falloff},
                "gain_min": [round(float(v), 3) for v in gains.min(axis=0)[::-1]],
                "gain_max": [round(float(v), 3) for v in gains.max(axis=0)[::-1]],
                "images": len(self.gains), "hotspot": hotspot, "view_slope": view_slope}


@functools.lru_cache(maxsize=8)
def _boost_map(falloff: tuple[float, float, float], frame: Frame, width: int, height: int) -> np.ndarray:
    """1 / fall-off at every pixel of an image of the camera at width x height (any reduction of its frame)."""
    x = (np.arange(width, dtype=np.float64) + 0.5) * frame.width / width
    y = (np.arange(height, dtype=np.float64) + 0.5) * frame.height / height
    radius = frame.radius(x[None, :], y[:, None])
    return np.exp(-log_falloff(falloff, radius)).astype(np.float32)


def write(path: Path, photometry: Photometry | None) -> None:
    if photometry is None:
        path.unlink(missing_ok=True)
        return
    write_json(path, {"gains": photometry.gains, "cameras": photometry.cameras, "falloff": photometry.falloff,
                      "frames": {k: asdict(f) for k, f in photometry.frames.items()},
                      "hotspot": asdict(photometry.hotspot) if photometry.hotspot else None,
                      "rotations": photometry.rotations,
                      "view_slope": photometry.view_slope.slopes if photometry.view_slope else None})


def load(path: Path) -> Photometry | None:
    """The corrections the structure from motion stage estimated, or None (none estimated, or turned off)."""
    values = read_json(path)
    if not values:
        return None
    hotspot, view_slope = values.get("hotspot"), values.get("view_slope")
    return Photometry({k: tuple(v) for k, v in values["gains"].items()}, values["cameras"],
                      {k: tuple(v) for k, v in values["falloff"].items()},
                      {k: Frame(**f) for k, f in values["frames"].items()},
                      Hotspot(tuple(hotspot["direction"]), hotspot["width_deg"], tuple(hotspot["amplitude"]))
                      if hotspot else None, {k: tuple(v) for k, v in values.get("rotations", {}).items()},
                      ViewSlope(tuple(tuple(v) for v in view_slope)) if view_slope else None)


def applied(path: Path, enabled: bool) -> Photometry | None:
    """The corrections to divide out of the photographs: none where the options turn them off."""
    return load(path) if enabled else None
