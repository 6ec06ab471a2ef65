"""Planar reconstruction against incremental on one matched survey, and the orthophotos they lead to.

Usage: engine/.venv/bin/python bench/planar.py PROJECT [--orthophotos PLANAR_PROJECT INCREMENTAL_PROJECT]

PROJECT holds images/ (run the dataset stage first, or any run): its photographs are matched once (the options of
WebODM's "Field" preset: matcher-neighbors 4), then mapped by each algorithm in turn, three times each,
alternating, so that a shared machine's load falls on both; printed: each algorithm's mapping time (median),
images placed, points, reprojection error and cameras' distance from their GPS fixes. With --orthophotos, the
two projects' orthophotos (run with the preset's options) are compared with each other and with the render of
ODM's orthophoto beside the Brighton Beach dataset, by the local shift that survey_cases.py measures.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pycolmap

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aeromap_engine.options import resolve  # noqa: E402
from aeromap_engine.pipeline import StageContext, all_options  # noqa: E402
from aeromap_engine.project import Project  # noqa: E402
from aeromap_engine.sfm.alignment import apply, similarity  # noqa: E402
from aeromap_engine.sfm.mapping import reconstruct  # noqa: E402
from aeromap_engine.sfm.matching import matched  # noqa: E402
from aeromap_engine.sfm.posed import map_posed  # noqa: E402
from aeromap_engine.sfm.survey import read_survey  # noqa: E402
from survey_cases import _read_gray, gray_misfit, orthophoto  # noqa: E402

ODM_RENDER = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "brighton_beach" / "brighton_beach.jpg"
ROUNDS = 3


def map_once(algorithm: str, database: Path, work: Path, settings, survey, images: Path
             ) -> tuple[float, pycolmap.Reconstruction]:
    began = time.monotonic()
    if algorithm == "incremental":
        model = reconstruct(database, images, work, replace(settings, algorithm=algorithm), lambda: None)[0][0]
    else:
        model = map_posed(database, work, replace(settings, algorithm=algorithm), survey.photos, survey.priors)
    return time.monotonic() - began, model


def describe(model: pycolmap.Reconstruction, survey) -> str:
    """Placed images, points, error, and the cameras' distance from their fixes after one similarity (the
    incremental model is in its own frame)."""
    names = [model.image(i).name for i in model.reg_image_ids()]
    centres = np.array([model.find_image_with_name(n).projection_center() for n in names])
    fixes = np.array([survey.priors[n].position for n in names])
    offsets = np.linalg.norm(apply(similarity(centres, fixes), centres) - fixes, axis=1)
    error = model.compute_mean_reprojection_error()
    return (f"{model.num_reg_images()} images, {model.num_points3D()} points, {error:.2f} px, cameras "
            f"{np.mean(offsets):.2f} m (mean) from their GPS after one similarity")


def compare_mapping(root: Path) -> None:
    options, _ = resolve(all_options(), [{"name": "matcher-neighbors", "value": 4}])
    ctx = StageContext(Project(root), options, "opensfm", 0.0, 1.0, lambda stage, fraction: None)
    survey = read_survey(ctx)
    with matched(ctx, survey, {}) as matching:
        times: dict[str, list[float]] = {"incremental": [], "planar": []}
        for round_ in range(ROUNDS):
            for algorithm in times:
                seconds, model = map_once(algorithm, matching.database, matching.scratch / f"{algorithm}{round_}",
                                          matching.settings, survey, ctx.project.images_dir)
                times[algorithm].append(seconds)
        for algorithm, seconds in times.items():
            _, model = map_once(algorithm, matching.database, matching.scratch / f"{algorithm}-last",
                                matching.settings, survey, ctx.project.images_dir)
            print(f"- {algorithm}: mapping {np.median(seconds):.2f} s (median of {ROUNDS}: "
                  f"{', '.join(f'{s:.2f}' for s in seconds)}); {describe(model, survey)}")


def read_render(path: Path, near: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A render that is not georeferenced, as _read_gray reads an orthophoto, its pixels laid north up at the
    `near` orthophoto's pixel size from that one's corner: the comparison's similarity finds the true placement,
    and works in float32 about one origin, so both must lie near one another."""
    pixels = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
    gray = cv2.cvtColor(pixels, cv2.COLOR_RGB2GRAY)
    to_world = np.diag([near[0, 0], near[1, 1], 1.0])
    to_world[:2, 2] = near[:2, 2]
    return gray, pixels.min(axis=2) < 250, to_world


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--orthophotos", nargs=2, type=Path)
    args = parser.parse_args()
    compare_mapping(args.project)
    if args.orthophotos:
        planar, incremental = (_read_gray(orthophoto(p)) for p in args.orthophotos)
        print(f"- planar against incremental: {gray_misfit(incremental, planar)}")
        for name, ours in (("planar", planar), ("incremental", incremental)):
            print(f"- {name} against ODM's render: {gray_misfit(ours, read_render(ODM_RENDER, ours[2]))}")


if __name__ == "__main__":
    main()
