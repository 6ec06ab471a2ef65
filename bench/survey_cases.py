"""Every real dataset and every hard case made from them, run end to end: one table row per case.

Usage: engine/.venv/bin/python bench/survey_cases.py WORK_DIR [--only NAME ...] [--list]

Each case is a project folder under WORK_DIR, built the way the engine's tests build it (Brighton Beach at
1000 px with its GPS moved, removed, shuffled or tagged RTK; copr with its control points; h20t_thermal; the
small sets; repro_dense_crash) and run to the orthophoto. Prints a Markdown row per case: photographs placed of
those given, reprojection error, GPS or control-point residual, verdict (with the checks that did not pass), wall
time, the orthophoto's coverage (the share of its grid with alpha) and, for a refusal, the engine's message. WORK_DIR/NAME/preview.png is the
orthophoto scaled down, to look at. The machine may be shared: times are noisy.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import rasterio
from PIL import Image
from rasterio.warp import Resampling, reproject

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine" / "tests"))

from aeromap_engine import pipeline  # noqa: E402
from aeromap_engine.errors import EngineError  # noqa: E402
from aeromap_engine.project import Project  # noqa: E402
from test_control_points import COPR, SUBSET as COPR_SUBSET  # noqa: E402
from test_hard_surveys import ALL, move_fixes, set_fix, set_rtk  # noqa: E402
from test_sfm import (DATASET, SFM, SUBSET, TURNED, control_points_of, downscale, exif_utm,  # noqa: E402
                      make_project)
from test_weak_ties import THERMAL, thermal_project  # noqa: E402

# The tests' 1000 px copies keep enough features at "ultra"; the stages after the orthophoto add nothing here.
PRODUCTS = [{"name": "feature-quality", "value": "ultra"}, {"name": "pc-quality", "value": "low"},
            {"name": "dsm", "value": True}, {"name": "skip-3dmodel", "value": True},
            {"name": "end-with", "value": "odm_orthophoto"}]
FAST = [{"name": "fast-orthophoto", "value": True}]
REPRO = DATASET.parents[1] / "repro_dense_crash"


@dataclass(frozen=True)
class Case:
    name: str
    story: str
    build: Callable[[Path], tuple[Project, list[dict]]]


def brighton(names: list[str], options: list[dict] = PRODUCTS, **kwargs) -> Callable[[Path], tuple[Project, list]]:
    return lambda root: (make_project(root, names=names, **kwargs), options)


def full_size(names: list[str], options: list[dict]) -> Callable[[Path], tuple[Project, list]]:
    def build(root: Path) -> tuple[Project, list]:
        (root / "images").mkdir(parents=True)
        for name in names:
            shutil.copy(DATASET / name, root / "images" / name)
        return Project(root), options
    return build


def drift(root: Path) -> tuple[Project, list]:
    project = make_project(root, names=ALL)
    rng = np.random.default_rng(4)
    moves = {name: np.array([0.6, 0.8]) * metres for name, metres in zip(ALL, [60, 50, 40, 30, 20])}
    moves |= {name: rng.normal(scale=8.0 / np.sqrt(2), size=2) for name in ALL[5:]}
    move_fixes(project, moves)
    return project, PRODUCTS


def jitter(root: Path) -> tuple[Project, list]:
    """Half a metre of noise on every fix: a second clean run, which tells how far two runs' orthophotos differ
    whatever the GPS (other seams, another dense cloud)."""
    project = make_project(root, names=ALL)
    rng = np.random.default_rng(7)
    move_fixes(project, {name: rng.normal(scale=0.5, size=2) for name in ALL})
    return project, PRODUCTS


def wild_80(root: Path) -> tuple[Project, list]:
    names = ALL[:12]
    project = make_project(root, names=names)
    move_fixes(project, {names[4]: np.array([80.0, 0.0]), names[9]: np.array([0.0, -80.0])})
    return project, PRODUCTS


def half_overlap_wild(root: Path) -> tuple[Project, list]:
    names = ALL[::2]
    project = make_project(root, names=names)
    move_fixes(project, {names[2]: np.array([21.2, 21.2]), names[6]: np.array([21.2, 21.2])})
    return project, PRODUCTS


def shuffled(root: Path) -> tuple[Project, list]:
    names = ALL[::2]
    project = make_project(root, names=names)
    truth = exif_utm(names)
    for name, other in zip(names, names[3:] + names[:3]):
        set_fix(project.images_dir / name, truth[other])
    return project, PRODUCTS


WEST = ["DJI_0018.JPG", "DJI_0019.JPG", "DJI_0028.JPG", "DJI_0029.JPG"]
EAST = ["DJI_0024.JPG", "DJI_0033.JPG", "DJI_0034.JPG", "DJI_0035.JPG"]


def east_without_gps(root: Path) -> tuple[Project, list]:
    project = make_project(root, names=WEST)
    for name in EAST:
        downscale(DATASET / name, project.images_dir / name, keep_gps=False)
    return project, PRODUCTS


def rtk(drift_m: float) -> Callable[[Path], tuple[Project, list]]:
    """The six photographs tagged as an RTK fix (3 cm vertical), their barometer drifting by drift_m over them."""
    def build(root: Path) -> tuple[Project, list]:
        project = make_project(root, names=SUBSET)
        for k, name in enumerate(SUBSET):
            set_rtk(project.images_dir / name, drift_m * k / (len(SUBSET) - 1))
        return project, PRODUCTS
    return build


def copr(root: Path) -> tuple[Project, list]:
    (root / "images").mkdir(parents=True)
    for name in COPR_SUBSET:
        shutil.copy(COPR / "images" / name, root / "images" / name)
    shutil.copy(COPR / "gcp_list.txt", root / "gcp_list.txt")
    return Project(root), [{"name": "feature-quality", "value": "medium"}, *PRODUCTS[1:]]


def thermal(root: Path) -> tuple[Project, list]:
    names = sorted(p.name for p in THERMAL.iterdir())
    return thermal_project(root, names), [{"name": "min-num-features", "value": 4000}, *FAST, *PRODUCTS[1:]]


def thermal_every_fourth(root: Path) -> tuple[Project, list]:
    names = sorted(p.name for p in THERMAL.iterdir())[:16:4]
    return thermal_project(root, names), [{"name": "min-num-features", "value": 4000}, *FAST, *PRODUCTS[1:]]


def control_points(**kwargs) -> Callable[[Path], tuple[Project, list]]:
    """The six photographs without GPS, control points surveyed on the same six mapped with their GPS."""
    def build(root: Path) -> tuple[Project, list]:
        surveyed = make_project(root / "gps", names=SUBSET)
        pipeline.run(surveyed, SFM)
        orientations = kwargs.get("orientations")
        project = make_project(root / "case", keep_gps=False, orientations=orientations)
        project.gcp_file.write_text(control_points_of(surveyed, **kwargs))
        return project, PRODUCTS
    return build


def repro_dense_crash(root: Path) -> tuple[Project, list]:
    shutil.copytree(REPRO, root, ignore=shutil.ignore_patterns("README.md"))
    options = json.loads((REPRO / "options.json").read_text())
    return Project(root), [*options, *PRODUCTS[3:]]


def small_sets() -> list[Case]:
    """The first 6, 8 and 12 photographs, at 1000 px and at full size (default feature quality), with default
    options and with fast-orthophoto."""
    cases = []
    for count in (6, 8, 12):
        for fast in (False, True):
            mode = FAST if fast else []
            suffix = "-fast" if fast else ""
            story = "fast-orthophoto" if fast else "default"
            cases.append(Case(f"small-{count}{suffix}", f"first {count} at 1000 px, {story}",
                              brighton(ALL[:count], mode + PRODUCTS)))
            cases.append(Case(f"small-{count}-full{suffix}", f"first {count} at full size, {story}",
                              full_size(ALL[:count], mode + PRODUCTS[1:])))
    return cases

CASES = [
    Case("brighton-18", "Brighton Beach, 18 photographs at 1000 px", brighton(ALL)),
    Case("brighton-18-jitter", "the same with 0.5 m of noise on every fix", jitter),
    Case("settling-gps", "first 5 fixes 60..20 m off, 8 m noise on the rest", drift),
    Case("two-wild-80m", "12 photographs, 2 fixes 80 m off", wild_80),
    Case("half-overlap-wild", "every second photograph, 2 fixes 30 m off", half_overlap_wild),
    Case("shuffled-fixes", "fixes shuffled among 9 photographs (refusal expected)", shuffled),
    Case("two-groups", "two groups 40 m apart sharing no view", brighton(WEST + EAST)),
    Case("group-without-gps", "the east group without GPS", east_without_gps),
    Case("rtk-steady", "6 photographs with RTK tags (3 cm)", rtk(0.0)),
    Case("rtk-barometer", "the same, barometer drifting 1 m", rtk(1.0)),
    Case("gcp-one-wrong", "6 photographs, no GPS, 6 control points, one 25 m off", control_points()),
    Case("gcp-turned", "5 of 6 photographs turned by EXIF, points marked upright",
         control_points(count=5, off={}, orientations=TURNED)),
    Case("gcp-three-one-wrong", "3 control points, one 40 m off (refusal expected)",
         control_points(count=3, off={1: 40.0})),
    Case("gcp-on-a-line", "4 control points along one line", control_points(count=4, off={}, on_line=True)),
    Case("copr", "copr, 23 kite photographs, control points only", copr),
    Case("h20t-thermal", "h20t_thermal, 32 frames, two strips", thermal),
    Case("thermal-no-overlap", "every fourth thermal frame (refusal expected)", thermal_every_fourth),
    Case("repro-dense-crash", "the project that crashed dense matching", repro_dense_crash),
    *small_sets(),
]


def preview(project: Project, target: Path) -> float | None:
    """Writes the orthophoto scaled to at most 800 px; answers the share of its grid that has alpha."""
    ortho = project.root / "odm_orthophoto" / "odm_orthophoto.tif"
    if not ortho.exists():
        return None
    with rasterio.open(ortho) as raster:
        scale = max(raster.width, raster.height) / 800
        shape = (raster.count, max(1, int(raster.height / scale)), max(1, int(raster.width / scale)))
        pixels = raster.read(out_shape=shape)
    image = np.moveaxis(pixels[:4] if pixels.shape[0] >= 4 else pixels[:3], 0, -1).astype(np.uint8)
    Image.fromarray(image).save(target)
    return float((pixels[-1] > 0).mean())


def row(case: Case, project: Project, seconds: float, refusal: str | None) -> str:
    stats = project.read_stats() if project.stats_file.exists() else {}
    rec = stats.get("reconstruction", {})
    placed = f"{rec.get('images_registered', '-')}/{rec.get('images_total', '-')}"
    error = rec.get("mean_reprojection_error_px")
    residual = "-"
    if rec.get("gcp_residual_m"):
        residual = f"GCP max {rec['gcp_residual_m']['max']:.2f} m"
    elif rec.get("gps_residual_m"):
        gps = rec["gps_residual_m"]
        residual = f"GPS mean {gps['mean']:.1f} m, {len(gps['outliers'])} outliers"
    coverage = preview(project, project.root / "preview.png")
    quality = stats.get("quality", {})
    failed = [name for name, check in quality.get("checks", {}).items() if not check["passed"]]
    verdict = quality.get("verdict", "-") + (f" ({', '.join(failed)})" if failed else "")
    cover = "-" if coverage is None else f"{coverage:.0%}"
    outcome = refusal or "products"
    return (f"| {case.name} | {case.story} | {placed} | {error if error is None else f'{error:.2f}'} | {residual} "
            f"| {verdict} | {seconds:.0f} s | {cover} | {outcome} |")


def run(case: Case, work: Path) -> str:
    root = work / case.name
    shutil.rmtree(root, ignore_errors=True)
    project, options = case.build(root)
    start = time.monotonic()
    refusal = None
    try:
        pipeline.run(project, options)
    except EngineError as error:
        refusal = f"refused (exit {error.exit_code}): {error}".replace("|", "/")
    return row(case, project, time.monotonic() - start, refusal)


def orthophoto(root: Path) -> Path:
    return next(root.rglob("odm_orthophoto/odm_orthophoto.tif"))


PATCH = 64  # px: the orthophotos are compared patch by patch


def _read_gray(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An orthophoto's grey levels, where it holds pixels, and its pixel-to-world matrix (3 x 3)."""
    with rasterio.open(path) as raster:
        pixels = np.moveaxis(raster.read(), 0, -1)
        to_world = np.array(raster.transform).reshape(3, 3)
    gray = cv2.cvtColor(np.ascontiguousarray(pixels[..., :3]), cv2.COLOR_RGB2GRAY)
    return gray, pixels[..., -1] > 0, to_world


def _world_similarity(a: tuple, b: tuple) -> np.ndarray:
    """The 2D similarity (3 x 3, world coordinates) that lays b's features on a's: SIFT matches and RANSAC."""
    found = []
    for gray, valid, to_world in (a, b):
        keypoints, descriptors = cv2.SIFT_create(8000).detectAndCompute(gray, valid.astype(np.uint8))
        centres = np.column_stack([np.array([k.pt for k in keypoints]) + 0.5, np.ones(len(keypoints))])
        found.append(((centres @ to_world.T)[:, :2], descriptors))
    matches = cv2.BFMatcher().knnMatch(found[1][1], found[0][1], k=2)
    good = [m for m, n in matches if m.distance < 0.75 * n.distance]
    source = np.float32([found[1][0][m.queryIdx] for m in good])
    target = np.float32([found[0][0][m.trainIdx] for m in good])
    origin = target.mean(axis=0)  # world coordinates are too large for float32 arithmetic
    similarity, _ = cv2.estimateAffinePartial2D(source - origin, target - origin, method=cv2.RANSAC,
                                                ransacReprojThreshold=5 * abs(a[2][0, 0]))
    shift_in, shift_out = np.eye(3), np.eye(3)
    shift_in[:2, 2], shift_out[:2, 2] = -origin, origin
    return shift_out @ np.vstack([similarity, [0, 0, 1]]) @ shift_in


def ortho_misfit(a: Path, b: Path) -> str:
    """How far two orthophotos of one survey disagree locally once one 2D similarity lays b on a: b is resampled
    onto a's grid through it, and each textured patch's remaining shift is found by phase correlation; in a's
    pixels (its GSD)."""
    return gray_misfit(_read_gray(a), _read_gray(b))


def gray_misfit(first: tuple, second: tuple) -> str:
    """ortho_misfit of two images read as _read_gray reads them (b's "world" may be its own pixel grid, as
    for a render that is not georeferenced: the similarity then takes its scale too)."""
    similarity = _world_similarity(first, second)
    gray, valid, to_world = first
    a_to_b = np.linalg.inv(second[2]) @ np.linalg.inv(similarity) @ to_world
    size = (gray.shape[1], gray.shape[0])
    inverse = cv2.WARP_INVERSE_MAP
    warped = cv2.warpAffine(second[0], a_to_b[:2], size, flags=cv2.INTER_LINEAR | inverse)
    covered = cv2.warpAffine(second[1].astype(np.uint8), a_to_b[:2], size, flags=cv2.INTER_NEAREST | inverse) > 0
    window = cv2.createHanningWindow((PATCH, PATCH), cv2.CV_32F)
    shifts = []
    for row in range(0, gray.shape[0] - PATCH, PATCH):
        for col in range(0, gray.shape[1] - PATCH, PATCH):
            patch = (slice(row, row + PATCH), slice(col, col + PATCH))
            mine = gray[patch].astype(np.float32)
            if not (valid[patch].all() and covered[patch].all()) or mine.std() < 8:
                continue  # outside either orthophoto, or too plain to tell a shift
            (dx, dy), response = cv2.phaseCorrelate(mine, warped[patch].astype(np.float32), window)
            if response > 0.2:
                shifts.append(np.hypot(dx, dy))
    turn = np.degrees(np.arctan2(similarity[1, 0], similarity[0, 0]))
    return (f"{len(shifts)} patches of {PATCH} px: local shift median {np.median(shifts):.2f} GSD, 90th "
            f"percentile {np.percentile(shifts, 90):.2f} GSD after one similarity (turned {turn:.1f} degrees, "
            f"scaled {np.linalg.norm(similarity[0, :2]):.4f}); GSD {abs(to_world[0, 0]) * 100:.1f} cm")


def dsm_difference(a: Path, b: Path) -> str:
    """The median height difference of b's DSM from a's, on a's grid where both hold heights."""
    with rasterio.open(a) as first, rasterio.open(b) as second:
        heights = first.read(1, masked=True)
        other = np.full(heights.shape, np.nan, dtype=np.float32)
        reproject(rasterio.band(second, 1), other, dst_transform=first.transform, dst_crs=first.crs,
                  dst_nodata=np.nan, resampling=Resampling.bilinear)
    both = ~heights.mask & np.isfinite(other)
    difference = other[both] - heights.data[both]
    return (f"{both.sum()} cells: median {np.median(difference) * 100:+.1f} cm, "
            f"median absolute {np.median(np.abs(difference)) * 100:.1f} cm")


# Pairs of cases whose products are compared after the table: what the hard case did to the map.
COMPARISONS = [
    ("brighton-18-jitter", "brighton-18", "orthophoto", lambda a, b: ortho_misfit(orthophoto(a), orthophoto(b))),
    ("settling-gps", "brighton-18", "orthophoto", lambda a, b: ortho_misfit(orthophoto(a), orthophoto(b))),
    ("rtk-barometer", "rtk-steady", "DSM",
     lambda a, b: dsm_difference(next(b.rglob("odm_dem/dsm.tif")), next(a.rglob("odm_dem/dsm.tif")))),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        print("\n".join(f"{case.name}: {case.story}" for case in CASES))
        return
    print("| case | survey | placed | reproj. px | residual | verdict | time | ortho alpha | outcome |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in CASES:
        if args.only is None or case.name in args.only:
            print(run(case, args.work), flush=True)
    for case, reference, product, compare in COMPARISONS:
        try:
            print(f"- {case} against {reference}, {product}: {compare(args.work / case, args.work / reference)}")
        except StopIteration:
            print(f"- {case} against {reference}: no {product} to compare")


if __name__ == "__main__":
    main()
