"""Benchmark: the memory of the stages after the dense cloud as the cloud grows past what one survey of 150
photographs makes.

    engine/.venv/bin/python bench/engine_cloud.py [--project DIR] [--copies 1,2,3]

Takes a project processed at least through openmvs (by default the 153-photograph synthetic survey that
`bench/engine_scale.py --sizes 150` leaves in /tmp/aeromap-scale) and, for each N in --copies, a copy of it whose
dense cloud is the original laid out N x N times side by side: the cloud of a survey N² times as large, at the same
density. The stages from odm_filterpoints to odm_orthophoto run on it (DSM and DTM on, no textured model); this
prints each stage's time and peak memory per size. Since those stages work a tile at a time, their peak memory
should stay flat while the cloud grows; time should grow about linearly. (The orthophoto of the copies is
mostly empty, as only the original's photographs exist; its surface is still built over all of them.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))
sys.path.insert(0, str(REPO / "bench"))

from aeromap_engine.cloud.points import PointCloud  # noqa: E402
from aeromap_engine.io.ply import ply_chunks, ply_writer  # noqa: E402
from lib.engine_run import run_engine  # noqa: E402

STAGES = ("odm_filterpoints", "odm_georeferencing", "odm_dem", "odm_orthophoto")
DENSE = Path("openmvs", "scene_dense.ply")


def replicate(source: Path, target: Path, copies: int) -> int:
    """The source PLY laid out copies x copies times, each copy moved by the cloud's extent (plus a gap of 10 %)."""
    low, high = np.full(2, np.inf), np.full(2, -np.inf)
    for part in ply_chunks(source):
        low, high = np.minimum(low, part.xyz[:, :2].min(axis=0)), np.maximum(high, part.xyz[:, :2].max(axis=0))
    step = (high - low) * 1.1
    points = 0
    with tempfile.TemporaryDirectory() as scratch, ply_writer(target, Path(scratch)) as append:
        for i in range(copies):
            for j in range(copies):
                for part in ply_chunks(source):
                    shift = np.array([i * step[0], j * step[1], 0.0], np.float32)
                    append(PointCloud(part.xyz + shift, part.rgb, part.views))
                    points += len(part)
    return points


def prepare(project: Path, folder: Path, copies: int) -> int:
    """A copy of the project (photographs linked, stages up to openmvs kept) with the replicated dense cloud."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(project, folder, symlinks=True, ignore=shutil.ignore_patterns("scene_dense.ply", "odm_*"))
    for marker in (folder / ".aeromap").glob("*.done"):
        if marker.stem not in ("dataset", "split", "merge", "opensfm", "openmvs"):
            marker.unlink()
    return replicate(project / DENSE, folder / DENSE, copies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path("/tmp/aeromap-scale/survey-150-12mp/project"))
    parser.add_argument("--copies", default="1,2,3", help="N for N x N copies of the cloud, comma-separated")
    parser.add_argument("--work", type=Path, default=Path("/tmp/aeromap-cloud-bench"))
    args = parser.parse_args()
    if not (args.project / DENSE).exists():
        raise SystemExit(f"{args.project} has no dense cloud: run bench/engine_scale.py --sizes 150 first")
    options = [{"name": "dsm", "value": True}, {"name": "dtm", "value": True},
               {"name": "skip-3dmodel", "value": True}, {"name": "end-with", "value": "odm_orthophoto"}]
    rows = []
    for copies in (int(n) for n in args.copies.split(",")):
        folder = args.work / f"copies-{copies}"
        points = prepare(args.project, folder, copies)
        wall, stats = run_engine(folder, args.project / "images", options, rerun_from="odm_filterpoints")
        rows.append((copies, points, wall, stats["stages"]))
        print(f"{copies}x{copies} copies, {points / 1e6:.1f} M dense points: {wall:.0f} s", flush=True)
        shutil.rmtree(folder)
    print(f"\n{'stage':<20}" + "".join(f"{f'{p / 1e6:.0f} M pts':>22}" for _, p, _, _ in rows))
    for stage in STAGES:
        print(f"{stage:<20}" + "".join(
            f"{s.get(stage, {}).get('seconds', 0):>10.1f} s {s.get(stage, {}).get('peak_memory_mb', 0):>7.0f} MB"
            for _, _, _, s in rows))
    peaks = [max(s.get(stage, {}).get("peak_memory_mb", 0) for stage in STAGES) for _, _, _, s in rows]
    print("\nlargest peak per size: " + ", ".join(f"{p:.0f} MB" for p in peaks)
          + f"; growth from the smallest to the largest cloud: {peaks[-1] / peaks[0]:.2f}x for "
          f"{rows[-1][1] / rows[0][1]:.1f}x the points")


if __name__ == "__main__":
    main()
