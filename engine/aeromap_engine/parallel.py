"""Work in forked processes: spread over workers, for the steps whose Python and NumPy code holds one core (the
workers inherit the job, a scene, a surface model, a camera model, instead of receiving it pickled with every item;
only the items and the results travel between processes), or done whole in a child process of its own, whose
memory goes back to the system with it.

OpenCV's thread pool does not survive a fork: a child that uses it, or even resizes it, may wait forever on the
parent's threads once the parent has used its pool. So the parent drops to one OpenCV thread,
which stops the pool's threads, before forking; workers run OpenCV in their own thread (the processes are the
parallelism), and a child doing a whole job starts a pool of its own."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Generic, TypeVar

import cv2

from .errors import EngineError, ProcessKilled, WorkerKilled

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
    # A worker ended with SIGTERM (the run stopped) must not print the stack trace that COLMAP's logging library's
    # handler writes into the run's log, as if it had crashed.
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
    # An executor rather than multiprocessing's Pool: a worker the kernel kills (the out-of-memory killer) breaks
    # it at once, where the Pool starts a new worker and waits forever for the lost chunk.
    pool = ProcessPoolExecutor(workers, multiprocessing.get_context("fork"), _default_termination)
    try:
        with opencv_threads(1):
            for result in pool.map(run, items, chunksize=max(1, chunk)):
                yield result if spill is None else _unspilled(result)
    except BrokenProcessPool as exc:
        raise WorkerKilled(getattr(job, "__name__", "a parallel job")) from exc
    finally:
        _JOB = None
        pool.shutdown(wait=True, cancel_futures=True)


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


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a forked child, chained as the cause of the exception raised again
    in the parent, so that a bug's report shows where in the child it happened."""


def _failure_payload(exc: BaseException) -> bytes:
    """The exception and its traceback, pickled; an exception that does not survive pickling travels as a
    RuntimeError that names it."""
    text = "".join(traceback.format_exception(exc))
    try:
        payload = pickle.dumps(("failed", exc, text), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(payload)
        return payload
    except Exception:  # noqa: BLE001 - any exception type may refuse to pickle or unpickle
        return pickle.dumps(("failed", RuntimeError(f"{type(exc).__name__}: {exc}"), text))


class ForkedCall(Generic[Result]):
    """job() in a forked child process, started on creation, its result pickled back: the child inherits
    everything the parent has (the job need not pickle) and, when it ends, hands back to the system all the memory
    it took, which a long-lived process would keep (the C++ libraries' threads allocate in heaps of their own, and
    a heap holding scattered live objects cannot be trimmed). Where the system cannot fork, the job runs in
    wait()."""

    def __init__(self, job: Callable[[], Result], what: str) -> None:
        self._job, self._what = job, what
        self._pid: int | None = None
        self._opencv_threads = cv2.getNumThreads()
        if "fork" not in multiprocessing.get_all_start_methods():
            return
        read, write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        with opencv_threads(1):  # no thread of OpenCV's pool may be running at the fork (module docstring)
            pid = os.fork()
            if pid == 0:
                os.close(read)
                self._run_child(write)
        os.close(write)
        self._pid, self._pipe = pid, os.fdopen(read, "rb")

    def _run_child(self, pipe: int) -> None:
        code = 0
        try:
            # The parent's thread count, for the job: with the pool's threads stopped before the fork, the child
            # starts threads of its own.
            cv2.setNumThreads(self._opencv_threads)
            payload = pickle.dumps(("done", self._job()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            code, payload = 1, _failure_payload(exc)
        try:
            with os.fdopen(pipe, "wb") as out:
                out.write(payload)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)  # no exit handlers: they are the parent's

    def wait(self) -> Result:
        """The job's result once it has ended; raises what it raised, or ProcessKilled."""
        if self._pid is None:
            return self._job()
        try:
            with self._pipe:
                payload = self._pipe.read()  # until the child ends and its end of the pipe closes
            _, status = os.waitpid(self._pid, 0)
        except BaseException:
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            raise
        if os.WIFSIGNALED(status):
            raise ProcessKilled(self._what, os.WTERMSIG(status))
        if not payload:
            raise EngineError(f"{self._what} ended with exit code {os.WEXITSTATUS(status)} and no result")
        outcome = pickle.loads(payload)
        if outcome[0] == "failed":
            raise outcome[1] from RemoteTraceback(outcome[2])
        return outcome[1]


def in_child_process(function: Callable[..., Result]) -> Callable[..., Result]:
    """The function run in a forked child of its own at every call, its result pickled back: for libraries that
    start an OpenMP thread team (MeshLab's filters). GNU OpenMP's team does not survive a fork, and a child that
    uses OpenMP after its parent did may wait forever: no process that forks later (the engine before each stage,
    a stage before its workers, a test process) may have started one."""
    @functools.wraps(function)
    def call(*args: object, **kwargs: object) -> Result:
        return ForkedCall(functools.partial(function, *args, **kwargs), function.__name__).wait()

    return call
