"""Work spread over forked processes, for the steps whose Python and NumPy code holds one core: the workers
inherit the job (a scene, a surface model, a camera model) instead of receiving it pickled with every item; only
the items and the results travel between processes.

OpenCV's thread pool does not survive a fork: a child that uses it, or even resizes it, waits forever on the
parent's threads. So the parent drops to one OpenCV thread before forking, and the children run OpenCV in their
own thread (the processes are the parallelism)."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
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


def forked_map(job: Callable[[Item], Result], items: Sequence[Item], workers: int,
               chunk: int = 1) -> Iterator[Result]:
    """job(item) for every item, in order, in `workers` forked processes, each taking `chunk` consecutive items
    at a time (neighbouring items often share what a worker has cached). In this process where one worker is
    asked, or where the system cannot fork."""
    workers = min(workers, len(items))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(job, items)
        return
    global _JOB
    _JOB = job
    try:
        with opencv_threads(1), multiprocessing.get_context("fork").Pool(workers, _default_termination) as pool:
            yield from pool.imap(_run_inherited, items, chunksize=max(1, chunk))
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
