"""forked_map: results in order, from other processes, with a job that could not have been pickled, also through
files; the progress of forked workers reported as one. ForkedCall: a job's memory stays in its child, its failures
come back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import psutil
import pytest

from aeromap_engine.errors import InputError, ProcessKilled, WorkerKilled
from aeromap_engine.mesh.model import Mesh
from aeromap_engine.mesh.poisson import Octree, reconstruct
from aeromap_engine.parallel import (ForkedCall, RemoteTraceback, forked_map, in_child_process, opencv_threads,
                                     shared_progress)


def test_forked_workers_inherit_the_job_and_return_results_in_order() -> None:
    lock = threading.Lock()  # unpicklable: only a forked worker can have this job

    def job(item: int) -> tuple[int, int]:
        with lock:
            return item * item, os.getpid()

    results = list(forked_map(job, list(range(40)), workers=2, chunk=3))
    assert [square for square, _ in results] == [n * n for n in range(40)]
    assert os.getpid() not in {pid for _, pid in results}


def test_spilled_results_come_back_in_order_and_leave_no_file(tmp_path: Path) -> None:
    def job(item: int) -> tuple[np.ndarray, int]:
        return np.full((64, 64), item, np.uint16), os.getpid()

    results = list(forked_map(job, list(range(25)), workers=2, chunk=4, spill=tmp_path))
    assert [int(array[0, 0]) for array, _ in results] == list(range(25))
    assert all(array.shape == (64, 64) and (array == n).all() for n, (array, _) in enumerate(results))
    assert os.getpid() not in {pid for _, pid in results}
    assert not list(tmp_path.iterdir())


def test_one_worker_or_one_item_runs_here() -> None:
    assert list(forked_map(lambda n: (n, os.getpid()), [1, 2], workers=1)) == [(1, os.getpid()), (2, os.getpid())]
    assert list(forked_map(lambda n: os.getpid(), [7], workers=4)) == [os.getpid()]


def test_workers_use_opencv_after_the_parent_used_its_thread_pool() -> None:
    # A forked child that touches the parent's OpenCV thread pool waits forever: the alarm turns that into a failure.
    def hung(*_: object) -> None:
        raise TimeoutError("a forked worker hung in OpenCV")

    image = np.random.default_rng(1).integers(0, 255, (2000, 2000), dtype=np.uint8)
    cv2.setNumThreads(2)
    cv2.GaussianBlur(image, (31, 31), 0)  # starts the pool's threads here

    def job(size: int) -> tuple[int, int]:
        return int(cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA).sum()), cv2.getNumThreads()

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        results = list(forked_map(job, [500, 700, 900, 1100], workers=2))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert [total for total, _ in results] == [job(size)[0] for size in (500, 700, 900, 1100)]
    assert {threads for _, threads in results} == {1} and cv2.getNumThreads() == 2


def test_a_worker_killed_by_the_kernel_fails_the_step_at_once_naming_memory() -> None:
    # The out-of-memory killer's SIGKILL: multiprocessing's Pool replaced the worker and waited forever for its
    # chunk, holding the node's slot until the task's time ran out.
    def hung(*_: object) -> None:
        raise TimeoutError("the step waited for a killed worker")

    def job(item: int) -> int:
        if item == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.05)
        return item

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    started = time.monotonic()
    try:
        with pytest.raises(WorkerKilled) as failure:
            list(forked_map(job, list(range(12)), workers=2))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 10
    assert "memory" in str(failure.value) and failure.value.exit_code == 137


def test_workers_end_without_a_crash_report_in_the_log() -> None:
    # COLMAP's logging library reports a SIGTERM with a stack trace; the pool ends its workers with one.
    script = ("import pycolmap\nfrom aeromap_engine.parallel import forked_map, shared_progress\n"
              "print(sum(forked_map(abs, list(range(-20, 0)), workers=2)))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "210"
    assert "SIGTERM" not in result.stderr and "Aborted" not in result.stderr


def test_forked_workers_progress_is_reported_as_the_mean_of_their_own() -> None:
    reported: list[float] = []
    with shared_progress(2, reported.append, interval=0.01) as done:
        def job(index: int) -> int:
            for step in range(1, 6):
                done[index] = step / 5
                time.sleep(0.03 * (index + 1))  # the second worker at half the pace of the first
            return os.getpid()

        pids = list(forked_map(job, [0, 1], workers=2))
    assert os.getpid() not in pids
    assert reported == sorted(set(reported)) and reported[-1] == 1.0
    # Seen while the workers ran: the first done and the second not yet.
    assert any(0.5 < fraction < 1.0 for fraction in reported)


def test_a_forked_call_keeps_its_memory_and_hands_back_its_failures(capfd: pytest.CaptureFixture[str]) -> None:
    kept: list[np.ndarray] = []

    def grow() -> None:
        kept.append(np.ones(50 * 2**20, np.uint8))  # touched: 50 MB resident in the child only
        print("from the child")

    before = psutil.Process().memory_info().rss
    ForkedCall(grow, "growing").wait()
    assert not kept and psutil.Process().memory_info().rss - before < 20 * 2**20
    assert "from the child" in capfd.readouterr().out  # what the child wrote reaches the console

    def fail() -> None:
        raise InputError("no overlap between the photographs")

    with pytest.raises(InputError, match="no overlap") as raised:
        ForkedCall(fail, "failing").wait()
    assert isinstance(raised.value.__cause__, RemoteTraceback) and "in fail" in str(raised.value.__cause__)

    lock = threading.Lock()

    class Unpicklable(Exception):
        def __init__(self) -> None:
            super().__init__("held a lock")
            self.lock = lock

    def fail_strangely() -> None:
        raise Unpicklable()

    with pytest.raises(RuntimeError, match="Unpicklable: held a lock"):
        ForkedCall(fail_strangely, "failing").wait()


def test_a_forked_call_killed_by_a_signal_says_so_with_the_shells_exit_code() -> None:
    with pytest.raises(ProcessKilled, match="Stage odm_dem was stopped by signal SIGKILL .*out of memory") as killed:
        ForkedCall(lambda: os.kill(os.getpid(), signal.SIGKILL), "Stage odm_dem").wait()
    assert killed.value.exit_code == 137


def test_a_forked_call_runs_opencv_on_threads_of_its_own_after_the_parent_used_its_pool() -> None:
    # Without the pool stopped before the fork, 2 children in 30 waited forever on the parent's threads.
    image = np.random.default_rng(2).integers(0, 255, (2000, 2000), dtype=np.uint8)
    cv2.setNumThreads(2)
    threads: list[int] = []

    def job() -> None:
        signal.alarm(20)  # a hung child ends on the alarm's signal, which the parent reports
        with opencv_threads(1):  # as the stages do before forking workers of their own
            cv2.GaussianBlur(image, (31, 31), 0)
        cv2.GaussianBlur(image, (31, 31), 0)
        if cv2.getNumThreads() != 2:
            raise AssertionError(f"the child runs OpenCV on {cv2.getNumThreads()} threads")

    for _ in range(30):
        cv2.GaussianBlur(image, (31, 31), 0)  # the parent's pool at work
        ForkedCall(job, "blurring").wait()
        threads.append(cv2.getNumThreads())
    assert threads == [2] * 30


def test_a_function_in_a_child_process_hands_back_its_result() -> None:
    @in_child_process
    def where(scale: float) -> tuple[np.ndarray, int]:
        return np.arange(4) * scale, os.getpid()

    values, pid = where(2.0)
    assert values.tolist() == [0.0, 2.0, 4.0, 6.0] and pid != os.getpid()


def test_meshlab_runs_in_a_stage_after_this_process_ran_it() -> None:
    # MeshLab's Poisson filter starts an OpenMP team, which does not survive a fork: a stage's process forked after
    # this process had run it waited forever in its own.
    xy = np.random.default_rng(3).uniform(0, 10, (4000, 2))
    xyz = np.c_[xy, 0.2 * np.sin(xy[:, 0])]
    normals = np.tile([0.0, 0.0, 1.0], (len(xyz), 1))
    octree = Octree(depth=6, extent=10.0)
    first, _ = reconstruct(xyz, normals, octree, 2)

    def stage() -> Mesh:
        signal.alarm(30)  # a hung filter ends on the alarm's signal, which the parent reports
        return reconstruct(xyz, normals, octree, 2)[0]

    again = ForkedCall(stage, "meshing").wait()
    # The same surface (its threads may number the vertices in another order).
    assert len(first.faces) > 1000 and len(again.faces) == len(first.faces)
    assert np.allclose(np.sort(again.vertices, axis=0), np.sort(first.vertices, axis=0))
