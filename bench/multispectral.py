"""Benchmark: what the bands cost. The synthetic multispectral survey (synthetic/multispectral.py: four bands of
800 x 600 px) is processed to the orthophoto twice: with its four bands (camera+sun calibration and alignment),
and as its primary band alone (the green files, an ordinary single-band survey). Prints each run's stage times,
the orthophoto stage's share, and what the bands add to the whole run. `--high-sun`: under a sun 84 degrees high
with a hotspot rendered, whose amplitude every band then has solved and divided out.

    engine/.venv/bin/python bench/multispectral.py [--work /tmp/aeromap-multispectral] [--high-sun]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

from aeromap_engine import pipeline  # noqa: E402
from aeromap_engine.project import Project  # noqa: E402
from aeromap_engine.synthetic.multispectral import MultispectralSpec, generate_multispectral  # noqa: E402

OPTIONS = [{"name": "fast-orthophoto", "value": True}, {"name": "skip-report", "value": True},
           {"name": "min-num-features", "value": 4000}]


def timed_run(root: Path, options: list[dict]) -> tuple[float, dict[str, float]]:
    """The run's wall time and each stage's seconds."""
    start = time.monotonic()
    project = Project(root)
    pipeline.run(project, options)
    return time.monotonic() - start, {name: record["seconds"] for name, record in project.stage_records().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/aeromap-multispectral"))
    parser.add_argument("--high-sun", action="store_true")
    args = parser.parse_args()
    spec = MultispectralSpec()
    if args.high_sun:
        spec = replace(spec, survey=replace(spec.survey, sun_elevation_deg=84.0, hotspot_amplitude=0.25,
                                            hotspot_width_deg=6.0))
    shutil.rmtree(args.work, ignore_errors=True)
    bands_root, primary_root = args.work / "bands", args.work / "primary"
    start = time.monotonic()
    truth = generate_multispectral(bands_root, spec, workers=2)
    print(f"survey: {truth.captures} captures of 4 bands rendered in {time.monotonic() - start:.0f} s")
    (primary_root / "images").mkdir(parents=True)
    for path in sorted(truth.images_dir.glob("*_MS_G.TIF")):
        shutil.copy(path, primary_root / "images" / path.name)
    results = {"primary band alone": timed_run(primary_root, OPTIONS),
               "four bands, camera+sun": timed_run(bands_root, OPTIONS + [
                   {"name": "radiometric-calibration", "value": "camera+sun"}])}
    for name, (seconds, stages) in results.items():
        ortho = stages.get("odm_orthophoto")
        print(f"{name:24s} {seconds:6.1f} s" + (f"  (orthophoto stage {ortho:.1f} s)" if ortho else ""))
    base, bands = results["primary band alone"][0], results["four bands, camera+sun"][0]
    print(f"the bands add {100 * (bands / base - 1):.0f} % to the run")


if __name__ == "__main__":
    main()
