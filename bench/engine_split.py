"""Benchmark: a large synthetic survey split into submodels and processed on local processing nodes, against
the same survey processed whole.

    engine/.venv/bin/python bench/engine_split.py [--images 150] [--split 80] [--split-overlap 40]
        [--nodes 2] [--lose-one] [--megapixels 12] [--cache DIR] [--no-baseline]

The survey is bench/engine_scale.py's (12 MP, 90 m, 75 %/65 % overlap; generated once into --cache). --nodes
`aeromap node` processes are started on free ports with the real engine; the engine runs the survey with split
and sm-cluster naming them, so that the nodes process the submodels, and the engine merges what they return.
With --lose-one the first node is killed, with its engine, a few seconds after it starts a submodel (a machine
lost), and that submodel must run again on another. Unless --no-baseline, the same survey is then processed
whole, as one node would.

Prints: the wall time of both and the time saved; the split run's stages and each submodel's; how the
submodels' DSMs agree where they meet (the median height difference of the two within 5 m of the cutline, in
GSD) and whether the merged DSM steps there: its error against the survey's true DSM on either side of the
cutline and the median change between neighbouring cells across it against elsewhere.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import rasterio
from rasterio.vrt import WarpedVRT
from scipy.spatial import cKDTree

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "test" / "pyodm"))

from engine_scale import survey  # noqa: E402
from lib.engine_run import run_engine  # noqa: E402
from nodeprocess import NodeProcess  # noqa: E402

NODATA = -9999.0
CUTLINE_M = 5.0  # cells this close to the cutline count as on it
AWAY_M = 30.0  # and this far as away from it


def on_grid(path: Path, like: rasterio.DatasetReader) -> np.ndarray:
    """A raster's first band resampled onto another's grid, NaN where it has no data."""
    with rasterio.open(path) as source, WarpedVRT(source, crs=like.crs, transform=like.transform,
                                                  width=like.width, height=like.height, nodata=NODATA) as vrt:
        values = vrt.read(1).astype(np.float64)
    return np.where((values == NODATA) | ~np.isfinite(values), np.nan, values)


def seam_figures(project: Path, truth_dsm: Path) -> dict:
    plan = json.loads((project / "submodels" / "plan.json").read_text())["submodels"]
    with rasterio.open(project / "odm_dem" / "dsm.tif") as merged:
        z = on_grid(project / "odm_dem" / "dsm.tif", merged)
        parts = [on_grid(project / "submodels" / s["name"] / "odm_dem" / "dsm.tif", merged) for s in plan]
        truth = on_grid(truth_dsm, merged)
        rows, cols = np.mgrid[0:merged.height, 0:merged.width]
        x, y = rasterio.transform.xy(merged.transform, rows.ravel(), cols.ravel())
        cell = merged.res[0]
    xy = np.c_[x, y]
    nearest = np.stack([cKDTree(np.array(s["core_cameras"])).query(xy)[0] for s in plan])
    order = np.sort(nearest, axis=0)
    owner = np.argmin(nearest, axis=0).reshape(z.shape)
    gap = (order[1] - order[0]).reshape(z.shape)  # distance difference to the nearest other submodel
    on, away = gap < 2 * CUTLINE_M, gap > 2 * AWAY_M  # the difference grows twice as fast as the distance
    differences = []
    for a, b in itertools.combinations(range(len(parts)), 2):
        meet = on & np.isfinite(parts[a]) & np.isfinite(parts[b]) & np.isin(owner, (a, b))
        differences.append((parts[a] - parts[b])[meet])
    pairs = np.concatenate(differences)
    error = z - truth
    steps = np.abs(np.diff(z, axis=1))
    return {"cell_m": cell, "cutline_cells": int(len(pairs)),
            "submodel_offset_m": float(np.median(pairs)) if len(pairs) else None,
            "submodel_spread_m": float(np.median(np.abs(pairs - np.median(pairs)))) if len(pairs) else None,
            "error_on_cutline_m": float(np.nanmedian(np.abs(error[on]))),
            "error_away_m": float(np.nanmedian(np.abs(error[away]))),
            "bias_on_cutline_m": float(np.nanmedian(error[on])), "bias_away_m": float(np.nanmedian(error[away])),
            "step_on_cutline_m": float(np.nanmedian(steps[on[:, 1:]])),
            "step_away_m": float(np.nanmedian(steps[away[:, 1:]]))}


def stage_seconds(project: Path) -> dict[str, float]:
    stats = json.loads((project / "odm_report" / "stats.json").read_text())
    return {name: record["seconds"] for name, record in stats["stages"].items()}


def sfm_seconds(project: Path) -> float:
    """The split stage's own structure from motion (features, matching, mapping and alignment of submodels)."""
    stats = json.loads((project / "odm_report" / "stats.json").read_text())
    return sum(stats["reconstruction"]["timings_s"].values())


def lose_when_busy(node: NodeProcess, after_s: float = 20.0) -> None:
    """Kill the node and everything it started once it has had a task for after_s seconds."""
    client = node.client()
    while not client.info().task_queue_count:
        time.sleep(1.0)
    time.sleep(after_s)
    process = psutil.Process(node.proc.pid)
    parts = [process] + process.children(recursive=True)
    for part in parts:  # frozen first, so that the node cannot report its engine's death: the machine is gone
        part.suspend()
    for part in parts:
        part.kill()
    print(f"killed the node at {node.url} and its engine", flush=True)


def split_run(folder: Path, options: list[dict], count: int, lose_one: bool) -> tuple[float, Path]:
    with tempfile.TemporaryDirectory(prefix="aeromap-split-nodes-") as scratch:
        folders = [Path(scratch) / f"node{i}" for i in range(count)]
        for data in folders:
            data.mkdir()
        nodes = [NodeProcess(data, engine=None).start() for data in folders]
        if lose_one:
            threading.Thread(target=lose_when_busy, args=(nodes[0],), daemon=True).start()
        try:
            urls = ",".join(node.url for node in nodes)
            project = folder / "project-split"
            wall, _ = run_engine(project, folder / "images", options + [{"name": "sm-cluster", "value": urls}])
        finally:
            for node in nodes:
                node.stop()
    return wall, project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=150)
    parser.add_argument("--split", type=int, default=80)
    parser.add_argument("--split-overlap", type=float, default=40.0)
    parser.add_argument("--megapixels", type=float, default=12.0)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--lose-one", action="store_true", help="kill the first node while it runs a submodel")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/aeromap-scale"))
    parser.add_argument("--no-baseline", action="store_true", help="do not process the survey whole")
    args = parser.parse_args()
    folder = survey(args.cache, args.images, args.megapixels)
    options = [{"name": "dsm", "value": True}, {"name": "dtm", "value": True}]
    split_options = options + [{"name": "split", "value": args.split},
                               {"name": "split-overlap", "value": args.split_overlap}]
    wall, project = split_run(folder, split_options, args.nodes, args.lose_one)
    print(f"split run on {args.nodes} nodes: {wall:.0f} s")
    for line in (project / "engine.log").read_text().splitlines():
        if "running it again" in line or " done on " in line:
            print(f"  {line.strip()}")
    for name, seconds in stage_seconds(project).items():
        print(f"  {name:<20}{seconds:>8.1f} s")
    longest = 0.0
    for sub in sorted((project / "submodels").glob("submodel_*")):
        stages = stage_seconds(sub)
        longest = max(longest, sum(stages.values()))
        images = len(list((sub / "images").iterdir()))
        print(f"  {sub.name} ({images} images) on its node: {sum(stages.values()):.0f} s: "
              + ", ".join(f"{k} {v:.0f}" for k, v in stages.items() if v >= 1))
    here = stage_seconds(project)
    # The split stage waited for the nodes; without that wait, what is left ran on the survey's own node.
    own = sum(here.values()) - here["split"] + sfm_seconds(project)
    print(f"  with each node on a machine of its own: about {own + longest:.0f} s (the survey's own work, "
          f"{own:.0f} s, and the longest submodel, whose time here was measured with both nodes sharing the "
          f"cores: an upper bound)")
    seams = seam_figures(project, folder / "truth" / "dsm.tif")
    gsd = json.loads((project / "odm_report" / "stats.json").read_text())["reconstruction"]["gsd_cm"] / 100
    print(f"\nDSM at the cutline ({seams['cutline_cells']} cells where two submodels meet, GSD {gsd * 100:.1f} cm):")
    print(f"  submodels' heights differ by {seams['submodel_offset_m'] * 100:.1f} cm (median; "
          f"{abs(seams['submodel_offset_m']) / gsd:.2f} GSD, target under 2), spread "
          f"{seams['submodel_spread_m'] * 100:.1f} cm")
    print(f"  merged DSM against the truth: median |error| {seams['error_on_cutline_m'] * 100:.1f} cm on the "
          f"cutline, {seams['error_away_m'] * 100:.1f} cm away from it; bias {seams['bias_on_cutline_m'] * 100:.1f}"
          f" / {seams['bias_away_m'] * 100:.1f} cm")
    print(f"  merged DSM's median change between neighbouring cells: {seams['step_on_cutline_m'] * 100:.2f} cm "
          f"on the cutline, {seams['step_away_m'] * 100:.2f} cm away from it")
    if not args.no_baseline:
        whole, _ = run_engine(folder / "project", folder / "images", options)
        print(f"\nthe same survey whole, on one node: {whole:.0f} s; the split run saved {whole - wall:.0f} s "
              f"({100 * (whole - wall) / whole:.0f} %)")


if __name__ == "__main__":
    main()
