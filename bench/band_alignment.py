"""Benchmark: how well and how fast the bands are aligned to the primary one, from the images alone and from the
lenses their metadata state. The synthetic multispectral survey (synthetic/multispectral.py: a rig of four band
cameras whose lenses, centres and turns are known, written in DJI's XMP) goes through the dataset stage; each band
is then aligned both ways and compared with where the rig's cameras truly see the primary's pixels at the flying
height. Prints per band the worst and median distance to the truth (px) and each way's time.

    engine/.venv/bin/python bench/band_alignment.py [--work /tmp/aeromap-band-alignment]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

from aeromap_engine import pipeline  # noqa: E402
from aeromap_engine.bands.alignment import sampling_map  # noqa: E402
from aeromap_engine.bands.stack import BandStack  # noqa: E402
from aeromap_engine.project import Project  # noqa: E402
from aeromap_engine.synthetic.multispectral import (BANDS, MultispectralSpec, band_pixels,  # noqa: E402
                                                    generate_multispectral)

STEP = 4  # px between the primary pixels compared with the truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/aeromap-band-alignment"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    spec = MultispectralSpec()
    generate_multispectral(args.work, spec, workers=2)
    project = Project(args.work)
    pipeline.run(project, [{"name": "end-with", "value": "dataset"}])
    document = json.loads(project.bands_file.read_text())
    lens = spec.survey.lens.lens()
    shape = (lens.height, lens.width)
    y, x = np.mgrid[0:shape[0]:STEP, 0:shape[1]:STEP]
    pixels = np.stack([x.ravel(), y.ravel()], axis=1).astype(np.float64)
    for way in ("images alone", "stated lenses"):
        stack = BandStack.load(project.band_files_dir(document), document, "camera")
        if way == "images alone":
            stack.lenses = {}
        start = time.monotonic()
        found = stack.align()
        seconds = time.monotonic() - start
        for band in BANDS[1:]:
            alignment = found[band]
            truth = band_pixels(band, pixels, spec.height_m, lens)
            map_x, map_y = sampling_map(alignment.homography, alignment.lens, shape)
            errors = np.hypot(map_x[::STEP, ::STEP].ravel() - truth[:, 0], map_y[::STEP, ::STEP].ravel() - truth[:, 1])
            print(f"{way:>13} {band:>8}: worst {errors.max():.3f} px, median {np.median(errors):.3f} px "
                  f"(gradient correlation {alignment.correlation:.2f})")
        print(f"{way:>13}: aligned in {seconds:.1f} s")


if __name__ == "__main__":
    main()
