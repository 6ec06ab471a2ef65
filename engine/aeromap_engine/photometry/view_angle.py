"""The terms along the rays: the hotspot (its sunlight's direction searched for in the residuals, its width and
amplitudes fitted with the rest of the model) and the view slope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..log import log
from .model import Hotspot, ViewSlope, kernel
from .solve import design, huber_cost, robust_solve

HOTSPOT_WIDTHS = (3.0, 6.0, 12.0)  # degrees: the kernel widths tried
HOTSPOT_REACH = 45.0  # degrees from the mean view searched for the sunlight's direction
MIN_HOTSPOT = 0.02  # log brightening at the antisolar point below which no hotspot is corrected
MIN_EXPLAINED = 0.05  # share of the residuals' squares the hotspot must explain
# Shadows hiding behind what casts them, and the ground's other changes with the viewing angle, brighten every band
# much alike; a brightening in one direction that some bands show far more than others is something else (light
# reflected by water from the sky's bright part).
MAX_VIEW_SPREAD = 1.6
HOTSPOT_SAMPLE = 8000  # observations the search looks at: enough for a smooth term of five unknowns
REFINE_STEPS = 4  # Gauss-Newton steps of the hotspot's direction, at most
MAX_REFINE_STEP_DEG = 1.0
SEARCH = "search"  # the hotspot's shape is searched for
HotspotShape = Hotspot | Literal["search"] | None
MIN_VIEW_SLOPE = 0.01  # log brightening at the frames' edges (the 95th percentile of the rays' tilts) to be kept


@dataclass(frozen=True)
class Model:
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
        matrix, unknowns = design(self.image, self.track, self.radius, self.camera_of, self.n_images,
                                   self.n_cameras, terms)
        n_terms = terms.shape[1]
        x0 = np.concatenate([start[:start_unknowns], np.zeros(unknowns - start_unknowns), start[start_unknowns:]])
        solution, weights = robust_solve(matrix, self.right, self.groups, unknowns, x0, self.weights, rounds)
        coefficients = solution[unknowns - 3 * n_terms:unknowns].reshape(3, n_terms)
        return huber_cost(matrix @ solution - self.right), coefficients, solution, weights


def along_rays(model: Model, rays: np.ndarray, solution: np.ndarray, unknowns: int, residual: np.ndarray,
               hotspot_shape: HotspotShape = SEARCH) -> tuple[Hotspot | None, ViewSlope | None, np.ndarray]:
    """The hotspot and the view slope, and the model's unknowns solved with them (the gains and fall-off in the
    columns design gives them), from the model's `solution` without either. A hotspot near the mean view and a
    view slope explain some of the same residuals, and the gains and fall-off some of both: the sunlight's
    direction is searched for in its `residual` as it shows and looking past any view slope; then the hotspot's
    amplitudes are solved with everything else, at each width (once, with the weights the model had), and the fit
    with the least cost kept (none where no hotspot lowers it), then solved again with its own weights.
    `hotspot_shape`: a hotspot whose direction and width are known (another band's: only the amplitudes are
    solved), or None for no hotspot, instead of the search."""
    axes = perpendiculars(rays.mean(axis=0))
    tilts = rays @ axes.T
    residual = residual.reshape(3, len(model.image))
    candidates: list[tuple[np.ndarray, Hotspot | None]] = [(tilts, None)]
    for shape in _shapes(hotspot_shape, rays, residual, model.track, tilts):
        candidates.append((np.column_stack([tilts, kernel(rays @ np.asarray(shape.direction), shape.width_deg)]),
                           shape))
    best_cost, best = np.inf, candidates[0]
    for terms, hotspot in candidates:
        cost, coefficients, _, _ = model.fit(terms, solution, unknowns)
        if cost < best_cost and (hotspot is None or _plausible(tuple(coefficients[:, 2]))):
            best_cost, best = cost, (terms, hotspot)
    terms, hotspot = best
    if hotspot is not None and not isinstance(hotspot_shape, Hotspot):  # searched for: refine its direction
        hotspot = refined(model, hotspot, rays, tilts, solution, unknowns)
        terms = np.column_stack([tilts, kernel(rays @ np.asarray(hotspot.direction), hotspot.width_deg)])
    _, coefficients, fitted, _ = model.fit(terms, solution, unknowns, rounds=2)
    if hotspot is not None:
        hotspot = Hotspot(hotspot.direction, hotspot.width_deg, tuple(map(float, coefficients[:, 2])))
        if not _plausible(hotspot.amplitude):  # the reweighted fit says otherwise: solved without it
            hotspot = None
            _, coefficients, fitted, _ = model.fit(tilts, solution, unknowns, rounds=2)
    return hotspot, _view_slope(coefficients[:, :2], axes, tilts), fitted


def _shapes(given: HotspotShape, rays: np.ndarray, residual: np.ndarray, track: np.ndarray, tilts: np.ndarray
            ) -> list[Hotspot]:
    """The hotspot shapes (direction and width) to try: the one given, none, or those the search finds, at each
    of HOTSPOT_WIDTHS."""
    if given is None or isinstance(given, Hotspot):
        return [] if given is None else [given]
    directions = _directions(find_hotspot(rays, residual, track), find_hotspot(rays, residual, track, tilts))
    return [Hotspot(tuple(map(float, d)), width, (0.0,) * 3) for d in directions for width in HOTSPOT_WIDTHS]


def refined(model: Model, hotspot: Hotspot, rays: np.ndarray, tilts: np.ndarray, solution: np.ndarray,
            unknowns: int) -> Hotspot:
    """The hotspot's direction moved to where the whole model fits best (Gauss-Newton steps). The search looks at
    residuals that the gains and the radial fall-off have already taken part of the hotspot into (its middle,
    near the frames' centres), which leaves its peak found too far out, by most of a degree on a 6-degree hotspot;
    half a degree off leaves a percent of the brightening in the map around every antisolar point."""
    direction = np.asarray(hotspot.direction)
    for _ in range(REFINE_STEPS):
        axes = perpendiculars(direction)
        k, slopes = kernel_slopes(rays, direction, axes, hotspot.width_deg)
        _, coefficients, _, _ = model.fit(np.column_stack([tilts, k, slopes]), solution, unknowns)
        amplitude, moved = coefficients[:, 2], coefficients[:, 3:]  # moved: amplitude times the step per band
        step = amplitude @ moved / max(float(amplitude @ amplitude), 1e-12)  # degrees along the two axes
        step *= min(1.0, MAX_REFINE_STEP_DEG / max(float(np.linalg.norm(step)), 1e-12))
        direction = direction + np.radians(step) @ axes
        direction /= np.linalg.norm(direction)
        if np.linalg.norm(step) < 0.02:
            break
    return Hotspot(tuple(map(float, direction)), hotspot.width_deg, hotspot.amplitude)


def kernel_slopes(rays: np.ndarray, direction: np.ndarray, axes: np.ndarray, width_deg: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The kernel along the rays (N,) and its change (N, 2) per degree the direction moves along each of `axes`:
    the angle to a ray shrinks by the cosine of the ray's bearing from that axis."""
    cosines = np.clip(rays @ direction, -1.0, 1.0)
    k = kernel(cosines, width_deg)
    bearing = (rays @ axes.T) / np.maximum(np.sqrt(1.0 - cosines**2), 1e-9)[:, None]
    return k, k[:, None] * bearing / width_deg


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
