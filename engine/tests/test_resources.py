"""CPU and memory limits read from a container's cgroup files (written here into a fake cgroup tree)."""

import multiprocessing
from pathlib import Path

import numpy as np
import psutil

from aeromap_engine.resources import available_memory, cpu_limit, held_bytes, workers_within_memory


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_cgroup_v2_cpu_quota_caps_the_count(tmp_path: Path) -> None:
    write(tmp_path, "cpu.max", "150000 100000")
    assert cpu_limit(tmp_path) == min(2, cpu_limit(tmp_path / "none"))


def test_no_quota_leaves_the_affinity_count(tmp_path: Path) -> None:
    write(tmp_path, "cpu.max", "max 100000")
    assert cpu_limit(tmp_path) == cpu_limit(tmp_path / "none") >= 1


def test_cgroup_v1_quota(tmp_path: Path) -> None:
    write(tmp_path, "cpu/cpu.cfs_quota_us", "50000")
    write(tmp_path, "cpu/cpu.cfs_period_us", "100000")
    assert cpu_limit(tmp_path) == 1
    write(tmp_path, "cpu/cpu.cfs_quota_us", "-1")
    assert cpu_limit(tmp_path) == cpu_limit(tmp_path / "none")


def test_memory_limit_counts_reclaimable_cache(tmp_path: Path) -> None:
    gib = 2**30
    write(tmp_path, "memory.max", str(2 * gib))
    write(tmp_path, "memory.current", str(int(1.5 * gib)))
    write(tmp_path, "memory.stat", f"anon 100\ninactive_file {gib // 4}\nactive_file 7")
    assert available_memory(tmp_path) == min(psutil.virtual_memory().available, int(0.75 * gib))


def test_memory_without_limit_is_the_machines(tmp_path: Path) -> None:
    machine = psutil.virtual_memory().available
    write(tmp_path / "v2", "memory.max", "max")
    write(tmp_path / "v2", "memory.current", "12345")
    write(tmp_path / "v1", "memory/memory.limit_in_bytes", str(2**63 - 4096))  # v1's "no limit"
    write(tmp_path / "v1", "memory/memory.usage_in_bytes", "12345")
    for root in (tmp_path / "v2", tmp_path / "v1", tmp_path / "none"):
        assert abs(available_memory(root) - machine) < machine * 0.05


def test_cgroup_v1_memory_limit(tmp_path: Path) -> None:
    write(tmp_path, "memory/memory.limit_in_bytes", str(2**30))
    write(tmp_path, "memory/memory.usage_in_bytes", str(2**29))
    write(tmp_path, "memory/memory.stat", "cache 99\ntotal_inactive_file 4096")
    assert available_memory(tmp_path) == min(psutil.virtual_memory().available, 2**29 + 4096)


def test_a_processing_nodes_memory_limit_is_the_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AEROMAP_MEMORY_LIMIT", str(held_bytes() + 500 * 2**20))
    room = available_memory(tmp_path / "none")
    assert 400 * 2**20 < room < 600 * 2**20  # the limit less what this process holds
    monkeypatch.setenv("AEROMAP_MEMORY_LIMIT", "")
    assert available_memory(tmp_path / "none") > room


def test_workers_are_as_many_as_the_memory_holds(monkeypatch) -> None:
    monkeypatch.setenv("AEROMAP_MEMORY_LIMIT", str(held_bytes() + 1000 * 2**20))  # about 1000 MB to spare
    mib = 2**20
    assert workers_within_memory(8, 300 * mib) == 3
    assert workers_within_memory(8, 300 * mib, share=0.5) == 1
    assert workers_within_memory(2, 100 * mib) == 2  # never more than asked
    assert workers_within_memory(4, 5000 * mib) == 1  # one, however little room


def test_pages_a_forked_worker_shares_with_its_parent_are_counted_once() -> None:
    data = np.ones(300 * 2**20 // 8)  # 300 MB written
    alone = held_bytes()
    fork = multiprocessing.get_context("fork")
    ready, done = fork.Event(), fork.Event()
    worker = fork.Process(target=lambda: (ready.set(), done.wait(60)))
    worker.start()
    try:
        assert ready.wait(30)
        with_worker = held_bytes()
        worker_resident = psutil.Process(worker.pid).memory_info().rss
    finally:
        done.set()
        worker.join()
    assert worker_resident > 250 * 2**20  # its resident set shows the parent's pages
    assert with_worker - alone < 60 * 2**20
    assert data.sum() > 0
