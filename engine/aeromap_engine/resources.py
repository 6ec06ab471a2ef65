"""The CPUs and memory this process may use: the machine's, narrowed by the CPU affinity and by the limits of the
container (cgroup v2 or v1) it runs in. `os.cpu_count()` and psutil's figures see the whole host, so a container
given 2 CPUs on a 64-core host would start 64 threads and size its work by memory it cannot have."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
from pathlib import Path

import psutil

CGROUP = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 60  # cgroup v1 writes a number near 2**63 for "no limit"


def cpu_limit(cgroup: Path = CGROUP) -> int:
    """Whole CPUs available: the affinity mask's count, capped by a CPU quota (rounded up, at least 1)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        count = os.cpu_count() or 1
    quota = _cpu_quota(cgroup)
    if quota is not None:
        count = min(count, max(1, math.ceil(quota)))
    return max(1, count)


def available_memory(cgroup: Path = CGROUP) -> int:
    """Bytes this process may still allocate: the machine's available memory, or what is left under the
    container's limit or under the run's own limit (`AEROMAP_MEMORY_LIMIT`, a processing node's --max-memory)
    when that is smaller."""
    available = psutil.virtual_memory().available
    for room in (_cgroup_memory_room(cgroup), _run_memory_room()):
        if room is not None:
            available = max(0, min(available, room))
    return available


def workers_within_memory(wanted: int, working_bytes: int, share: float = 1.0) -> int:
    """At most `wanted` workers, fewer where `share` of the memory available would not hold each one's working
    set, and at least one: a stage sizes its processes or threads before it starts them, rather than learn the
    limit from the OOM killer."""
    return max(1, min(wanted, int(available_memory() * share) // max(1, working_bytes)))


def held_bytes() -> int:
    """Memory this process and all its children hold, now. With children, the sum of their proportional set sizes,
    where a page shared by n processes counts 1/n: forked workers share their parent's pages, which their resident
    sets would count again. Alone, its resident set, which the kernel gives at a fraction of the cost."""
    process = psutil.Process()
    children = process.children(recursive=True)
    if not children:
        return process.memory_info().rss
    total = _proportional_bytes(process)
    for child in children:
        try:
            total += _proportional_bytes(child)
        except psutil.Error:  # ended since it was listed
            pass
    return total


def _proportional_bytes(process: psutil.Process) -> int:
    """A process's proportional set size from the kernel's summary; its resident set where there is none (Linux
    before 4.14, other systems)."""
    summary = _read(Path(f"/proc/{process.pid}/smaps_rollup")) or ""
    for line in summary.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return process.memory_info().rss


def release_free_memory() -> None:
    """Hands the memory freed inside the C allocator's heaps back to the system. glibc keeps freed blocks of a few
    MB (NumPy arrays) for reuse, so a process's memory after large temporary arrays stays at their high-water mark;
    a no-op without glibc."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _glibc()


def _run_memory_room() -> int | None:
    """The run's memory limit less what this process and its children hold; None without one."""
    limit = os.environ.get("AEROMAP_MEMORY_LIMIT", "")
    return int(limit) - held_bytes() if limit.isdigit() else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu_quota(cgroup: Path) -> float | None:
    """CPUs' worth of time the container may use per period; None without a limit."""
    v2 = _read(cgroup / "cpu.max")
    if v2 is not None:
        quota, _, period = v2.partition(" ")
        return None if quota == "max" or not period else int(quota) / int(period)
    quota, period = _read(cgroup / "cpu" / "cpu.cfs_quota_us"), _read(cgroup / "cpu" / "cpu.cfs_period_us")
    if quota is None or period is None or int(quota) <= 0:
        return None
    return int(quota) / int(period)


# Where each cgroup version keeps the memory limit, the usage, the statistics, and the statistic of page cache that
# could be reclaimed.
MEMORY_LAYOUTS = (("memory.max", "memory.current", "memory.stat", "inactive_file"),
                  ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat",
                   "total_inactive_file"))


def _cgroup_memory_room(cgroup: Path) -> int | None:
    """The container's memory limit less what it uses now (page cache counts as reclaimable); None without one."""
    for limit_file, used_file, stat_file, cache_key in MEMORY_LAYOUTS:
        limit, used = _read(cgroup / limit_file), _read(cgroup / used_file)
        if limit is None:
            continue
        if used is None or limit == "max" or int(limit) >= UNLIMITED:
            return None
        stats = dict(line.split(" ", 1) for line in (_read(cgroup / stat_file) or "").splitlines() if " " in line)
        return int(limit) - int(used) + int(stats.get(cache_key, 0))
    return None
