"""The GPU throughput script (benchmarks/gpu_throughput.py) on CPU with its tiny config: the
library path it times must equal the naive path, or the script fails."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_throughput.py"


def test_the_gpu_script_matches_the_naive_path_on_a_tiny_cpu_model():
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--answers", "4", "--check", "2"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "max abs difference vs naive" in done.stdout
    assert "projected for all 2,700 test answers" in done.stdout
