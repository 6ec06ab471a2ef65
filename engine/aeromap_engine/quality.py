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
from scipy.spatial import cKDTree

from .errors import InputError
from .log import log
from .sfm.consistency import MIN_AGREEING_SHARE

if TYPE_CHECKING:
    from .project import Project

MIN_REGISTERED_SHARE = 0.9  # below it the products cover less than the photographs do
MIN_PLACED_SHARE = 0.5  # below it they cover a fragment of the survey: refused
MIN_POINTS_PER_IMAGE = 100  # well below a sound survey's (bench/NOTES.md); a model glued by chance gives tens
MIN_TRACK_LENGTH = 3.0  # views per point; below it most points are seen only by a pair
# The highest surface a nadir survey sees lies below its cameras; ground more than this many flying heights
# below a camera's own ground would be a ravine deeper than any photograph could see from that height.
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


def registered_share(registered: int, total: int, weak_ties: str) -> Check:
    """The share of the photographs placed in the model; `weak_ties` says how strongly matching tied them and
    what to try. Below half, the products would show a fragment of the survey as if it were all of it."""
    share = registered / max(total, 1)
    fragment = share < MIN_PLACED_SHARE
    meaning = "the photographs are too weakly tied to place the others" if fragment else \
        "the products cover less than the photographs do"
    return _check("images_registered", share >= MIN_REGISTERED_SHARE, fragment, share, MIN_REGISTERED_SHARE,
                  f"{registered} of {total} images placed in the model", f"{meaning} ({weak_ties})")


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


def control_points(used: int, given: int, fatal: bool, found: str) -> Check:
    """Whether every ground control point georeferences the model: each left out, or all of them, is named
    with its measured cause in `found`. Fatal when none can be used and nothing else places the model."""
    return _check("gcp_fit", used == given, fatal, used, given, found,
                  "check the named points' marks and coordinates" if used else
                  "the model is not georeferenced by its control points")


def control_accuracy(worst_m: float, expected_m: float) -> Check:
    """Whether the control points fit the model as closely as its ground sample distance allows."""
    return _check("gcp_accuracy", worst_m <= expected_m, False, worst_m, expected_m,
                  f"the ground control points fit the model to {worst_m:.2f} m (at most {expected_m:.2f} m "
                  f"expected from the photographs' ground sample distance)",
                  "their coordinates are less accurate than the model (read off a map or imagery, or a survey of "
                  "lower grade), and so is the georeferencing")


def control_heights() -> Check:
    """Control points that all share one height have no surveyed heights (sfm/frame.py)."""
    return _check("gcp_heights", False, False, 0.0, 0.0, "every ground control point has the same height",
                  "the vertical datum is unknown: the model is levelled on the points' plane, its heights are "
                  "relative to that plane, and the control points' vertical residuals are the ground's relief, "
                  "not its accuracy")


def control_layout() -> Check:
    """Control points along one line leave the roll about it free (sfm/alignment.py is_collinear)."""
    return _check("gcp_layout", False, False, 1.0, 0.0, "the ground control points lie along a line",
                  "they leave the roll about it free, which the cameras' viewing directions levelled instead: "
                  "add points off the line")


def groups_placed_by_gps(images: int, groups: int, accuracy_m: float) -> Check:
    """Whether every photograph in the model is tied to the others by shared views: a group that shares none with
    the main model is placed by its own GPS alone, which nothing the photographs see can confirm."""
    return _check("groups_placed_by_gps", images == 0, False, images, 0,
                  f"{images} images in {groups} separate group{'s' if groups != 1 else ''} placed by their GPS alone"
                  if images else "every image placed is tied to the others by shared views",
                  f"they share no view with the main model, so only their GPS places them against it (GPS accuracy "
                  f"{accuracy_m:g} m): their products may not meet the main model's. Photographs overlapping both "
                  f"would tie them")


def points_per_image(points: int, registered: int) -> Check:
    per_image = points / max(registered, 1)
    return _check("points_per_image", per_image >= MIN_POINTS_PER_IMAGE, False, per_image, MIN_POINTS_PER_IMAGE,
                  f"{per_image:.0f} sparse points per image", "little texture or overlap ties the images together")


def track_length(mean_views: float) -> Check:
    return _check("track_length", mean_views >= MIN_TRACK_LENGTH, False, mean_views, MIN_TRACK_LENGTH,
                  f"points are seen in {mean_views:.1f} images on average", "the overlap is weak")


def lens_frame(coverage: float, camera: str) -> Check:
    """Whether the worst camera's fitted lens model gives a ray for its whole frame (sfm/cameras.py)."""
    return _check("lens_frame", coverage >= 1.0, False, coverage, 1.0,
                  f"the lens model of {camera} gives rays for {coverage:.0%} of its frame's border",
                  "its distortion folds the frame's edge inward (bent by too few tie points, or by photographs "
                  "resized to another shape), so the products near the photographs' edges may be misplaced")


def height_range(surface: np.ndarray, cameras: np.ndarray, nadir: bool, what: str, key: str) -> Check:
    """Whether the surface's points (N, 3) are possible for cameras at these positions (M, 3): below the
    cameras when they look down, and not deeper below them than a few flying heights. Each point is judged
    against the camera nearest to it horizontally, and each camera's flying height against its own ground, so
    that a flight that follows the terrain of a slope, a quarry or a mountain is judged where it flew."""
    flying = float(np.median(flying_heights(surface, cameras)))
    if nadir and flying <= 0:
        return _check(f"{key}_height_range", False, True, flying, 0.0,
                      f"the {what} lies {-flying:.0f} m above the cameras that look down on it",
                      "the model is upside down or folded")
    nearest = cKDTree(cameras[:, :2]).query(surface[:, :2])[1]
    below = cameras[nearest, 2] - surface[:, 2]  # each point's depth below its camera
    low, high = (float(v) for v in np.percentile(below, [1, 99]))
    deepest = (1.0 + MAX_DEPTH_BELOW_GROUND) * abs(flying)
    excess = max(0.0, high - deepest, -low if nadir else 0.0)  # metres outside the possible range
    return _check(f"{key}_height_range", excess == 0, True, excess, 0.0,
                  f"the {what} spans {low:.0f} m to {high:.0f} m below the camera nearest to each point, with the "
                  f"cameras {flying:.0f} m above their ground", "heights that no survey from those cameras can see")


def flying_heights(surface: np.ndarray, cameras: np.ndarray) -> np.ndarray:
    """Each camera's height above its own ground: the median height of the surface points nearest below it,
    as many as the surface has points per camera."""
    count = int(np.clip(len(surface) // max(len(cameras), 1), 1, len(surface)))
    _, nearest = cKDTree(surface[:, :2]).query(cameras[:, :2], count)
    ground = np.median(surface[nearest.reshape(len(cameras), count), 2], axis=1)
    return cameras[:, 2] - ground


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
