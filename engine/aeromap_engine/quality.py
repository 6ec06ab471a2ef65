"""The run's quality verdict: checks that tell a trustworthy model from a plausible-looking wrong one.

A reconstruction can register every photograph and still be wrong: fragments glued at the wrong place, a model
folded over repetitive texture, GPS fixes that belong to other photographs. Each stage that can judge its result
adds its checks to the "quality" section of stats.json. A check that fails is a warning when the products stay right
where they exist (fewer images placed, weak tracks), and ends the run (exit 3, an [ERROR] line naming the
cause) when nothing trustworthy can come of it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError
from .log import log
from .sfm.consistency import MIN_AGREEING_SHARE

if TYPE_CHECKING:
    from .project import Project

MIN_REGISTERED_SHARE = 0.9  # below it the products cover less than the photographs do
MIN_POINTS_PER_IMAGE = 100  # Brighton Beach's 18 images give 260; a model glued by chance gives tens
MIN_TRACK_LENGTH = 3.0  # views per point; below it most points are seen only by a pair
# The highest surface a nadir survey sees lies below its cameras; ground more than this many flying heights
# below the median ground would be a ravine deeper than any photograph could see from that height.
MAX_DEPTH_BELOW_GROUND = 3.0
NADIR_COS = np.cos(np.radians(30.0))  # views within 30 degrees of straight down count as nadir


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    fatal: bool  # whether failing it means nothing trustworthy can be made
    value: float
    limit: float
    message: str  # what was found and, when it fails, what that means, in words a user can act on


def _check(name: str, passed: bool, fatal: bool, value: float, limit: float, found: str, meaning: str) -> Check:
    return Check(name, bool(passed), fatal, float(value), float(limit), found if passed else f"{found}: {meaning}")


def registered_share(registered: int, total: int) -> Check:
    share = registered / max(total, 1)
    return _check("images_registered", share >= MIN_REGISTERED_SHARE, False, share, MIN_REGISTERED_SHARE,
                  f"{registered} of {total} images placed in the model",
                  "the products cover less than the photographs do")


def gps_agreement(agreeing: int, located: int, accuracy_m: float) -> Check:
    """The share of registered images with a GPS fix whose fix describes the photographs' layout (sfm/consistency.py):
    the model's shape comes from the photographs, but fixes that most disagree with it cannot place it."""
    share = agreeing / max(located, 1)
    return _check("gps_agreement", share >= MIN_AGREEING_SHARE, True, share, MIN_AGREEING_SHARE,
                  f"{agreeing} of {located} GPS positions fit the layout of the photographs (GPS accuracy "
                  f"{accuracy_m:g} m)",
                  "the GPS positions do not describe the photographs' layout, so they cannot place the model: "
                  "were they assigned to the wrong photographs (a geotagging log offset in time)? Check the "
                  "geotags, or remove them (and geo.txt) to map the survey in a local frame")


def gps_residual(median_m: float, bound_m: float, spacing_m: float) -> Check:
    """The median horizontal distance between the cameras and the fixes that agree, against the larger of the
    stated accuracy and a quarter of the distance between neighbouring photographs: beyond it the GPS places
    the model less surely than it claims, which says nothing of the model's shape."""
    return _check("gps_residual", median_m <= bound_m, False, median_m, bound_m,
                  f"the cameras lie {median_m:.1f} m from their GPS positions in the median (at most {bound_m:.1f} m "
                  f"expected; neighbouring photographs are {spacing_m:.0f} m apart)",
                  "the GPS errs more than its stated accuracy, so the model's absolute position is as uncertain as "
                  "reconstruction.absolute_uncertainty_m says (its shape comes from the photographs); set "
                  "gps-accuracy to how far the fixes err to weigh them rightly")


def points_per_image(points: int, registered: int) -> Check:
    per_image = points / max(registered, 1)
    return _check("points_per_image", per_image >= MIN_POINTS_PER_IMAGE, False, per_image, MIN_POINTS_PER_IMAGE,
                  f"{per_image:.0f} sparse points per image", "little texture or overlap ties the images together")


def track_length(mean_views: float) -> Check:
    return _check("track_length", mean_views >= MIN_TRACK_LENGTH, False, mean_views, MIN_TRACK_LENGTH,
                  f"points are seen in {mean_views:.1f} images on average", "the overlap is weak")


def height_range(surface_z: np.ndarray, camera_z: np.ndarray, nadir: bool, what: str, key: str) -> Check:
    """Whether the surface's heights are possible for cameras at these heights: below the cameras when they
    look down, and not deeper below the ground than a few flying heights."""
    ground = float(np.median(surface_z))
    flying = float(np.median(camera_z)) - ground
    low, high = (float(v) for v in np.percentile(surface_z, [1, 99]))
    if nadir and flying <= 0:
        return _check(f"{key}_height_range", False, True, flying, 0.0,
                      f"the {what} lies {-flying:.0f} m above the cameras that look down on it",
                      "the model is upside down or folded")
    floor = ground - MAX_DEPTH_BELOW_GROUND * abs(flying)
    ceiling = float(np.max(camera_z)) if nadir else np.inf
    excess = max(0.0, floor - low, high - ceiling)  # metres outside the possible range
    return _check(f"{key}_height_range", excess == 0, True, excess, 0.0,
                  f"the {what} spans {low - ground:+.0f} m to {high - ground:+.0f} m around its median, with the "
                  f"cameras {flying:.0f} m above it", "heights that no survey from those cameras can see")


def nadir_views(viewing_directions: np.ndarray) -> bool:
    """Whether most views look down within 30 degrees of the vertical (world frame, Z up)."""
    return bool(np.median(-viewing_directions[:, 2]) >= NADIR_COS)


def record(project: "Project", checks: list[Check]) -> None:
    """Add the checks to stats.json's quality section (replacing earlier ones of the same name), log the
    failures, and end the run when one of them is fatal."""
    section = project.read_stats().get("quality", {})
    by_name = {**section.get("checks", {}), **{c.name: asdict(c) for c in checks}}
    failed = [c for c in by_name.values() if not c["passed"]]
    verdict = "failed" if any(c["fatal"] for c in failed) else "doubtful" if failed else "good"
    project.update_stats("quality", {**section, "verdict": verdict, "checks": by_name})
    for check in checks:
        if not check.passed and not check.fatal:
            log.warning("Quality: %s", check.message)
    fatal = [c for c in checks if not c.passed and c.fatal]
    if fatal:
        raise InputError("No trustworthy model can be made: " + "; ".join(c.message for c in fatal))
    log.info("Quality verdict: %s", verdict)
