"""Benchmark: the engine's first stages (dataset, opensfm) on a full dataset, with their time, memory and quality.

    engine/.venv/bin/python bench/engine_sfm.py [DATASET_DIR] [--option name=value ...] [--keep DIR]

DATASET_DIR holds images/ (default: the shared Brighton Beach set). Prints each stage's wall time and peak memory,
the process's CPU time (wall time on a shared machine depends on the other jobs; CPU time much less), the
machine's load, the SfM steps' times and the reconstruction figures from odm_report/stats.json. It also checks
the camera centres against the photographs' EXIF GPS on its own, without the engine's alignment code.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pycolmap
from PIL import ExifTags, Image
from pyproj import Transformer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

from aeromap_engine import pipeline  # noqa: E402
from aeromap_engine.log import setup_logging  # noqa: E402
from aeromap_engine.project import Project  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "brighton_beach"


def exif_positions(images: Path) -> dict[str, tuple[float, float, float]]:
    """Longitude, latitude, altitude of each photograph, read straight from its EXIF GPS tags."""
    out = {}
    for path in sorted(images.iterdir()):
        try:
            gps = Image.open(path).getexif().get_ifd(ExifTags.IFD.GPSInfo)
        except OSError:
            continue
        if 2 not in gps or 4 not in gps:
            continue
        lat = sum(float(v) / 60 ** i for i, v in enumerate(gps[2])) * (-1 if gps.get(1) == "S" else 1)
        lon = sum(float(v) / 60 ** i for i, v in enumerate(gps[4])) * (-1 if gps.get(3) == "W" else 1)
        out[path.name] = (lon, lat, float(gps.get(6, 0.0)))
    return out


def independent_gps_check(project: Path, images: Path) -> dict[str, float] | None:
    """Camera centres of the written model, put back into the CRS, against EXIF GPS (no fitting at all)."""
    georef = json.loads((project / "opensfm" / "georef.json").read_text())
    if georef["crs"] is None:
        return None
    model = pycolmap.Reconstruction(project / "opensfm" / "reconstruction")
    to_crs = Transformer.from_crs("EPSG:4326", georef["crs"], always_xy=True)
    deltas = []
    for name, (lon, lat, alt) in exif_positions(images).items():
        image = model.find_image_with_name(name)
        if image is None or not image.has_pose:
            continue
        easting, northing = to_crs.transform(lon, lat)
        centre = image.projection_center() + [georef["offset"][0], georef["offset"][1], 0.0]
        deltas.append(centre - [easting, northing, alt])
    distances = np.linalg.norm(deltas, axis=1)
    return {"images": len(deltas), "mean_m": float(distances.mean()), "max_m": float(distances.max()),
            "median_m": float(np.median(distances))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--option", action="append", default=[], help="an engine option, name=value")
    parser.add_argument("--keep", type=Path, help="project folder to run in and keep (default: a temporary one)")
    args = parser.parse_args()
    images = args.dataset.resolve() / "images"
    options = [{"name": "end-with", "value": "opensfm"}, {"name": "rerun-all", "value": True}]
    options += [dict(zip(("name", "value"), o.split("=", 1))) for o in args.option]

    with tempfile.TemporaryDirectory(prefix="aeromap-bench-") as scratch:
        root = args.keep.resolve() if args.keep else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        link = root / "images"
        if not link.exists():
            link.symlink_to(images, target_is_directory=True)
        setup_logging()
        load_before = os.getloadavg()
        began, cpu_before = time.monotonic(), os.times()
        pipeline.run(Project(root), options)
        wall, cpu_after = time.monotonic() - began, os.times()
        load_after = os.getloadavg()
        stats = json.loads((root / "odm_report" / "stats.json").read_text())
        check = independent_gps_check(root, images)

    cpu = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    rec = stats["reconstruction"]
    print("\n== Aeromap engine, dataset + opensfm on", args.dataset.name, "==")
    print(f"options: {args.option or 'defaults'}")
    print(f"machine: {os.cpu_count()} CPUs; load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          "(1 min)")
    for stage, record in stats["stages"].items():
        print(f"  stage {stage:<10} {record['seconds']:7.1f} s   peak memory {record['peak_memory_mb']:7.0f} MB")
    print(f"  total        {wall:7.1f} s wall, {cpu:.1f} s CPU (process), peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print("  opensfm steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in rec["timings_s"].items()))
    print(f"registered images     {rec['images_registered']}/{rec['images_total']}")
    print(f"sparse points         {rec['points']} (mean track length {rec['mean_track_length']:.2f})")
    print(f"reprojection error    {rec['mean_reprojection_error_px']:.3f} px (mean)")
    if rec["gps_residual_m"]:
        g = rec["gps_residual_m"]
        print(f"GPS residual          mean {g['mean']:.3f} m, max {g['max']:.3f} m, RMSE horizontal "
              f"{g['rmse_horizontal']:.3f} m, vertical {g['rmse_vertical']:.3f} m, outliers {g['outliers']}")
    if check:
        print(f"EXIF GPS check        {check['images']} images: mean {check['mean_m']:.3f} m, median "
              f"{check['median_m']:.3f} m, max {check['max_m']:.3f} m (model centres vs EXIF, no fitting)")
    if rec["gcp_residual_m"]:
        g = rec["gcp_residual_m"]
        print(f"GCP residual          mean {g['mean']:.3f} m, max {g['max']:.3f} m")
    print(f"GSD                   {rec['gsd_cm']} cm; georeferenced by {rec['georef_source']} in {rec['crs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
