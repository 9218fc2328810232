"""The GPU throughput script (benchmarks/gpu_throughput.py) on CPU with its tiny config: the
library path it times must equal the naive path, or the script fails. It runs in this process
(torch is already imported), seeded, on two answers, without the warm-up."""

import runpy
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_throughput.py"


def test_the_gpu_script_matches_the_naive_path_on_a_tiny_cpu_model(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--tiny", "--answers", "2", "--check", "2", "--warmup", "0"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts its folder first
    with torch.random.fork_rng():  # the script seeds torch's generator
        try:
            runpy.run_path(str(SCRIPT), run_name="__main__")
        except SystemExit as exc:  # the script's failure: the library path differs from the naive one
            pytest.fail(f"the script exited: {exc.code}")
    shown = capsys.readouterr().out
    assert "max abs difference vs naive" in shown
    assert "projected for all 2,700 test answers" in shown
