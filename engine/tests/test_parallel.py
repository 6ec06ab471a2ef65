"""forked_map: results in order, from other processes, with a job that could not have been pickled, also through
files; the progress of forked workers reported as one."""

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

from aeromap_engine.parallel import forked_map, shared_progress


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
