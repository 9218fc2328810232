"""How many CPU threads the scorer runs: as many as the process may use, not the host's cores.

torch sizes its thread pool by the cores it sees. Under ``taskset``, in a container with a CPU
quota, or on a machine that another job shares, that is more threads than the process gets, and
they wait on each other: beside one busy neighbour, a 2-thread ``detect`` on 2 cores ran 25 to
90 times slower than at 1 thread. So a scorer loaded for the CPU runs
:data:`THREADS_VARIABLE` threads where it is set (``groundsense --threads`` sets it), else at
most :func:`usable_cpus`, and no more than were idle when the process's first scorer loaded
(:func:`idle_cpus`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import InputError

log = logging.getLogger(__name__)

THREADS_VARIABLE = "GROUNDSENSE_THREADS"
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_MEMBERSHIP = Path("/proc/self/cgroup")


def usable_cpus(root: Path = CGROUP_ROOT, membership: Path = CGROUP_MEMBERSHIP) -> int:
    """The CPUs this process may run on (its affinity mask), capped by its cgroup's CPU quota
    rounded up (:func:`cgroup_cpu_quota`)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cgroup_cpu_quota(root, membership)
    return max(1, min(cpus, math.ceil(quota))) if quota is not None else cpus


def cgroup_cpu_quota(root: Path = CGROUP_ROOT, membership: Path = CGROUP_MEMBERSHIP) -> float | None:
    """The CPUs' worth of time per period that the process's cgroup, or one above it, allows
    (cgroup v2 ``cpu.max``; v1 ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``), or None where
    none is set or none can be read."""
    quotas = [quota for folder in _cgroup_folders(root, membership) if (quota := _quota(folder)) is not None]
    return min(quotas, default=None)


def _cgroup_folders(root: Path, membership: Path) -> list[Path]:
    """The process's cgroup folder and those above it, up to ``root`` (a container's own view
    of its cgroup is ``root`` itself); v1's ``cpu`` hierarchy where v2's is absent."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: "0::/path"
            base = root
        elif "cpu" in controllers.split(","):  # v1: "4:cpu,cpuacct:/path"
            base = root / "cpu"
        else:
            continue
        folder = base / path.strip("/")
        return [folder, *[parent for parent in folder.parents if parent.is_relative_to(base)]]
    return [root, root / "cpu"]


def _quota(folder: Path) -> float | None:
    try:
        if (folder / "cpu.max").is_file():
            quota, period = (folder / "cpu.max").read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        if (folder / "cpu.cfs_quota_us").is_file():
            quota_us = int((folder / "cpu.cfs_quota_us").read_text())
            return None if quota_us <= 0 else quota_us / int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError, ZeroDivisionError):
        return None
    return None


PROC_STAT = Path("/proc/stat")
IDLE_SAMPLE_S = 0.2  # how long the CPUs' idle time is sampled when a scorer loads


def idle_cpus(cpus: set[int], seconds: float = IDLE_SAMPLE_S,
              read: Callable[[], str] = lambda: PROC_STAT.read_text()) -> int | None:
    """How many of ``cpus`` (their numbers) were idle more than half of the next ``seconds``, by
    the kernel's counters (``/proc/stat``, read by ``read``); None where they cannot be read."""
    def sample() -> dict[int, tuple[int, int]]:
        counters = {}
        for line in read().splitlines():
            name, *values = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                ticks = [int(v) for v in values[:8]]  # user .. steal (guest time is counted in user already)
                counters[int(name[3:])] = (ticks[3] + ticks[4], sum(ticks))  # idle and iowait, all
        return counters

    try:
        before = sample()
        time.sleep(seconds)
        after = sample()
    except (OSError, ValueError, IndexError):
        return None
    ticked = {cpu: (after[cpu][0] - idle, after[cpu][1] - total) for cpu, (idle, total) in before.items()
              if cpu in after and after[cpu][1] > total}
    if not ticked:  # no counter moved (a sandbox's static /proc/stat): nothing to go by
        return None
    return sum(idle / total > 0.5 for idle, total in ticked.values())


_sampled = False  # whether this process sized its threads by the idle CPUs already
_warned: set[int] = set()  # the thread counts over the usable CPUs this process warned of


def configured_threads() -> int | None:
    """:data:`THREADS_VARIABLE` as a thread count, or None where it is not set."""
    value = os.environ.get(THREADS_VARIABLE, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise InputError(f"{THREADS_VARIABLE}={value!r} is not a thread count: set it to a whole number of 1 or "
                         "more, or unset it to use the CPUs this process may run on")
    return int(value)


def size_threads() -> int:
    """Set torch's thread count for the CPU: :func:`configured_threads` where set, else torch's
    own count capped at :func:`usable_cpus` and, the first time in a process, at the CPUs idle
    then (:func:`idle_cpus`, at least one); a lower count set before (``OMP_NUM_THREADS``, an
    earlier load) stays. Returns the count."""
    import torch

    global _sampled
    threads = configured_threads()
    if threads is not None and threads > (usable := usable_cpus()) and threads not in _warned:
        _warned.add(threads)  # once a process: every scorer it loads sizes its threads
        log.warning("%s=%d is more threads than the %d CPU%s this process may use: they will wait on each "
                    "other, and scoring slows down", THREADS_VARIABLE, threads, usable, "s" * (usable != 1))
    if threads is None:
        threads = min(torch.get_num_threads(), usable_cpus())
        if threads > 1 and not _sampled and hasattr(os, "sched_getaffinity"):
            # once a process: a later load (a judge beside a detector at work) would count the
            # process's own threads as a neighbour's, and torch's count is the whole process's
            _sampled = True
            idle = idle_cpus(os.sched_getaffinity(0))
            threads = threads if idle is None else max(1, min(threads, idle))
    if threads != torch.get_num_threads():
        torch.set_num_threads(threads)
    return threads


def use_threads(threads: int) -> None:
    """Run ``threads`` threads: torch's pool now, and the scorers and processes started later
    (:data:`THREADS_VARIABLE` set for them)."""
    os.environ[THREADS_VARIABLE] = str(threads)
    size_threads()
