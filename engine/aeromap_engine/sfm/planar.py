"""Camera poses of a survey of flat ground seen straight down, from its matches and GPS alone (sfm-algorithm
planar): no image is added one at a time.

Over a plane, a nadir camera at height H sees the ground as a similarity of its normalised image coordinates:
ground = H R(heading) (x, y) + C, with C the camera's horizontal position. Every verified match of two
photographs says that their similarities take its two keypoints to one ground point, which is linear in each
photograph's (H cos heading, H sin heading, C): one sparse least-squares problem over the whole survey (a mosaic),
the GPS fixes holding its position, heading and scale. Its solution gives each camera its heading, its height above
the ground and its horizontal position; sfm/posed.py then triangulates the points from those poses and one
bundle adjustment with the GPS priors refines the tilts, heights and calibration.

How far the matches are from one plane (relief, tilted views, a lens's distortion) is measured on the way: the
median misfit of the matches on the mosaic, in pixels, is the cause given when the scene is not planar enough.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycolmap
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import spsolve

from .alignment import apply, robust_similarity
from .database import PositionPrior

MAX_MATCHES_PER_PAIR = 200  # a mosaic of a few hundred points a pair is as well determined as of thousands
ROBUST_ROUNDS = 4  # reweighted solutions; matches beyond HUBER_K robust deviations lose weight
HUBER_K = 2.0
# Median misfit of the matches on the mosaic, in pixels, beyond which the photographs do not show one plane seen
# straight down: relief, obliques or a wide-angle lens's distortion then leave the poses too far off for the
# adjustment to be trusted to bring them in. A flat field seen by a small drone camera misfits by a few pixels.
MAX_PLANE_MISFIT_PX = 25.0
MIN_LOCATED = 3  # GPS fixes that place, turn and scale the mosaic
MAX_FIX_ERROR_M = 50.0  # a fix farther than this from where the mosaic puts its camera never places it


@dataclass(frozen=True)
class MatchedPoints:
    """The verified matches of a matching database, in normalised image coordinates."""
    names: list[str]  # image names, by index
    focal_px: np.ndarray  # (n,) focal length of each image's camera, for misfits in pixels
    pairs: list[tuple[int, int, np.ndarray, np.ndarray]]  # (i, j, (m, 2) points of i, (m, 2) points of j)


@dataclass(frozen=True)
class PlanarPoses:
    poses: dict[str, pycolmap.Rigid3d]  # cam_from_world of each image
    heights_m: dict[str, float]  # each camera's height above the ground plane
    misfit_px: float  # median distance between matched points on the mosaic, in pixels


class NotPlanar(Exception):
    """The survey does not suit a planar reconstruction; the message says what was measured."""


def read_matched_points(database: pycolmap.Database, only: set[str]) -> MatchedPoints:
    """The database's verified matches between the images named in `only` (all when empty), at most
    MAX_MATCHES_PER_PAIR a pair (a seeded draw)."""
    images = sorted((image for image in database.read_all_images() if not only or image.name in only),
                    key=lambda image: image.image_id)
    cameras = {camera.camera_id: camera for camera in database.read_all_cameras()}
    index = {image.image_id: i for i, image in enumerate(images)}
    normalised = [np.asarray(cameras[image.camera_id].cam_from_img(
        database.read_keypoints(image.image_id)[:, :2].astype(np.float64))) for image in images]
    rng = np.random.default_rng(1)
    pairs = []
    pair_ids, geometries = database.read_two_view_geometries()
    for pair_id, geometry in zip(pair_ids, geometries):
        matches = np.asarray(geometry.inlier_matches)
        if len(matches) == 0:
            continue
        if len(matches) > MAX_MATCHES_PER_PAIR:
            matches = matches[rng.choice(len(matches), MAX_MATCHES_PER_PAIR, replace=False)]
        ids = pycolmap.pair_id_to_image_pair(pair_id)
        if not all(i in index for i in ids):
            continue
        first, second = (index[i] for i in ids)
        pairs.append((first, second, normalised[first][matches[:, 0]], normalised[second][matches[:, 1]]))
    focal = np.array([cameras[image.camera_id].mean_focal_length() for image in images])
    return MatchedPoints([image.name for image in images], focal, pairs)


def planar_poses(matches: MatchedPoints, priors: dict[str, PositionPrior]) -> PlanarPoses:
    """Each photograph's pose from the mosaic of its matches (see the module's description); raises NotPlanar
    with the measured cause when the photographs cannot be laid on one plane."""
    n = len(matches.names)
    located = [i for i, name in enumerate(matches.names) if name in priors]
    if len(located) < MIN_LOCATED:
        raise NotPlanar(f"{len(located)} of {n} photographs have a GPS position; a planar reconstruction needs "
                        f"at least {MIN_LOCATED} to place the mosaic")
    if (apart := n - largest_component(n, matches.pairs)) > 0:
        raise NotPlanar(f"{apart} of {n} photographs share no verified match with the others")
    rows = _match_rows(matches)
    weights = np.ones(len(rows.first))
    for _ in range(ROBUST_ROUNDS):
        mosaic = _solve(n, rows, weights)
        residuals = _match_misfits(rows, mosaic)
        scale = max(1.4826 * float(np.median(residuals)), 1e-12)
        weights = np.minimum(1.0, HUBER_K * scale / np.maximum(residuals, 1e-15))
    a, b, x, y = mosaic.reshape(n, 4).T
    sizes = np.hypot(a, b)  # each camera's height above the plane, in the mosaic's units
    if not (sizes > 0).all():
        raise NotPlanar("the mosaic of the matches folds over: the photographs do not look straight down at one "
                        "plane")
    misfit_px = float(np.median(residuals / sizes[rows.first] * matches.focal_px[rows.first]))
    if misfit_px > MAX_PLANE_MISFIT_PX:
        raise NotPlanar(f"matched points lie a median {misfit_px:.0f} px apart when the photographs are laid on one "
                        f"ground plane (at most {MAX_PLANE_MISFIT_PX:.0f} px for a planar reconstruction): the "
                        f"ground has relief or the views are not nadir")
    placed = robust_similarity(np.c_[x[located], y[located], np.zeros(len(located))],
                               np.array([priors[matches.names[i]].position for i in located]),
                               MAX_FIX_ERROR_M, mode="level")
    if placed is None:
        raise NotPlanar("the GPS positions cannot place the mosaic (all at one point)")
    matrix = np.asarray(placed.transform.matrix())
    scale = float(np.linalg.norm(matrix[:, 0]))
    turn = float(np.arctan2(matrix[1, 0], matrix[0, 0]))
    centres = apply(placed.transform, np.c_[x, y, np.zeros(n)])
    heights = scale * sizes
    ground = float(np.median([priors[matches.names[i]].position[2] - heights[i] for i in located]))
    poses, height_by_name = {}, {}
    for i, name in enumerate(matches.names):
        world_from_camera = nadir_rotation(np.arctan2(b[i], a[i]) + turn)
        centre = np.array([centres[i, 0], centres[i, 1], ground + heights[i]])
        poses[name] = pycolmap.Rigid3d(pycolmap.Rotation3d(world_from_camera.T), -world_from_camera.T @ centre)
        height_by_name[name] = float(heights[i])
    return PlanarPoses(poses, height_by_name, misfit_px)


def nadir_rotation(heading: float) -> np.ndarray:
    """World from camera (3 x 3) of a camera looking straight down whose image x axis points at `heading`
    (radians anticlockwise from east): the ground as a similarity of its normalised coordinates."""
    c, s = np.cos(heading), np.sin(heading)
    return np.array([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])


def largest_component(n: int, pairs: list[tuple[int, int, np.ndarray, np.ndarray]]) -> int:
    """The number of images in the largest group tied by verified matches."""
    if not pairs:
        return 1 if n else 0
    first, second = np.array([(i, j) for i, j, _, _ in pairs]).T
    graph = coo_matrix((np.ones(len(first)), (first, second)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return int(np.bincount(labels).max())


@dataclass(frozen=True)
class _Rows:
    first: np.ndarray  # (m,) image index of each match's first point
    second: np.ndarray
    u: np.ndarray  # (m, 2) normalised points in the first image
    v: np.ndarray


def _match_rows(matches: MatchedPoints) -> _Rows:
    first = np.concatenate([np.full(len(p), i) for i, _, p, _ in matches.pairs])
    second = np.concatenate([np.full(len(q), j) for _, j, _, q in matches.pairs])
    u = np.concatenate([p for _, _, p, _ in matches.pairs])
    v = np.concatenate([q for _, _, _, q in matches.pairs])
    return _Rows(first, second, u, v)


def _ground(solution: np.ndarray, images: np.ndarray, points: np.ndarray) -> np.ndarray:
    a, b, x, y = solution.reshape(-1, 4)[images].T
    return np.stack([a * points[:, 0] + b * points[:, 1] + x, b * points[:, 0] - a * points[:, 1] + y], axis=1)


def _match_misfits(rows: _Rows, solution: np.ndarray) -> np.ndarray:
    return np.linalg.norm(_ground(solution, rows.first, rows.u) - _ground(solution, rows.second, rows.v), axis=1)


def _solve(n: int, rows: _Rows, weights: np.ndarray) -> np.ndarray:
    """Weighted least squares of the mosaic, each match's two points laid on one (two rows), in the frame of the
    first image (its similarity held at the identity: the mosaic's position, heading and scale are the GPS's to
    give). Solved through its normal equations, sparse: four unknowns an image."""
    m = len(rows.first)
    w = np.sqrt(weights)
    entries_r, entries_c, entries_v = [], [], []
    ex, ey = 2 * np.arange(m), 2 * np.arange(m) + 1
    for image, point, sign in ((rows.first, rows.u, 1.0), (rows.second, rows.v, -1.0)):
        for row, column, value in ((ex, 0, point[:, 0]), (ex, 1, point[:, 1]), (ex, 2, 1.0),
                                   (ey, 0, -point[:, 1]), (ey, 1, point[:, 0]), (ey, 3, 1.0)):
            entries_r.append(row)
            entries_c.append(4 * image + column)
            entries_v.append(sign * w * value)
    matrix = coo_matrix((np.concatenate(entries_v), (np.concatenate(entries_r), np.concatenate(entries_c))),
                        shape=(2 * m, 4 * n)).tocsc()
    held = np.array([1.0, 0.0, 0.0, 0.0])
    free = matrix[:, 4:]
    rest = spsolve((free.T @ free).tocsc(), -(free.T @ (matrix[:, :4] @ held)))
    return np.r_[held, rest]
