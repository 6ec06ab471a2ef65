"""Benchmark: how the engine's time and memory grow with the number of photographs.

    engine/.venv/bin/python bench/engine_scale.py [--sizes 40,75,150] [--megapixels 12] [--cache DIR]
        [--end-with STAGE] [--option name=value ...] [--reuse]

For each size, a synthetic survey (aeromap_engine.synthetic) of at least that many photographs of the given
resolution is flown over a square scene grown to hold them, at 90 m with 75 % forward and 65 % side overlap
(kept in --cache, so a second run only processes). The whole pipeline runs on it (with --reuse, the last run in
the cache is read back instead), then this prints each stage's wall time and peak memory (as the engine records
them) per size, the fitted growth exponent of each stage (the slope of log time against log images, 1 being
linear: over all sizes, and between the two largest), and the targets on a 2-core machine: structure from motion
within 4 minutes and all products within 12 minutes at 75 images, peak memory within 4 GiB from 150 on.

Photographs are rendered at half their size and enlarged (SurveySpec.render_downscale): the engine works on the
same number of pixels, and feature extraction at the default quality halves them anyway.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))
sys.path.insert(0, str(REPO / "bench"))

from aeromap_engine.resources import cpu_limit  # noqa: E402
from lib.engine_run import run_engine  # noqa: E402
from aeromap_engine.synthetic.camera import FlightSpec, LensSpec, lawnmower  # noqa: E402
from aeromap_engine.synthetic.scene import SceneSpec  # noqa: E402
from aeromap_engine.synthetic import SurveySpec, generate  # noqa: E402

ASPECT = 4 / 3
SFM_TARGET_S, TOTAL_TARGET_S, TARGET_IMAGES = 240.0, 720.0, 75
MEMORY_TARGET_GIB, MEMORY_IMAGES = 4.0, 150
EXPONENT_TARGET = 1.2


def survey_spec(size_m: float, megapixels: float) -> SurveySpec:
    width = int(round(math.sqrt(megapixels * 1e6 * ASPECT) / 8)) * 8
    area = (size_m / 150.0) ** 2  # the default scene's buildings and trees per 150 m square
    scene = SceneSpec(size_m=size_m, height_cell_m=0.1, texture_cell_m=0.05, buildings=round(10 * area),
                      trees=round(45 * area))
    return SurveySpec(scene=scene, lens=LensSpec(width=width, height=int(width / ASPECT)),
                      flight=FlightSpec(height_m=90.0), render_downscale=2)


def shots(size_m: float, megapixels: float) -> int:
    spec = survey_spec(size_m, megapixels)
    return len(lawnmower(spec.lens.lens(), spec.flight, size_m, 0.0, np.random.default_rng(0)))


def scene_size(images: int, megapixels: float) -> float:
    """The smallest scene (to 2 m) whose flight takes at least this many photographs."""
    size = 100.0
    while shots(size, megapixels) < images:
        size += 2.0
    return size


def survey(cache: Path, images: int, megapixels: float) -> Path:
    folder = cache / f"survey-{images}-{megapixels:g}mp"
    if not (folder / "truth" / "cameras.json").exists():
        size = scene_size(images, megapixels)
        began = time.monotonic()
        generate(folder, survey_spec(size, megapixels), workers=cpu_limit())
        print(f"generated {shots(size, megapixels)} photographs over {size:.0f} m in "
              f"{time.monotonic() - began:.0f} s: {folder}", flush=True)
    return folder


def process(folder: Path, options: list[dict], reuse: bool) -> dict:
    """The figures of a run of the survey: a new one, or with `reuse` the last one in its project (its wall time
    then the sum of its stages', without the engine's start)."""
    stats_file = folder / "project" / "odm_report" / "stats.json"
    if reuse and stats_file.exists():
        stats = json.loads(stats_file.read_text())
        wall = sum(record["seconds"] for record in stats["stages"].values())
    else:
        wall, stats = run_engine(folder / "project", folder / "images", options)
    return {"images": len(list((folder / "images").iterdir())), "wall": wall, "stages": stats["stages"],
            "sfm_steps": stats.get("reconstruction", {}).get("timings_s", {}),
            "registered": stats.get("reconstruction", {}).get("images_registered")}


def exponent(images: list[int], seconds: list[float]) -> float | None:
    """The slope of log time against log images, by least squares (None below two sizes or with zero times)."""
    if len(images) < 2 or min(seconds) <= 0:
        return None
    return float(np.polyfit(np.log(images), np.log(seconds), 1)[0])


def exponents(sizes: list[int], seconds: list[float]) -> str:
    """The exponent fitted over every size, and over the two largest alone (the growth where the survey's edges,
    whose photographs have fewer partners, weigh least); marked where the fit misses the target on a stage that
    takes long enough to tell."""
    slope = exponent(sizes, seconds)
    if slope is None:
        return f"{'':>19}"
    mark = "" if slope <= EXPONENT_TARGET or max(seconds) < 5 else " !"
    largest = exponent(sizes[-2:], seconds[-2:]) if len(sizes) > 2 else None
    return f"{slope:>10.2f}" + (f"{largest:>9.2f}" if largest is not None else f"{'':>9}") + mark


def at(results: list[dict], images: int, figure) -> float | None:
    """A figure at the given size, interpolated in log-log between the sizes run (None outside them)."""
    sizes = [r["images"] for r in results]
    if not sizes or images < min(sizes) or images > max(sizes):
        return None
    values = [figure(r) for r in results]
    return float(np.exp(np.interp(np.log(images), np.log(sizes), np.log(values))))


def report(results: list[dict]) -> None:
    stages = list(dict.fromkeys(s for r in results for s in r["stages"]))
    sizes = [r["images"] for r in results]
    print(f"\n{'stage':<20}" + "".join(f"{n:>9} img" for n in sizes) + f"{'exponent':>10}{'largest':>9}"
          "   peak MB per size")
    for stage in stages:
        seconds = [r["stages"].get(stage, {}).get("seconds", 0.0) for r in results]
        peaks = [r["stages"].get(stage, {}).get("peak_memory_mb", 0.0) for r in results]
        print(f"{stage:<20}" + "".join(f"{s:>12.1f}s" for s in seconds) + exponents(sizes, seconds) + "   "
              + " ".join(f"{p:.0f}" for p in peaks))
    walls = [r["wall"] for r in results]
    print(f"{'whole run':<20}" + "".join(f"{w:>12.1f}s" for w in walls) + exponents(sizes, walls))
    print("registered: " + ", ".join(f"{r['registered']}/{r['images']}" for r in results))
    for r in results:
        print(f"  {r['images']} images, SfM steps: " + ", ".join(f"{k} {v:.0f} s" for k, v in r["sfm_steps"].items()))
    print("\nTargets on a 2-core machine:")
    # A flight of exactly TARGET_IMAGES rarely exists: between two sizes the figure is interpolated; below the
    # smallest, that size's figure bounds it from above (time grows with the photographs).
    smallest = min(results, key=lambda r: r["images"])
    above = smallest["images"] > TARGET_IMAGES
    for label, figure, target in ((f"structure from motion at {TARGET_IMAGES} images",
                                   lambda r: r["stages"]["opensfm"]["seconds"], SFM_TARGET_S),
                                  (f"all products at {TARGET_IMAGES} images", lambda r: r["wall"], TOTAL_TARGET_S)):
        value = figure(smallest) if above else at(results, TARGET_IMAGES, figure)
        bound = f" at most (measured at {smallest['images']} images)" if above else ""
        print(f"  {label}: " + ("not measured (sizes do not span it)" if value is None else
                                f"{value:.0f} s{bound}, target {target:.0f} s: "
                                f"{'met' if value <= target else 'MISSED'}"))
    def peak_gib(r: dict) -> float:
        return max(s["peak_memory_mb"] for s in r["stages"].values()) / 1024

    print("  peak memory per size: " + ", ".join(f"{r['images']} images {peak_gib(r):.2f} GiB" for r in results)
          + f" (not to grow beyond {MEMORY_IMAGES} images)")
    # The bound holds from MEMORY_IMAGES on, whatever the size: the largest peak of those sizes is what it is held to.
    bounded = [r for r in results if r["images"] >= MEMORY_IMAGES]
    peak = max(bounded, key=peak_gib) if bounded else None
    print(f"  peak memory from {MEMORY_IMAGES} images on: " + (
        "not measured (no size that large)" if peak is None else
        f"{peak_gib(peak):.2f} GiB at most (at {peak['images']} images), target {MEMORY_TARGET_GIB:.0f} GiB: "
        f"{'met' if peak_gib(peak) <= MEMORY_TARGET_GIB else 'MISSED'}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="40,75,150", help="numbers of photographs, comma-separated")
    parser.add_argument("--megapixels", type=float, default=12.0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/aeromap-scale"))
    parser.add_argument("--end-with", default="odm_postprocess")
    parser.add_argument("--option", action="append", default=[], help="an engine option, name=value")
    parser.add_argument("--reuse", action="store_true",
                        help="print the figures of the runs already in the cache instead of running them again")
    args = parser.parse_args()
    options = [{"name": "dsm", "value": True}, {"name": "dtm", "value": True},
               {"name": "end-with", "value": args.end_with}]
    options += [{"name": k, "value": v} for k, _, v in (o.partition("=") for o in args.option)]
    results = []
    for images in sorted(int(n) for n in args.sizes.split(",")):
        folder = survey(args.cache, images, args.megapixels)
        results.append(process(folder, options, args.reuse))
        print(f"{results[-1]['images']} images: {results[-1]['wall']:.0f} s", flush=True)
    report(results)


if __name__ == "__main__":
    main()
