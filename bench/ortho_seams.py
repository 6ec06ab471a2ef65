"""Benchmark: how much the orthophoto's seams show, on Brighton Beach and on a copy given a known vignetting and
uneven exposures, with and without the photometric corrections.

    engine/.venv/bin/python bench/ortho_seams.py [--shrink 2] [--work /tmp/aeromap-seams]

The 18 photographs, shrunk --shrink times, go through the pipeline (no textured model). Which photograph each
orthophoto pixel comes from is read from the orthophoto's sources raster (odm_orthophoto_sources.tif); the
statistic is the median step of the mean log brightness across the seams
between photographs against the same inside one photograph's part (1.0: the seams do not show). The copy's
fall-off reaches 0.55 at the corners and its exposures range over a factor of 1.8; its estimated gains and
fall-off are compared with those applied (divided by the clean photographs' own estimate).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import rasterio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

from aeromap_engine import photometry, pipeline  # noqa: E402
from aeromap_engine.log import log  # noqa: E402
from aeromap_engine.project import Project  # noqa: E402
from aeromap_engine.synthetic.seams import falloff_at, seam_figures, spoil  # noqa: E402
from aeromap_engine.stages.odm_orthophoto import NO_SOURCE, sources_path  # noqa: E402

IMAGES = REPO.parent / "shared" / "datasets" / "brighton_beach" / "images"
FALLOFF = (-0.7, 0.1, 0.0)
OPTIONS = [{"name": "skip-3dmodel", "value": True}]


def survey(work: Path, name: str, shrink: int, spoilt: bool, gains: np.ndarray) -> dict:
    """Runs with and without the corrections; their seam figures and times."""
    project = Project(work / name)
    sources = sorted(IMAGES.glob("*.JPG"))
    spoil(sources, project.images_dir, shrink, FALLOFF if spoilt else None, gains if spoilt else None)
    began = time.monotonic()
    pipeline.run(project, OPTIONS)
    seconds = time.monotonic() - began
    off = Project(work / f"{name}-off")
    shutil.copytree(project.root, off.root, symlinks=True)
    pipeline.run(off, OPTIONS + [{"name": "photometric-correction", "value": False},
                                 {"name": "rerun-from", "value": "odm_orthophoto"}])
    with rasterio.open(sources_path(project)) as dataset:
        sources = dataset.read(1)
    return {"project": project, "seconds": seconds, "on": seam_figures(project), "off": seam_figures(off),
            "photographs": len(np.unique(sources[sources != NO_SOURCE]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shrink", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/aeromap-seams"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    log.setLevel("WARNING")
    gains = np.exp(np.random.default_rng(7).uniform(np.log(0.75), np.log(1.35), (18, 1))) * \
        np.random.default_rng(8).uniform(0.97, 1.03, (18, 3))
    results = {name: survey(args.work, name, args.shrink, name == "vignetted", gains)
               for name in ("brighton", "vignetted")}
    print(f"\n{'survey':<12}{'corrections':>12}{'seam step':>11}{'inside':>9}{'ratio':>8}")
    for name, result in results.items():
        for setting in ("on", "off"):
            seam, inside = result[setting]
            print(f"{name:<12}{setting:>12}{seam:>11.3f}{inside:>9.3f}{seam / inside:>8.2f}")
    print("(steps in log brightness, mean over 25 px boxes 16 px either side; ratio 1: no seam shows; "
          f"{results['brighton']['photographs']} photographs in the mosaic)")
    clean = photometry.load(results["brighton"]["project"].photometry_file)
    found = photometry.load(results["vignetted"]["project"].photometry_file)
    names = sorted(found.gains)
    ratio = np.array([np.array(found.gains[n]) / clean.gains[n] for n in names])
    applied = gains / np.exp(np.log(gains).mean(axis=0))
    radii = np.linspace(0, 1, 11)
    camera = found.cameras[names[0]]
    measured = found.vignetting(camera, radii) / clean.vignetting(clean.cameras[names[0]], radii)
    print(f"\nestimated against applied: gains within {np.abs(ratio / applied - 1).max() * 100:.1f} %, fall-off "
          f"within {np.abs(measured / falloff_at(FALLOFF, radii) - 1).max() * 100:.1f} % "
          f"(corner {measured[-1]:.3f}, applied {falloff_at(FALLOFF, radii)[-1]:.3f})")
    print(f"Brighton's own photographs: gains {np.min(list(clean.gains.values())):.2f} to "
          f"{np.max(list(clean.gains.values())):.2f}, corner fall-off "
          f"{float(clean.vignetting(clean.cameras[names[0]], np.array(1.0))):.3f}")


if __name__ == "__main__":
    main()
