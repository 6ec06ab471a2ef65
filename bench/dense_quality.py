"""Dense point cloud quality on Brighton Beach: Aeromap's georeferenced cloud against ODM's model.laz.

Usage: engine/.venv/bin/python bench/dense_quality.py PROJECT_DIR   (a project that ran at least to
odm_georeferencing, e.g. the one bench/engine_full.py leaves behind)

Prints point counts, how much of ODM's area the cloud covers, and the median point-to-nearest-point distance
after removing one global shift (the one that minimises that distance over the area both clouds cover). Both
clouds are georeferenced by the cameras' GPS only, so they may also differ by a small rotation or bowl; the same
distance after a best-fit similarity, and the distance of the dense cloud to its own sparse points, separate
that from the dense matching itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import laspy
import numpy as np
from scipy.spatial import cKDTree

from aeromap_engine.crs_offset import Georef
from aeromap_engine.io.ply import read_ply
from aeromap_engine.project import Project

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "brighton_beach" / "model.laz"
SAMPLE = 100_000
CELL = 1.0  # m: coverage grid


def cells(xyz: np.ndarray) -> np.ndarray:
    key = np.floor(xyz[:, :2] / CELL).astype(np.int64)
    return key[:, 0] * 10_000_000 + key[:, 1]


def sample(xyz: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return xyz[rng.choice(len(xyz), min(SAMPLE, len(xyz)), replace=False)]


def fit_shift(ours: np.ndarray, reference: np.ndarray, tree: cKDTree) -> np.ndarray:
    """The translation that minimises the median nearest-point distance of `ours` to the reference.

    Nearest-point ICP slides along gently sloping ground (a horizontal error there costs little and soaks up a
    tilt or bowl), so the horizontal part is searched directly, coarse to fine, each candidate getting the
    vertical offset that best fits it; that is the measure itself, minimised."""
    flat = cKDTree(reference[:, :2])
    reference_cells = np.unique(cells(reference))
    points = ours[:20_000]

    def vertical_fit(horizontal: np.ndarray) -> tuple[float, np.ndarray]:
        moved = points + [horizontal[0], horizontal[1], 0.0]
        moved = moved[np.isin(cells(moved), reference_cells)]
        dz = float(np.median(reference[flat.query(moved[:, :2])[1], 2] - moved[:, 2]))
        for _ in range(3):  # the nearest points in 3D: over slopes and walls, not just straight down
            distance, index = tree.query(moved + [0.0, 0.0, dz])
            near = distance <= np.percentile(distance, 80)
            dz += float(np.median(reference[index[near], 2] - moved[near, 2] - dz))
        return float(np.median(tree.query(moved + [0.0, 0.0, dz])[0])), np.array([*horizontal, dz])

    start = np.median(reference[:, :2], axis=0) - np.median(ours[:, :2], axis=0)
    best = vertical_fit(start)
    for step, reach in ((1.0, 5), (0.25, 2), (0.0625, 2)):
        centre = best[1][:2].copy()
        for dx in np.arange(-reach, reach + 1) * step:
            for dy in np.arange(-reach, reach + 1) * step:
                candidate = vertical_fit(centre + [dx, dy])
                if candidate[0] < best[0]:
                    best = candidate
    return best[1]


def fit_similarity(shifted: np.ndarray, reference: np.ndarray, tree: cKDTree) -> np.ndarray:
    """`shifted` (already shifted onto the reference) moved by the similarity (scale, rotation, shift) that best
    lays it onto the reference (trimmed ICP)."""
    moved = shifted
    for _ in range(15):
        distance, index = tree.query(moved)
        near = distance <= np.percentile(distance, 70)
        a, b = moved[near], reference[index[near]]
        ma, mb = a.mean(axis=0), b.mean(axis=0)
        u, s, vt = np.linalg.svd((a - ma).T @ (b - mb))
        d = np.diag([1.0, 1.0, np.sign(np.linalg.det(vt.T @ u.T))])
        rotation = vt.T @ d @ u.T
        scale = float(np.sum(s * np.diag(d)) / np.sum((a - ma) ** 2))
        moved = scale * (moved - ma) @ rotation.T + mb
    return moved


def fit_height_warp(ours: np.ndarray, reference: np.ndarray, tree: cKDTree) -> np.ndarray:
    """`ours` with its heights corrected by the quadratic surface (tilt and bowl) that best explains the height
    differences to the reference: what is left is the clouds' disagreement in shape, not in georeferencing."""
    distance, index = tree.query(ours)
    near = distance <= np.percentile(distance, 70)
    x, y = ours[:, 0], ours[:, 1]
    terms = np.c_[np.ones_like(x), x, y, x * x, x * y, y * y]
    coef, *_ = np.linalg.lstsq(terms[near], reference[index[near], 2] - ours[near, 2], rcond=None)
    return np.c_[x, y, ours[:, 2] + terms @ coef]


def distances(ours: np.ndarray, reference: np.ndarray, tree: cKDTree) -> np.ndarray:
    """Nearest-point distances of our points over the reference's cells."""
    common = ours[np.isin(cells(ours), np.unique(cells(reference)))]
    return tree.query(common)[0]


def main(project: Path) -> None:
    rng = np.random.default_rng(0)
    las = laspy.read(str(project / "odm_georeferencing" / "odm_georeferenced_model.laz"))
    odm = laspy.read(str(REFERENCE))
    print(f"CRS: ours {las.header.parse_crs().to_string()}, ODM {odm.header.parse_crs().to_string()}")
    reference = np.c_[odm.x, odm.y, odm.z]
    origin = reference.mean(axis=0)
    reference -= origin
    ours_all = np.c_[las.x, las.y, las.z] - origin
    tree = cKDTree(reference)
    ours = sample(ours_all, rng)
    shift = fit_shift(ours, reference, tree)
    shifted = ours + shift
    d = distances(shifted, reference, tree)
    back = cKDTree(ours_all + shift).query(sample(reference, rng))[0]
    ours_cells, odm_cells = np.unique(cells(ours_all + shift)), np.unique(cells(reference))
    print(f"points: ours {len(ours_all):,}  ODM {len(reference):,}")
    print(f"coverage: {np.isin(odm_cells, ours_cells).mean():.1%} of ODM's {len(odm_cells)} m2 cells covered; "
          f"{len(ours_cells)} cells in all")
    print(f"global shift removed: {np.round(shift, 2)} m")
    print(f"median distance, ours -> ODM (shared cells): {np.median(d) * 100:.1f} cm  (p90 "
          f"{np.percentile(d, 90) * 100:.1f} cm)")
    print(f"median distance, ODM -> ours: {np.median(back) * 100:.1f} cm  (p90 {np.percentile(back, 90) * 100:.1f} cm)")
    similar = distances(fit_similarity(shifted, reference, tree), reference, tree)
    print(f"median distance after a best-fit similarity instead: {np.median(similar) * 100:.1f} cm")
    warped = distances(fit_height_warp(shifted, reference, tree), reference, tree)
    print(f"median distance after the shift and a quadratic height warp (tilt, bowl): {np.median(warped) * 100:.1f} cm")
    sparse_path = project / "opensfm" / "sparse.ply"
    if sparse_path.exists():
        georef = Georef.load(Project(project))
        sparse = read_ply(sparse_path)
        own = sparse.xyz[sparse.views >= 4].astype(np.float64) + [georef.offset[0], georef.offset[1], 0] - origin
        to_dense = cKDTree(ours_all).query(own)[0]
        print(f"median distance of the sparse points (seen 4+ times) to the dense cloud: "
              f"{np.median(to_dense) * 100:.1f} cm")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
