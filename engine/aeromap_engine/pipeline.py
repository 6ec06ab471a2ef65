"""Runs the stages in order: resumes after the last finished stage, honours rerun-from and end-with, re-runs
from the earliest stage a changed option affects, and records each stage's time and peak memory. Each stage runs
in a child process of its own, so that no stage's memory outlives it."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from .atomic_files import read_json, write_json
from .errors import OptionsError
from .log import emit_progress, log
from .options import Option, Options, default_concurrency, resolve
from .parallel import ForkedCall
from .project import STAGE_NAMES, Project
from .resources import held_bytes
from .stages import implemented_stages, split

PIPELINE_OPTIONS = [
    Option("rerun-from", "enum", "", "Re-run the pipeline from this stage onward.", "dataset",
           choices=("",) + STAGE_NAMES),
    Option("end-with", "enum", "odm_postprocess", "Stop the pipeline after this stage.", "dataset",
           choices=STAGE_NAMES),
    Option("rerun-all", "bool", False, "Discard every earlier result and run the whole pipeline again.",
           "dataset"),
    Option("max-concurrency", "int", default_concurrency(),
           "The maximum number of threads the engine uses at once. More threads use more memory.",
           "dataset", minimum=1),
]


@dataclass
class StageContext:
    project: Project
    options: Options
    stage: str
    _start: float
    _span: float
    _emit: Callable[[str, float], None] = emit_progress

    def progress(self, fraction: float) -> None:
        """Report how far this stage has come (0..1)."""
        self._emit(self.stage, self._start + self._span * max(0.0, min(1.0, fraction)))

    def part(self, begin: float, end: float) -> "StageContext":
        """A context whose progress 0..1 covers [begin, end] of this one's: for a step run several times."""
        return replace(self, _start=self._start + self._span * begin, _span=self._span * (end - begin))

    def reporting_to(self, sink: Callable[[float], None]) -> "StageContext":
        """A context that hands its progress (0..1) to `sink` instead of printing it: for a step in a forked
        process, whose parent reports the progress of all its workers as one."""
        return replace(self, _start=0.0, _span=1.0, _emit=lambda _stage, fraction: sink(fraction))


def all_options() -> list[Option]:
    specs = list(PIPELINE_OPTIONS)
    for module in implemented_stages().values():
        specs.extend(getattr(module, "OPTIONS", []))
    return specs


class PeakMemory:
    """Samples the memory this process and its children hold (resources.held_bytes) while a stage runs."""

    def __init__(self, interval: float = 0.2) -> None:
        self._interval = interval
        self._stop = threading.Event()
        self.peak_bytes = 0
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._measure()

    def _measure(self) -> None:
        self.peak_bytes = max(self.peak_bytes, held_bytes())

    def _sample(self) -> None:
        while not self._stop.wait(self._interval):
            self._measure()


# Options that change no product, so that a run with another value has nothing to re-run for. optimize-disk-space
# among them: once it deleted the dense cloud, a re-run without it could not make the filtered cloud again.
UNCHANGING_OPTIONS = ("rerun-from", "end-with", "rerun-all", "max-concurrency", "optimize-disk-space")


def _first_stage_to_run(project: Project, options: Options, previous: dict[str, Any] | None,
                        specs: list[Option]) -> str | None:
    """The stage to re-run from, or None when every stage up to the end has already finished."""
    if options.rerun_all:
        return STAGE_NAMES[0]
    candidates: list[str] = []
    if previous is not None:
        changed = [s for s in specs if s.name not in UNCHANGING_OPTIONS
                   and previous.get(s.name, s.default) != options.values[s.name]]
        if changed:
            first = min(changed, key=lambda s: STAGE_NAMES.index(s.stage))
            log.info("Option %s changed since the last run: re-running from %s", first.name, first.stage)
            candidates.append(first.stage)
    if options.rerun_from:
        # A later stage than a changed option's would run on outputs made without it (or missing).
        return min([options.rerun_from, *candidates], key=STAGE_NAMES.index)
    for name in STAGE_NAMES:
        if not split.handled_by_submodels(project, name) and not project.stage_marker(name).exists():
            candidates.append(name)
            break
    return min(candidates, key=STAGE_NAMES.index) if candidates else None


def _weights(stages: dict[str, ModuleType], splitting: bool) -> dict[str, tuple[float, float]]:
    """Each stage's start and span on the 0..100 progress scale of a whole run (a split survey's split stage
    does the work of the stages its submodels run)."""
    weights = {name: getattr(m, "WEIGHT", 1.0) for name, m in stages.items()}
    if splitting:
        weights["split"] += sum(weights.pop(name) for name in split.SUBMODEL_STAGES)
    total = sum(weights.values()) or 1.0
    spans, start = {}, 0.0
    for name, weight in weights.items():
        span = 100.0 * weight / total
        spans[name] = (start, span)
        start += span
    return spans


def _image_count(project: Project) -> int:
    kept = read_json(project.images_json)
    return len(kept) if kept is not None else len(project.image_files())


def run(project: Project, option_pairs: list[dict[str, Any]]) -> None:
    specs = all_options()
    options, dropped = resolve(specs, option_pairs)
    for name in dropped:
        log.warning("Ignoring unknown option %s", name)
    if not project.root.is_dir():
        raise OptionsError(f"Project folder {project.root} does not exist")

    stages = implemented_stages()
    previous = read_json(project.state_dir / "options.json")
    start = _first_stage_to_run(project, options, previous, specs)
    end = options.end_with
    last = STAGE_NAMES.index(end)
    if options.rerun_from and STAGE_NAMES.index(options.rerun_from) > last:
        raise OptionsError(f"rerun-from {options.rerun_from} comes after end-with {end}")
    if start is not None:
        for name in STAGE_NAMES[STAGE_NAMES.index(start):]:
            project.stage_marker(name).unlink(missing_ok=True)

    for name in STAGE_NAMES[: last + 1]:
        module = stages[name]
        if split.handled_by_submodels(project, name):
            log.info("Stage %s: done by the submodels", name)
            continue
        if project.stage_marker(name).exists():
            log.info("Stage %s already done, skipping", name)
            continue
        # Whether the survey splits is known once the dataset stage has kept its images.
        spans = _weights(stages, split.splits(options, _image_count(project)))
        _run_stage(project, options, name, module, spans[name])

    emit_progress(end, 100.0)
    write_json(project.state_dir / "options.json", {s.name: options.values[s.name] for s in specs})
    _write_stage_stats(project)


def _run_stage(project: Project, options: Options, name: str, module: ModuleType,
               span: tuple[float, float]) -> None:
    log.info("Running stage %s", name)
    ctx = StageContext(project, options, name, span[0], span[1])
    ctx.progress(0.0)
    began = time.monotonic()
    # Each stage runs in a child process of its own: what it allocated goes back to the system when it ends,
    # instead of staying in this process's heaps (after structure from motion on a large survey, memory this process
    # could not hand back, of which every later stage's forked workers would count their share).
    stage = ForkedCall(functools.partial(module.run, ctx), f"Stage {name}")
    with PeakMemory() as memory:
        stage.wait()
    seconds = time.monotonic() - began
    ctx.progress(1.0)
    project.mark_done(name, round(seconds, 3), round(memory.peak_bytes / 2**20, 1))
    log.info("Finished stage %s in %.1f s (peak memory %.0f MB)", name, seconds, memory.peak_bytes / 2**20)


def _write_stage_stats(project: Project) -> None:
    project.update_stats("stages", project.stage_records())
