"""How many threads the scorer runs: the CPUs the process may use, read from its affinity mask and
its cgroup's CPU quota (fake cgroup files here), no more than are idle (a fake /proc/stat), or
GROUNDSENSE_THREADS."""

import os

import pytest
import torch
from click.testing import CliRunner

from groundsense.cli import cli
from groundsense.errors import InputError
from groundsense.scorer import threads
from groundsense.scorer.threads import THREADS_VARIABLE, cgroup_cpu_quota, idle_cpus, size_threads, usable_cpus


@pytest.fixture
def torch_threads():
    """torch's thread count, restored after the test."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def cgroup(tmp_path, membership: str, files: dict[str, str]):
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "membership").write_text(membership)
    return root, tmp_path / "membership"


def test_a_v2_quota_caps_the_cpus_rounded_up(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    root, membership = cgroup(tmp_path, "0::/\n", {"cpu.max": "150000 100000\n"})
    assert cgroup_cpu_quota(root, membership) == 1.5
    assert usable_cpus(root, membership) == 2


def test_the_tightest_quota_of_the_cgroup_and_those_above_it_holds(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    root, membership = cgroup(tmp_path, "0::/pods/one\n", {"cpu.max": "max 100000", "pods/cpu.max": "100000 100000",
                                                           "pods/one/cpu.max": "max 100000"})
    assert cgroup_cpu_quota(root, membership) == 1.0 and usable_cpus(root, membership) == 1


def test_a_v1_quota_is_read_from_the_cpu_hierarchy(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    root, membership = cgroup(tmp_path, "5:memory:/docker/c\n4:cpu,cpuacct:/docker/c\n",
                              {"cpu/docker/c/cpu.cfs_quota_us": "-1", "cpu/docker/c/cpu.cfs_period_us": "100000",
                               "cpu/docker/cpu.cfs_quota_us": "50000", "cpu/docker/cpu.cfs_period_us": "100000"})
    assert cgroup_cpu_quota(root, membership) == 0.5
    assert usable_cpus(root, membership) == 1  # at least one


def test_without_a_quota_the_affinity_mask_decides(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5})
    root, membership = cgroup(tmp_path, "0::/\n", {"cpu.max": "max 100000"})
    assert cgroup_cpu_quota(root, membership) is None and usable_cpus(root, membership) == 3
    assert usable_cpus(tmp_path / "absent", tmp_path / "absent.txt") == 3  # no cgroup files at all


def test_the_scorer_runs_no_more_threads_than_cpus_unless_told(monkeypatch, torch_threads, caplog):
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    torch.set_num_threads(2)
    assert size_threads() == 1 and torch.get_num_threads() == 1
    assert not caplog.records
    monkeypatch.setenv(THREADS_VARIABLE, "3")  # an operator's choice wins over the mask, with a warning
    monkeypatch.setattr(threads, "_warned", set())
    assert size_threads() == 3 and torch.get_num_threads() == 3
    assert size_threads() == 3  # a second scorer loaded: no second warning
    warned = [r.message for r in caplog.records if "is more threads than" in r.message]
    assert warned == ["GROUNDSENSE_THREADS=3 is more threads than the 1 CPU this process may use: they will wait on "
                      "each other, and scoring slows down"]
    monkeypatch.setenv(THREADS_VARIABLE, "two")
    with pytest.raises(InputError, match="GROUNDSENSE_THREADS='two' is not a thread count"):
        size_threads()


def test_threads_on_the_command_line_reach_the_scorers_it_loads(monkeypatch, torch_threads):
    monkeypatch.setenv(THREADS_VARIABLE, "2")  # restored after the test; the command overrides it
    result = CliRunner().invoke(cli, ["--threads", "1", "examples"])
    assert result.exit_code == 0, result.output
    assert os.environ[THREADS_VARIABLE] == "1" and torch.get_num_threads() == 1
    assert "GROUNDSENSE_THREADS" in CliRunner().invoke(cli, ["--help"]).output


def proc_stat(*cpus: tuple[int, int]) -> str:
    """A /proc/stat whose cpuN lines have these (idle, busy) tick counts."""
    lines = ["cpu  9 9 9 9 9 0 0 0 0 0"]
    lines += [f"cpu{n} {busy} 0 0 {idle} 0 0 0 0 0 0" for n, (idle, busy) in enumerate(cpus)]
    return "\n".join(lines + ["intr 1 2 3"]) + "\n"


def test_a_cpu_busy_more_than_half_the_sample_is_not_idle():
    samples = iter([proc_stat((100, 100), (100, 100), (100, 100)),
                    proc_stat((190, 110), (120, 180), (100, 100))])  # cpu0 idle 90%, cpu1 20%, cpu2 no ticks
    assert idle_cpus({0, 1, 2}, seconds=0, read=lambda: next(samples)) == 1
    samples = iter([proc_stat((100, 100), (100, 100)), proc_stat((190, 110), (190, 110))])
    assert idle_cpus({1}, seconds=0, read=lambda: next(samples)) == 1  # only the process's own CPUs count
    assert idle_cpus({0}, seconds=0, read=lambda: "not a stat file") is None
    assert idle_cpus({0}, seconds=0, read=lambda: proc_stat((100, 100))) is None  # counters that never move


def test_the_first_scorer_runs_no_more_threads_than_idle_cpus(monkeypatch, torch_threads):
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    for idle, expected in ((1, 1), (0, 1), (None, 2)):  # a busy neighbour; all busy: at least one; unreadable
        monkeypatch.setattr(threads, "_sampled", False)
        monkeypatch.setattr(threads, "idle_cpus", lambda cpus, idle=idle: idle)
        torch.set_num_threads(2)
        assert size_threads() == expected
    torch.set_num_threads(2)
    monkeypatch.setattr(threads, "idle_cpus", lambda cpus: 1)
    assert size_threads() == 2  # a later load in the process samples no more (its own work would count)
