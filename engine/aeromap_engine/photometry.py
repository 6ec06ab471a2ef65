"""Photometric corrections of the photographs: each camera's vignetting (brightness falling off towards the corners
of the frame) and each photograph's exposure gain per band, estimated from the sparse points that several
photographs see (the same ground at different places in their frames and under different exposures), and divided
out of every photograph before the dense cloud is coloured, the model textured and the orthophoto mosaicked, so
that uniform ground (fields, sand, roofs) shows no photograph's footprint.

The model, in logarithms, for point j seen in photograph k (band b):

    log I = log g_kb + v_c(r) + log L_jb,    v_c(r) = a1 r^2 + a2 r^4 + a3 r^6

with r the distance from camera c's principal point over half the frame's diagonal. It is solved by sparse least
squares with the points' radiances L as unknowns, reweighted (Huber) so that occlusions, moving things and
glints do not pull it, with the geometric mean of the gains held at 1 in every band: the survey's radiometry
stays as it was (no stretch, no matching to a look); only the differences between photographs go. It is held in
each group of photographs that shared points tie together: nothing compares the exposures of two groups that
share none (a survey in two parts), and one mean over both let the solver trade one group's gains for its points'
radiances, lighting one group up and darkening the other.

The ground also looks brighter towards the antisolar point (the hotspot: shadows hide behind what casts them), a
soft disc repeated photograph by photograph; and away from it, fields and crops still look brighter looking away
from the sun than towards it (the first-order term of their reflectance's dependence on the viewing angle), a
gradient across every frame that turns with the sun, not with the camera, which no gain or radially symmetric
fall-off takes out and which leaves steps where two photographs meet. Where the rays are known, the terms

    h_b(alpha) = A_b exp(-alpha / w),    alpha: the angle between the ray and the sunlight's direction
    s_b . ray,                           s_b perpendicular to the survey's mean view (the view slope)

join the model: the sunlight's direction is searched for in the residuals of the model without them, over
directions around the photographs' mean view; then A_b and s_b are solved with everything else, for each of a
few widths w, and the fit with the least (Huber) cost kept. The hotspot is kept only when it brightens by at
least MIN_HOTSPOT, explains a share of the residuals and lowers the cost; the view slope when it brightens the
frames' edges by at least MIN_VIEW_SLOPE; each only when it brightens the bands alike (within MAX_VIEW_SPREAD).
Both are divided out of every pixel along its ray.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np
import scipy.sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import lsqr

from .atomic_files import read_json, write_json
from .log import log

POWERS = (2, 4, 6)  # the even powers of r in the fall-off
MIN_TRACKS = 200  # points seen at least twice needed for an estimate
MAX_TRACKS = 10_000  # points used at most (a random choice): more add time, not accuracy
DARK, BRIGHT = 8.0, 245.0  # observations outside these (any band) are clipped or noise: not used
HUBER = 0.05  # log units: residuals beyond this are down-weighted
ROUNDS = 3
GAIN_RANGE = (0.25, 4.0)  # gains beyond these are not exposure differences: held at the limit
# An exposure scales every band alike, white balance by a little: bands of one photograph that need gains further
# apart than this are not a camera's linear response but a false-colour palette (as thermal cameras write), where
# per-band gains would paint other temperatures.
MAX_BAND_SPREAD = 1.5
MIN_CORNER = 0.3  # a fall-off darker than this at the corner (r = 1) is not vignetting: none is corrected
RIDGE = 1e-3  # pull of the gains and fall-off towards none where the data say little
HOTSPOT_WIDTHS = (3.0, 6.0, 12.0)  # degrees: the kernel widths tried
HOTSPOT_REACH = 45.0  # degrees from the mean view searched for the sunlight's direction
MIN_HOTSPOT = 0.02  # log brightening at the antisolar point below which no hotspot is corrected
MIN_EXPLAINED = 0.05  # share of the residuals' squares the hotspot must explain
# Shadows hiding behind what casts them, and the ground's other changes with the viewing angle, brighten every band
# much alike; a brightening in one direction that some bands show far more than others is something else (light
# reflected by water from the sky's bright part).
MAX_VIEW_SPREAD = 1.6
HOTSPOT_SAMPLE = 8000  # observations the search looks at: enough for a smooth term of five unknowns
MIN_VIEW_SLOPE = 0.01  # log brightening at the frames' edges (the 95th percentile of the rays' tilts) to be kept


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
        if (self.hotspot or self.view_slope) and name in self.rotations:
            darken = np.exp(-self.log_view_factor(self.pixel_rays(name, w, h))).astype(np.float32)
            boosts = [boost * darken[:, band].reshape(h, w) for band in range(3)]
        bands = [cv2.multiply(band, factor, dtype=cv2.CV_8U, scale=1.0 / gain)
                 for band, factor, gain in zip(cv2.split(image), boosts, self.gains[name])]
        return cv2.merge(bands)

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


def estimate(observations: Observations, names: list[str], cameras: list[str], frames: dict[str, Frame],
             rotations: dict[str, tuple[float, ...]] | None = None) -> Photometry | None:
    """The corrections that make the observations of each point agree (see the module's notes); None when too
    few points are seen twice to tell. `rotations` (world from camera, per photograph) let a hotspot and a view
    slope be corrected, with the observations' rays."""
    usable = _usable(observations)
    if usable is None:
        return None
    image, track, radius, log_colour, rays = usable
    camera_keys = sorted(set(cameras))
    camera_of = np.array([camera_keys.index(c) for c in cameras])[image]
    n_images, n_cameras = len(names), len(camera_keys)
    matrix, unknowns = _design(image, track, radius, camera_of, n_images, n_cameras)
    right = log_colour.T.ravel()
    groups = _tied_groups(image, track, n_images)
    solution, weights = _robust_solve(matrix, right, groups, unknowns)
    hotspot, view_slope = None, None
    if rays is not None and rotations:
        model = _Model(image, track, radius, camera_of, n_images, n_cameras, right, groups, weights)
        hotspot, view_slope, sloped = _along_rays(model, rays, solution, unknowns, right - matrix @ solution)
        if view_slope is not None:
            solution = sloped
        elif hotspot is not None:
            solution, _ = _robust_solve(matrix, right - hotspot.log_factor(rays).T.ravel(), groups, unknowns,
                                        solution, weights, rounds=1)
    log_gains = solution[:3 * n_images].reshape(n_images, 3)
    spread = float(np.exp(np.ptp(log_gains, axis=1)).max())
    if spread > MAX_BAND_SPREAD:
        log.info("No photometric correction: one photograph's bands would need gains %.1f times apart, which no "
                 "exposure makes (false colours, as a thermal camera's palette?)", spread)
        return None
    falloff = solution[3 * n_images:3 * n_images + len(POWERS) * n_cameras].reshape(n_cameras, len(POWERS))
    gains = np.clip(np.exp(log_gains), *GAIN_RANGE)
    # The fall-off at the corner is exp(a1 + a2 + a3); outside the plausible range the fit followed something
    # else (a scene brighter at the frame's edge), and that camera is left uncorrected.
    kept = {key: tuple(map(float, a)) for key, a in zip(camera_keys, falloff)
            if MIN_CORNER <= np.exp(a.sum()) <= 1.05}
    along_rays = hotspot is not None or view_slope is not None
    return Photometry({name: tuple(map(float, g)) for name, g in zip(names, gains)}, dict(zip(names, cameras)),
                      kept, frames, hotspot, dict(rotations or {}) if along_rays else {}, view_slope)


@dataclass(frozen=True)
class _Model:
    """The observations as the model sees them, and the weights its robust solve gave them."""

    image: np.ndarray
    track: np.ndarray
    radius: np.ndarray
    camera_of: np.ndarray
    n_images: int
    n_cameras: int
    right: np.ndarray  # the observations' log colours, band by band
    groups: np.ndarray
    weights: np.ndarray

    def fit(self, terms: np.ndarray, start: np.ndarray, start_unknowns: int, rounds: int = 1
            ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """With per band a coefficient of each column of `terms`, solved from the solution `start` of a model
        without them (whose unknowns before the radiances number `start_unknowns`): Huber's cost, the terms'
        coefficients (3, T), the solution and the weights."""
        matrix, unknowns = _design(self.image, self.track, self.radius, self.camera_of, self.n_images,
                                   self.n_cameras, terms)
        n_terms = terms.shape[1]
        x0 = np.concatenate([start[:start_unknowns], np.zeros(unknowns - start_unknowns), start[start_unknowns:]])
        solution, weights = _robust_solve(matrix, self.right, self.groups, unknowns, x0, self.weights, rounds)
        coefficients = solution[unknowns - 3 * n_terms:unknowns].reshape(3, n_terms)
        return _huber_cost(matrix @ solution - self.right), coefficients, solution, weights


def _along_rays(model: _Model, rays: np.ndarray, solution: np.ndarray, unknowns: int, residual: np.ndarray
                ) -> tuple[Hotspot | None, ViewSlope | None, np.ndarray]:
    """The hotspot and the view slope, and the model's unknowns solved with them (the gains and fall-off in the
    columns _design gives them), from the model's `solution` without either. A hotspot near the mean view and a
    view slope explain some of the same residuals, and the gains and fall-off some of both: the sunlight's
    direction is searched for in its `residual` as it shows and looking past any view slope; then the hotspot's
    amplitudes are solved with everything else, at each width (once, with the weights the model had), and the fit
    with the least cost kept (none where no hotspot lowers it), then solved again with its own weights."""
    axes = perpendiculars(rays.mean(axis=0))
    tilts = rays @ axes.T
    residual = residual.reshape(3, len(model.image))
    candidates: list[tuple[np.ndarray, Hotspot | None]] = [(tilts, None)]
    for direction in _directions(find_hotspot(rays, residual, model.track),
                                 find_hotspot(rays, residual, model.track, tilts)):
        for width in HOTSPOT_WIDTHS:
            k = kernel(rays @ direction, width)
            candidates.append((np.column_stack([tilts, k]), Hotspot(tuple(map(float, direction)), width, (0.0,) * 3)))
    best_cost, best = np.inf, candidates[0]
    for terms, hotspot in candidates:
        cost, coefficients, _, _ = model.fit(terms, solution, unknowns)
        if cost < best_cost and (hotspot is None or _plausible(tuple(coefficients[:, 2]))):
            best_cost, best = cost, (terms, hotspot)
    terms, hotspot = best
    _, coefficients, fitted, _ = model.fit(terms, solution, unknowns, rounds=2)
    if hotspot is not None:
        hotspot = Hotspot(hotspot.direction, hotspot.width_deg, tuple(map(float, coefficients[:, 2])))
        if not _plausible(hotspot.amplitude):  # the reweighted fit says otherwise: solved without it
            hotspot = None
            _, coefficients, fitted, _ = model.fit(tilts, solution, unknowns, rounds=2)
    return hotspot, _view_slope(coefficients[:, :2], axes, tilts), fitted


def _directions(*found: Hotspot | None) -> list[np.ndarray]:
    """The sunlight's directions of the hotspots found, those within a degree of another's counted once."""
    directions: list[np.ndarray] = []
    for hotspot in found:
        if hotspot is not None and all(np.dot(hotspot.direction, d) < np.cos(np.radians(1.0)) for d in directions):
            directions.append(np.asarray(hotspot.direction))
    return directions


def _plausible(amplitude: tuple[float, ...]) -> bool:
    """A brightening of every band, strong enough to correct, and alike in all (see MAX_VIEW_SPREAD)."""
    return min(amplitude) > 0 and max(amplitude) >= MIN_HOTSPOT and max(amplitude) <= MAX_VIEW_SPREAD * min(amplitude)


def _huber_cost(residual: np.ndarray) -> float:
    size = np.abs(residual)
    return float(np.where(size <= HUBER, 0.5 * size**2, HUBER * (size - 0.5 * HUBER)).sum())


def _design(image: np.ndarray, track: np.ndarray, radius: np.ndarray, camera_of: np.ndarray, n_images: int,
            n_cameras: int, terms: np.ndarray | None = None) -> tuple[scipy.sparse.csr_matrix, int]:
    """The model's matrix, one row per observation and band: the gain of (image, band), the fall-off terms of
    its camera, per band a coefficient of each column of `terms` (N, T: terms of the rays, their tilts and a
    hotspot's kernel), the radiance of (point, band); and the number of unknowns before the radiances."""
    rows, n_tracks = len(image), int(track.max()) + 1
    n_terms = 0 if terms is None else terms.shape[1]
    unknowns = 3 * n_images + len(POWERS) * n_cameras + 3 * n_terms
    rows_of, columns_of, values = [], [], []
    for band in range(3):
        row = band * rows + np.arange(rows)
        rows_of += [row, row]
        columns_of += [3 * image + band, unknowns + 3 * track + band]
        values += [np.ones(rows), np.ones(rows)]
        for k, power in enumerate(POWERS):
            rows_of.append(row)
            columns_of.append(3 * n_images + len(POWERS) * camera_of + k)
            values.append(radius**power)
        for k in range(n_terms):
            rows_of.append(row)
            columns_of.append(np.full(rows, 3 * n_images + len(POWERS) * n_cameras + n_terms * band + k))
            values.append(terms[:, k])
    matrix = scipy.sparse.csr_matrix((np.concatenate(values), (np.concatenate(rows_of), np.concatenate(columns_of))),
                                     shape=(3 * rows, unknowns + 3 * n_tracks))
    return matrix, unknowns


def _view_slope(per_band: np.ndarray, axes: np.ndarray, tilts: np.ndarray) -> ViewSlope | None:
    """The view slope of the solved coefficients (3, 2: per band, along the two axes of the tilts), or None when
    it brightens the frames' edges by less than MIN_VIEW_SLOPE or the bands unalike."""
    edge = float(np.percentile(np.linalg.norm(tilts, axis=1), 95))
    mean = per_band.mean(axis=0)
    along = per_band @ mean / max(float(np.linalg.norm(mean)), 1e-12)  # each band's slope in the bands' direction
    if np.linalg.norm(per_band, axis=1).max() * edge < MIN_VIEW_SLOPE:
        return None
    if along.min() <= 0 or along.max() > MAX_VIEW_SPREAD * along.min():
        log.info("No view-angle correction: the bands brighten %s times apart with the viewing angle (water "
                 "reflecting the sky?)", "many" if along.min() <= 0 else f"{along.max() / along.min():.1f}")
        return None
    return ViewSlope(tuple(tuple(map(float, band @ axes)) for band in per_band))


def _robust_solve(matrix: scipy.sparse.csr_matrix, right: np.ndarray, groups: np.ndarray, unknowns: int,
                  start: np.ndarray | None = None, weights: np.ndarray | None = None, rounds: int = ROUNDS
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The model's unknowns, reweighted `rounds` times (Huber), from a `start` and `weights` where given; and the
    weights the last residuals give."""
    weights = np.ones(len(right)) if weights is None else weights
    solution = start
    for _ in range(rounds):
        solution = _solve(matrix, right, weights, groups, unknowns, solution)
        weights = _huber_weights(matrix @ solution - right)
    return solution, weights


def _huber_weights(residual: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, HUBER / np.maximum(np.abs(residual), 1e-12))


def find_hotspot(rays: np.ndarray, residual: np.ndarray, track: np.ndarray, tilts: np.ndarray | None = None
                 ) -> Hotspot | None:
    """The hotspot the residuals (3, N) of observations along `rays` (N, 3) of the points `track` (N,) show: the
    sunlight's direction within HOTSPOT_REACH of the mean view (a coarse search, then a fine one around its best),
    the width and the amplitudes that explain most of them; None when it brightens too little, explains too
    little, or brightens the bands too unequally. `tilts` (N, 2): the rays' tilts, whose linear terms (a view
    slope) the search looks past."""
    sample = _whole_tracks(track, HOTSPOT_SAMPLE)
    beside = Beside(np.unique(track[sample], return_inverse=True)[1].ravel(),
                    None if tilts is None else tilts[sample])
    rays, residual = rays[sample], beside.left(residual[:, sample].T).T
    mean = rays.mean(axis=0)
    coarse = _search(rays, residual, cone(mean / np.linalg.norm(mean), HOTSPOT_REACH, 4.0), beside)
    direction, width, amplitude, explained = _search(rays, residual, cone(coarse[0], 4.0, 0.5), beside)
    if not _plausible(tuple(amplitude)) or explained < MIN_EXPLAINED * float((residual**2).sum()):
        return None
    return Hotspot(tuple(map(float, direction)), width, tuple(map(float, amplitude)))


@dataclass(frozen=True)
class Beside:
    """What of a term over observations the model cannot take itself: the points' radiances take any constant
    per point, and a view slope (where the rays' tilts are given) any part that tilts one way."""

    track: np.ndarray  # (N,) the observations' points, numbered from 0
    tilts: np.ndarray | None  # (N, 2)

    def left(self, values: np.ndarray) -> np.ndarray:
        """(N, K) values less their mean per point, then less their least-squares fit by the tilts (so treated)."""
        left = self.centred(values)
        if self.tilts is not None:
            taken = self.centred(self.tilts)
            left = left - taken @ np.linalg.lstsq(taken, left, rcond=None)[0]
        return left

    def centred(self, values: np.ndarray) -> np.ndarray:
        counts = np.bincount(self.track).astype(np.float64)
        means = np.stack([np.bincount(self.track, column) for column in values.T], axis=1) / counts[:, None]
        return values - means[self.track]


def _whole_tracks(track: np.ndarray, most: int) -> np.ndarray:
    """The indices of the observations of randomly chosen points, about `most` observations in all."""
    points = np.random.default_rng(1).permutation(np.unique(track))
    counts = np.bincount(track)[points]
    chosen = points[:max(1, int(np.searchsorted(np.cumsum(counts), most)))]
    return np.flatnonzero(np.isin(track, chosen))


def cone(axis: np.ndarray, reach_deg: float, step_deg: float) -> np.ndarray:
    """(C, 3) unit directions within reach_deg of `axis` (unit), on rings step_deg apart."""
    u, v = perpendiculars(axis)
    directions = [axis]
    for tilt in np.radians(np.arange(step_deg, reach_deg + 1e-9, step_deg)):
        count = max(6, int(round(2 * np.pi * np.degrees(tilt) / step_deg)))
        turns = np.linspace(0, 2 * np.pi, count, endpoint=False)[:, None]
        directions.append(np.cos(tilt) * axis + np.sin(tilt) * (np.cos(turns) * u + np.sin(turns) * v))
    return np.vstack(directions)


def perpendiculars(direction: np.ndarray) -> np.ndarray:
    """(2, 3): two unit vectors perpendicular to `direction` and to each other."""
    axis = direction / np.linalg.norm(direction)
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    u /= np.linalg.norm(u)
    return np.stack([u, np.cross(axis, u)])


def _search(rays: np.ndarray, residual: np.ndarray, candidates: np.ndarray, beside: Beside
            ) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Of the candidate directions and HOTSPOT_WIDTHS, the one whose kernel (what of it is left beside the model's
    other terms) explains most of the residuals with positive amplitudes: direction, width, amplitudes and the
    sum of squares explained."""
    best: tuple[np.ndarray, float, np.ndarray, float] = (candidates[0], HOTSPOT_WIDTHS[0], np.zeros(3), -1.0)
    cosines = rays @ candidates.T
    for width in HOTSPOT_WIDTHS:
        k = beside.left(kernel(cosines, width))
        norms = np.maximum((k * k).sum(axis=0), 1e-12)
        projections = residual @ k
        explained = np.where((projections > 0).all(axis=0), (projections**2).sum(axis=0) / norms, -1.0)
        j = int(np.argmax(explained))
        if explained[j] > best[3]:
            best = (candidates[j], width, projections[:, j] / norms[j], float(explained[j]))
    return best


def _usable(observations: Observations
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
    """(image, track index, radius, log colour, ray or None) of the well-exposed observations of points seen at least twice
    that way, at most MAX_TRACKS of them; None when fewer than MIN_TRACKS."""
    ok = ((observations.colour > DARK) & (observations.colour < BRIGHT)).all(axis=1)
    points, inverse, counts = np.unique(observations.point[ok], return_inverse=True, return_counts=True)
    seen_twice = counts >= 2
    if seen_twice.sum() < MIN_TRACKS:
        return None
    chosen = np.flatnonzero(seen_twice)
    if len(chosen) > MAX_TRACKS:
        chosen = np.sort(np.random.default_rng(0).choice(chosen, MAX_TRACKS, replace=False))
    number = np.full(len(points), -1)
    number[chosen] = np.arange(len(chosen))
    track = number[inverse.ravel()]
    keep = track >= 0
    index = np.flatnonzero(ok)[keep]
    return (observations.image[index], track[keep], observations.radius[index],
            np.log(observations.colour[index].astype(np.float64)),
            observations.ray[index] if observations.ray is not None else None)


def _tied_groups(image: np.ndarray, track: np.ndarray, n_images: int) -> np.ndarray:
    """For each photograph, the number of its group (0, 1, ...): the photographs that points they share tie
    together (a photograph without a usable observation is a group of its own)."""
    n_tracks = int(track.max()) + 1
    links = scipy.sparse.coo_matrix((np.ones(len(image)), (image, n_images + track)),
                                    shape=(n_images + n_tracks, n_images + n_tracks))
    return connected_components(links, directed=False)[1][:n_images]


def _solve(observed: scipy.sparse.csr_matrix, right: np.ndarray, weights: np.ndarray, groups: np.ndarray,
           unknowns: int, start: np.ndarray | None = None) -> np.ndarray:
    """Weighted least squares of the observation rows, with per group of tied photographs and band a row holding
    the mean log gain at 0, and a small ridge on the first `unknowns` columns (the gains and fall-off); iterated
    from `start` where given (a nearby solution saves most of the iterations)."""
    rows, columns = observed.shape
    n_images, n_groups = len(groups), int(groups.max()) + 1
    gauge = scipy.sparse.csr_matrix((np.full(3 * n_images, 10.0 * np.sqrt(rows / n_images)),
                                     (3 * np.repeat(groups, 3) + np.tile(np.arange(3), n_images),
                                      np.arange(3 * n_images))),
                                    shape=(3 * n_groups, columns))
    ridge = scipy.sparse.csr_matrix((np.full(unknowns, RIDGE), (np.arange(unknowns), np.arange(unknowns))),
                                    shape=(unknowns, columns))
    matrix = scipy.sparse.vstack([scipy.sparse.diags(np.sqrt(weights)) @ observed, gauge, ridge]).tocsr()
    target = np.concatenate([right * np.sqrt(weights), np.zeros(3 * n_groups), np.zeros(unknowns)])
    return lsqr(matrix, target, atol=1e-8, btol=1e-8, iter_lim=2000, x0=start)[0]


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
