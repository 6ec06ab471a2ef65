"""Whole engine pipeline on Brighton Beach, every product (point cloud, DSM, DTM, orthophoto, textured model,
report, tiles): at default options plus DSM and DTM, then with use-3dmesh, then with fast-orthophoto. Prints each
stage's time and peak memory (as the engine records them in odm_report/stats.json), the wall time of each run
and its target on a 2-core machine.

Usage: engine/.venv/bin/python bench/engine_full.py [WORK_DIR] [--only default|3dmesh|fast]
WORK_DIR (default: a temporary folder) keeps the two projects, e.g. for bench/dense_quality.py WORK_DIR/default.
The machine may be shared: timings are noisy, run twice when they matter.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lib.engine_run import run_engine  # noqa: E402

IMAGES = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "brighton_beach" / "images"
RUNS = {
    "default": [{"name": "dsm", "value": True}, {"name": "dtm", "value": True}],
    "3dmesh": [{"name": "dsm", "value": True}, {"name": "dtm", "value": True}, {"name": "use-3dmesh", "value": True}],
    "fast": [{"name": "fast-orthophoto", "value": True}],
}
# Wall seconds and peak GiB a run should stay within on a 2-core machine (none set for fast-orthophoto).
TARGETS = {"default": (120, 4.0), "3dmesh": (240, 4.0)}


def run(name: str, root: Path) -> None:
    wall, stats = run_engine(root / name, IMAGES, RUNS[name])
    peak = max(s["peak_memory_mb"] for s in stats["stages"].values()) / 1024
    target = TARGETS.get(name)
    verdict = "" if target is None else (f" (target {target[0]} s, {target[1]:.0f} GiB: "
                                         f"{'met' if wall <= target[0] and peak <= target[1] else 'MISSED'})")
    print(f"\n== {name}: {wall:.1f} s wall, peak memory {peak:.2f} GiB{verdict}")
    print(f"{'stage':<20}{'seconds':>10}{'peak MB':>10}")
    for stage, figures in stats["stages"].items():
        print(f"{stage:<20}{figures['seconds']:>10.1f}{figures['peak_memory_mb']:>10.0f}")
    cloud, ortho = stats.get("point_cloud", {}), stats.get("orthophoto", {})
    print(f"point cloud: {cloud.get('points')} points ({cloud.get('source')}); orthophoto "
          f"{ortho.get('width')}x{ortho.get('height')} px at {ortho.get('resolution_cm')} cm")
    mesh, texture = stats.get("mesh", {}), stats.get("texturing", {})
    print(f"mesh: {mesh.get('kind')}, {mesh.get('vertices')} vertices, {mesh.get('faces')} faces; textured "
          f"{texture.get('faces_textured')} faces from {texture.get('views_used')} images, seam step "
          f"{texture.get('seam_step_before')} -> {texture.get('seam_step_after')} grey levels")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("work_dir", nargs="?")
    parser.add_argument("--only", choices=tuple(RUNS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aeromap-bench-") as tmp:
        root = Path(args.work_dir or tmp)
        for name in RUNS:
            if args.only in (None, name):
                run(name, root)


if __name__ == "__main__":
    main()
