"""Work spread over forked processes, for the steps whose Python and NumPy code holds one core: the workers
inherit the job (a scene, a surface model, a camera model) instead of receiving it pickled with every item; only
the items and the results travel between processes.

OpenCV's thread pool does not survive a fork: a child that uses it, or even resizes it, waits forever on the
parent's threads. So the parent drops to one OpenCV thread before forking, and the children run OpenCV in their
own thread (the processes are the parallelism)."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import pickle
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import cv2

Item = TypeVar("Item")
Result = TypeVar("Result")

_JOB: Callable | None = None  # the job of a forked worker, inherited rather than pickled


@contextlib.contextmanager
def opencv_threads(count: int) -> Iterator[None]:
    previous = cv2.getNumThreads()
    cv2.setNumThreads(count)
    try:
        yield
    finally:
        cv2.setNumThreads(previous)


def _default_termination() -> None:
    # The pool ends its workers with SIGTERM; the handler COLMAP's logging library installs would print a stack
    # trace of each into the run's log, as if it had crashed.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_inherited(item: object) -> object:
    assert _JOB is not None
    return _JOB(item)


def _run_spilled(folder: Path, item: object) -> Path:
    """The inherited job's result for the item, pickled to a new file in `folder`: its path."""
    result = _run_inherited(item)
    handle, name = tempfile.mkstemp(suffix=".pickle", dir=folder)
    with os.fdopen(handle, "wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    return Path(name)


def _unspilled(path: Path) -> object:
    with open(path, "rb") as f:
        result = pickle.load(f)
    path.unlink()
    return result


def forked_map(job: Callable[[Item], Result], items: Sequence[Item], workers: int, chunk: int = 1,
               spill: Path | None = None) -> Iterator[Result]:
    """job(item) for every item, in order, in `workers` forked processes, each taking `chunk` consecutive items
    at a time (neighbouring items often share what a worker has cached). In this process where one worker is
    asked, or where the system cannot fork.

    With `spill`, a folder, each result comes back through a file there rather than through the pipe. A worker
    hands back a chunk's results together, and the chunks done ahead of the one due next wait here: for large
    results (image tiles, point clouds) held in memory that would grow with the chunks, hence with the number of
    items; spilled, one result at a time is in memory."""
    workers = min(workers, len(items))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(job, items)
        return
    global _JOB
    _JOB = job
    run = _run_inherited if spill is None else functools.partial(_run_spilled, spill)
    try:
        with opencv_threads(1), multiprocessing.get_context("fork").Pool(workers, _default_termination) as pool:
            for result in pool.imap(run, items, chunksize=max(1, chunk)):
                yield result if spill is None else _unspilled(result)
    finally:
        _JOB = None


@contextlib.contextmanager
def shared_progress(count: int, report: Callable[[float], None], interval: float = 1.0) -> Iterator[Sequence[float]]:
    """Slots in shared memory, one per item, where forked workers put the fraction of their item done; while
    open, a thread of this process reports the mean of the slots whenever it grew. (Workers that reported on
    their own would move one progress back and forth as they take turns.)"""
    slots = multiprocessing.get_context("fork").Array("d", count)
    stop = threading.Event()
    reported = 0.0

    def report_mean() -> None:
        nonlocal reported
        mean = sum(slots[:]) / max(1, count)
        if mean > reported:
            reported = mean
            report(mean)

    def watch() -> None:
        while not stop.wait(interval):
            report_mean()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield slots
    finally:
        stop.set()
        watcher.join()
        report_mean()
