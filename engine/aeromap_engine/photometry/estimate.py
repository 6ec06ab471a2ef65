"""The estimate of the corrections from the sparse points' colours (see the package's notes)."""

from __future__ import annotations

import numpy as np

from ..log import log
from .model import POWERS, Frame, Observations, Photometry
from .solve import design, robust_solve, tied_groups
from .view_angle import SEARCH, HotspotShape, Model, along_rays

MIN_TRACKS = 200  # points seen at least twice needed for an estimate
MAX_TRACKS = 10_000  # points used at most (a random choice): more add time, not accuracy
DARK, BRIGHT = 8.0, 245.0  # observations outside these (any band) are clipped or noise: not used
GAIN_RANGE = (0.25, 4.0)  # gains beyond these are not exposure differences: held at the limit
# An exposure scales every band alike, white balance by a little: bands of one photograph that need gains further
# apart than this are not a camera's linear response but a false-colour palette (as thermal cameras write), where
# per-band gains would paint other temperatures.
MAX_BAND_SPREAD = 1.5
MIN_CORNER = 0.3  # a fall-off darker than this at the corner (r = 1) is not vignetting: none is corrected


def estimate(observations: Observations, names: list[str], cameras: list[str], frames: dict[str, Frame],
             rotations: dict[str, tuple[float, ...]] | None = None, hotspot_shape: HotspotShape = SEARCH
             ) -> Photometry | None:
    """The corrections that make the observations of each point agree (see the package's notes); None when too
    few points are seen twice to tell. `rotations` (world from camera, per photograph) let a hotspot and a view
    slope be corrected, with the observations' rays; `hotspot_shape` as view_angle.along_rays takes it."""
    usable = _usable(observations)
    if usable is None:
        return None
    image, track, radius, log_colour, rays = usable
    camera_keys = sorted(set(cameras))
    camera_of = np.array([camera_keys.index(c) for c in cameras])[image]
    n_images, n_cameras = len(names), len(camera_keys)
    matrix, unknowns = design(image, track, radius, camera_of, n_images, n_cameras)
    right = log_colour.T.ravel()
    groups = tied_groups(image, track, n_images)
    solution, weights = robust_solve(matrix, right, groups, unknowns)
    hotspot, view_slope = None, None
    if rays is not None and rotations:
        model = Model(image, track, radius, camera_of, n_images, n_cameras, right, groups, weights)
        hotspot, view_slope, sloped = along_rays(model, rays, solution, unknowns, right - matrix @ solution,
                                                 hotspot_shape)
        if view_slope is not None:
            solution = sloped
        elif hotspot is not None:
            solution, _ = robust_solve(matrix, right - hotspot.log_factor(rays).T.ravel(), groups, unknowns,
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
    on_rays = hotspot is not None or view_slope is not None
    return Photometry({name: tuple(map(float, g)) for name, g in zip(names, gains)}, dict(zip(names, cameras)),
                      kept, frames, hotspot, dict(rotations or {}) if on_rays else {}, view_slope)


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
