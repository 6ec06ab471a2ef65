"""Split: a survey of more photographs than `split` is cut into overlapping submodels (split/plan.py), each
reconstructed on its own and processed into its products, here or on other processing nodes (sm-cluster); the
merge stage then joins those into the survey's products.

Features and matches are found once for the whole survey (that work grows with the photographs, not faster); the
mapper, whose adjustments grow faster, runs per submodel. Every submodel is georeferenced by its own GPS, then
moved onto the largest by the views they share (split/align.py), so that their products meet without a step. Each
submodel is written as a project of its own under submodels/ (ODM's layout), its structure from motion done, and
the later stages run there without the textured model, which the merge does not join (as in ODM). The survey's
own opensfm/ holds the joined cameras, for the report and the camera positions.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pycolmap

from ..atomic_files import read_json, write_json
from ..errors import InputError
from ..log import log
from ..options import Option, Options
from ..parallel import forked_map, shared_progress
from ..quality import Check
from ..resources import workers_within_memory
from ..sfm.blocks import mapping_bytes
from ..sfm.database import keypoint_counts
from ..sfm.groups import joined
from ..sfm.matching import Matching, matched
from ..sfm.record import finish, record_model
from ..sfm.solve import solve
from ..sfm.survey import Survey, read_survey
from ..split.align import align_submodels
from ..split.plan import Submodel, plan_groups, plan_submodels, read_groups, submodel_count
from ..split.runner import SubmodelRun, node_urls, run_locally, run_on_nodes

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("split", "int", 999999,
           "Average number of images in each submodel. A survey of more images is cut into submodels of about "
           "this many (none owning more than 1.25 times as many), each reconstructed and processed on its own, "
           "then aligned and merged into one set of products (see sm-cluster and merge).", "split", minimum=2),
    Option("split-overlap", "float", 150.0,
           "Radius of the overlap between submodels in metres: images this close to one of a submodel's own are "
           "added to it. Submodels are aligned on the images they share.", "split", minimum=0),
    Option("sm-cluster", "string", "",
           "URL of a processing node (NodeODM protocol, for example http://host:3000?token=...) or of a "
           "ClusterODM that processes the submodels; several nodes comma-separated: each submodel goes to a "
           "node its photographs fit with the least queued, and runs again on another where a node fails it or "
           "is lost (up to three nodes). Empty: this node processes them one after another.", "split"),
    Option("sm-no-align", "bool", False,
           "Leave each submodel where its own photographs' GPS put it instead of aligning it to its neighbours on "
           "the photographs they share: faster, for surveys whose GPS is precise (RTK), but where it is not the "
           "products step at the cutlines by the GPS's error.", "split"),
    Option("split-image-groups", "string", "",
           "An image groups file (uploaded with the images, for example image_groups.txt) that makes the "
           "submodels: one line per image, its file name and its group's name. Each group is a submodel, grown "
           "by the images within split-overlap metres of it, instead of clusters of split images.", "split"),
]
WEIGHT = 0.1  # when it splits, the pipeline gives it the weights of the stages the submodels run

# The stages each submodel runs (its structure from motion here, the rest where it is processed) and the
# survey's own project therefore skips.
SUBMODEL_STAGES = ("opensfm", "openmvs", "odm_filterpoints", "odm_meshing", "mvs_texturing", "odm_georeferencing",
                   "odm_dem", "odm_orthophoto")
DONE_HERE = ("dataset", "split", "merge", "opensfm")  # a submodel's stages done before it is handed out
# Options that concern the survey as a whole, not a submodel's run of the later stages.
SURVEY_OPTIONS = {"split", "split-overlap", "sm-cluster", "merge", "merge-skip-blending", "rerun-from", "rerun-all",
                  "end-with"}
# What every submodel runs with: the merge joins its LAZ cloud, DEMs and orthophoto (read window by window, so
# plain tiled GeoTIFFs), and writes the survey's COPC, LAS, CSV, PNG, KMZ, cutline and overviews itself as the
# survey asks; the textured model it does not join (as in ODM).
SUBMODEL_SETTINGS: dict[str, Any] = {
    "skip-3dmodel": True, "pc-copc": False, "pc-las": False, "pc-csv": False, "orthophoto-png": False,
    "orthophoto-kmz": False, "orthophoto-cutline": False, "cog": False, "build-overviews": False,
    "end-with": "odm_orthophoto",
}
SFM_SHARE = 0.35  # of the stage's progress: structure from motion; the submodels' runs take the rest


@dataclass
class SubmodelModel:
    submodel: Submodel
    survey: Survey
    model: pycolmap.Reconstruction
    algorithm: str
    figures: dict[str, Any]


def splits(options: Options, images: int) -> bool:
    return submodel_count(images, options.split) > 1


def handled_by_submodels(project: "Project", stage: str) -> bool:
    return stage in SUBMODEL_STAGES and project.submodel_plan.exists()


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    entries = read_json(project.images_json, [])
    if project.submodels_dir.exists():
        shutil.rmtree(project.submodels_dir)  # an earlier run's submodels; the options may have changed since
    groups = image_groups(project, options.split_image_groups, [e["filename"] for e in entries]) \
        if options.split_image_groups else None
    if groups is None and not splits(options, len(entries)):
        return
    urls = node_urls(options.sm_cluster)  # a URL that cannot be used fails the run now, not after the SfM
    survey = read_survey(ctx)
    missing = [p.filename for p, xy in zip(survey.photos, survey.positions) if not np.isfinite(xy[:2]).all()]
    if missing:
        raise InputError(f"split needs a GPS position for every image to cut the survey by place; "
                         f"{len(missing)} have none ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
    names = [p.filename for p in survey.photos]
    if groups is not None:
        plan = plan_groups(names, survey.positions[:, :2], groups, options.split_overlap)
        log.info("Submodels from the image groups of %s: %d groups", options.split_image_groups, len(plan))
    else:
        plan = plan_submodels(names, survey.positions[:, :2], options.split, options.split_overlap)
    if len(plan) == 1:
        return
    for sub in plan:
        log.info("%s: %d images (%d its own)", sub.name, len(sub.images), len(sub.core))
    timings: dict[str, float] = {}
    sfm = ctx.part(0.0, SFM_SHARE)
    with matched(sfm.part(0.0, 0.6), survey, timings) as matching:
        parts = map_submodels(sfm.part(0.6, 1.0), matching, survey, plan, timings)
    if options.sm_no_align:
        log.info("Submodels left where their own GPS placed them (sm-no-align)")
    else:
        align(parts)
    for part in parts:
        write_submodel(ctx, part, matching.camera_kinds, timings)
    write_survey_model(ctx, survey, parts, matching.camera_kinds, timings)
    write_plan(project, parts)
    process_submodels(ctx, parts, urls)


def image_groups(project: "Project", name: str, images: list[str]) -> dict[str, str]:
    """Each image's group from the image groups file the split-image-groups option names (split/plan.py
    read_groups); InputError where the file is missing or malformed, or leaves an image without a group."""
    path = project.uploaded_file(name)
    if path is None:
        raise InputError(f"split-image-groups: no uploaded file named {name!r} (give the file name of an image "
                         f"groups file uploaded with the images, such as image_groups.txt)")
    try:
        groups = read_groups(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError as malformed:
        raise InputError(f"split-image-groups: {name}: {malformed}") from None
    ungrouped = [image for image in images if image not in groups]
    if ungrouped:
        raise InputError(f"split-image-groups: {name} gives no group for {len(ungrouped)} of {len(images)} images "
                         f"({', '.join(ungrouped[:5])}{', ...' if len(ungrouped) > 5 else ''})")
    unknown = sorted(set(groups) - set(images))
    if unknown:
        log.warning("split-image-groups: %s names %d files that are not among the images, ignored: %s", name,
                    len(unknown), ", ".join(unknown[:5]))
    return {image: groups[image] for image in images}


def align(parts: list[SubmodelModel]) -> None:
    """Each submodel moved onto its neighbours by the views they share (split/align.py)."""
    try:
        joins = align_submodels([p.model for p in parts], [p.submodel.name for p in parts])
    except InputError as refused:
        raise InputError(f"The submodels cannot be aligned: {refused}. Raise split-overlap (or split)") from None
    for j in joins:
        log.info("Aligned %s to %s on %d shared images: camera centres agree within %.3f m (RMS; at most %.3f m)",
                 parts[j.source].submodel.name, parts[j.target].submodel.name, j.shared, j.residual_m, j.bound_m)


@dataclass(frozen=True)
class Mapped:
    """What a forked mapping hands back: where it wrote its model, and how it went."""
    folder: Path
    algorithm: str
    figures: dict[str, Any]
    timings: dict[str, float]


@dataclass(frozen=True)
class MappingJob:
    """The mapping of one submodel, run in a forked process beside the others' (the mapper keeps about one core
    busy, and two halves of a survey map in less than the whole: its global adjustments grow faster than the
    images). The model comes back through a file, as pycolmap's models do not pickle, and the progress through
    shared memory."""
    ctx: "StageContext"
    matching: Matching
    survey: Survey
    plan: list[Submodel]
    threads: int
    done: Sequence[float]  # each submodel's fraction mapped (parallel.shared_progress)

    def __call__(self, index: int) -> Mapped:
        sub = self.plan[index]
        work_dir = self.matching.scratch / sub.name
        work_dir.mkdir(parents=True, exist_ok=True)
        # A database of its own: COLMAP opens one for writing, and two mappers opening the same at once fail
        # with "No registered database factory succeeded" (seen on the tests' two small submodels).
        database = shutil.copyfile(self.matching.database, work_dir / "database.db")
        settings = replace(self.matching.settings, images=sub.images, threads=self.threads)
        log.info("%s: mapping %d images", sub.name, len(sub.images))
        ctx = self.ctx.reporting_to(lambda fraction: self.done.__setitem__(index, fraction))
        timings: dict[str, float] = {}
        model, algorithm, figures = solve(ctx, database, work_dir, settings, self.survey.subset(set(sub.images)),
                                          timings, self.matching.ties)
        folder = work_dir / "mapped"
        folder.mkdir()
        model.write(folder)
        return Mapped(folder, algorithm, figures, timings)


def map_submodels(ctx: "StageContext", matching: Matching, survey: Survey, plan: list[Submodel],
                  timings: dict[str, float]) -> list[SubmodelModel]:
    """Every submodel mapped, as many at once as the run's threads and memory allow. A step's time is the
    slowest submodel's where they ran side by side, their sum where one after another."""
    threads = matching.settings.threads
    keypoints = keypoint_counts(matching.database)
    heaviest = max(mapping_bytes(keypoints[name] for name in sub.images) for sub in plan)
    workers = min(len(plan), workers_within_memory(threads, heaviest))
    if workers > 1:
        log.info("Mapping %d submodels, %d at a time", len(plan), workers)
    with shared_progress(len(plan), ctx.progress) as done:
        job = MappingJob(ctx, matching, survey, plan, max(1, threads // workers), done)
        mapped = list(forked_map(job, range(len(plan)), workers))
    for step in {name for m in mapped for name in m.timings}:
        seconds = [m.timings.get(step, 0.0) for m in mapped]
        timings[step] = timings.get(step, 0.0) + (max(seconds) if workers > 1 else sum(seconds))
    return [SubmodelModel(sub, survey.subset(set(sub.images)), pycolmap.Reconstruction(m.folder), m.algorithm,
                          m.figures) for sub, m in zip(plan, mapped)]


def write_submodel(ctx: "StageContext", part: SubmodelModel, camera_kinds: dict, timings: dict[str, float]) -> None:
    """The submodel's project: links to its photographs, their metadata, its structure from motion, and the
    markers of the stages done, so that a run of it starts at openmvs."""
    project = ctx.project.submodel(part.submodel.name)
    project.images_dir.mkdir(parents=True)
    for name in part.submodel.images:
        os.symlink(ctx.project.images_dir.joinpath(name).resolve(), project.images_dir / name)
    names = set(part.submodel.images)
    write_json(project.images_json, [e for e in read_json(ctx.project.images_json) if e["filename"] in names])
    if ctx.project.radiometry_file.exists():
        project.state_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ctx.project.radiometry_file, project.radiometry_file)
    finish(ctx, project, part.survey, part.model, camera_kinds, part.algorithm, dict(part.figures), dict(timings))
    for stage in DONE_HERE:
        project.mark_done(stage)


def write_survey_model(ctx: "StageContext", survey: Survey, parts: list[SubmodelModel],
                       camera_kinds: dict, timings: dict[str, float]) -> None:
    """The joined cameras and points in the survey's own opensfm/ (each image and point once), for the report."""
    model = joined([part.model for part in parts])
    figures = dict(parts[0].figures)
    figures["left_out"] = {k: v for p in parts for k, v in p.figures["left_out"].items()}
    figures["gps_checks"] = failing_first([part.figures["gps_checks"] for part in parts])
    record_model(ctx.project, survey, model, camera_kinds, parts[0].algorithm, figures, timings)


def failing_first(checks: list[list[Check]]) -> list[Check]:
    """One of each check that the submodels made: a failed one where any failed, since what fails in one
    submodel holds for the survey's products."""
    chosen: dict[str, Check] = {}
    for check in (c for part in checks for c in part):
        if check.name not in chosen or (chosen[check.name].passed and not check.passed):
            chosen[check.name] = check
    return list(chosen.values())


def write_plan(project: "Project", parts: list[SubmodelModel]) -> None:
    """The submodels and where each one's own cameras are (in the CRS): the merge cuts between them there."""
    georef = read_json(project.path("opensfm", "georef.json"))
    offset = np.array([*georef["offset"], 0.0])
    submodels = []
    for part in parts:
        located = [part.model.find_image_with_name(n) for n in part.submodel.core]
        centres = [(image.projection_center() + offset)[:2].tolist() for image in located
                   if image is not None and image.has_pose]
        submodels.append({**part.submodel.to_json(), "core_cameras": centres})
    write_json(project.submodel_plan, {"submodels": submodels})


def submodel_options(options: Options) -> list[dict[str, Any]]:
    """The options the submodels run with: the survey's as given, but those of the survey as a whole, up to the
    orthophoto, and none of the products that the merge does not read."""
    pairs = [{"name": n, "value": options.values[n]} for n in sorted(options.given)
             if n not in SURVEY_OPTIONS and n not in SUBMODEL_SETTINGS]
    return pairs + [{"name": n, "value": v} for n, v in SUBMODEL_SETTINGS.items()]


def process_submodels(ctx: "StageContext", parts: list[SubmodelModel], urls: list[str]) -> None:
    project = ctx.project
    runs = [SubmodelRun(p.submodel.name, project.submodel(p.submodel.name),
                        [project.images_dir / n for n in p.submodel.images]) for p in parts]
    done = {run.name: 0.0 for run in runs}

    def on_progress(name: str, fraction: float) -> None:
        done[name] = max(done[name], fraction)  # a status that arrives late never moves progress back
        ctx.progress(SFM_SHARE + (1 - SFM_SHARE) * sum(done.values()) / len(done))

    options = submodel_options(ctx.options)
    if urls:
        log.info("Processing %d submodels on %s", len(runs), ", ".join(urls))
        run_on_nodes(runs, options, urls, on_progress)
    else:
        log.info("Processing %d submodels here, one after another", len(runs))
        run_locally(runs, options, on_progress)
