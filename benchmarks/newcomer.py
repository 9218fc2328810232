"""What a newcomer waits for: the README's two commands, `make demo` then `make test` (the
product's suite), timed from a fresh clone of this repository's HEAD, beside ``../shared`` as a
checkout has it; then what CI runs after them: `make test-simd-fallback` (the product's numeric
tests on the fallback SIMD paths), `make test-system`, the product's system tests, and `make
test-harness`, the research harness's suite; last, the fast tier that CONTRIBUTING
suggests for the inner loop (both suites' tests not marked slow, a worker per core).

    python3 benchmarks/newcomer.py

The record goes to ``benchmarks/newcomer-KIND.json``, KIND the widest vector extension the CPU
has of those that change the suite's time and its default precision (``amx``, ``avx512_bf16``,
``avx512``, ``avx2``), so that each kind of machine keeps its own (``--out`` writes elsewhere).

The clone goes beside this checkout (so that its ``../shared`` resolves to the same data), with
a user cache of its own for the scorer's converted weights (``GROUNDSENSE_CACHE``: the demo
converts them, as on a new machine). pip's cache is the machine's, as found: say so when quoting
the times (a machine that never built llama-cpp-python takes minutes more for `make test`'s
install). Each command's wall time and exit code, its pytest runs' closing lines and the sum of
their times (``suite_seconds``: the tests without the installing), the commit, the CPU and its
cores are written to ``--out``; the clone is removed afterwards. Run it on a quiet machine: the suite's time
depends on what else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = (("make demo", ["make", "demo"]), ("make test", ["make", "test"]),
            ("make test-simd-fallback", ["make", "test-simd-fallback", "SUITE=tests"]),
            ("make test-system", ["make", "test-system"]), ("make test-harness", ["make", "test-harness"]),
            ('pytest -m "not slow" -n 2', [".venv/bin/python", "-m", "pytest", "-m", "not slow", "-n", "2", "-q"]))
# Each pytest run's closing line ("1,298 passed, 2 skipped in 963.1s (0:16:03)") and its seconds, so
# that a suite's time can be told from the installing around it.
PYTEST_SUMMARY = re.compile(
    r"^=*\s*(\d+ (?:passed|failed|errors?|skipped|deselected)\b.* in ([\d.]+)s\b.*?)\s*=*$", re.M)
# The flags /proc/cpuinfo lists, widest first: AMX and AVX-512 BF16 make bf16 the default precision.
KINDS = (("amx", "amx_bf16"), ("avx512_bf16", "avx512_bf16"), ("avx512", "avx512f"), ("avx2", "avx2"))


def cpuinfo_field(name: str) -> str | None:
    """The first value /proc/cpuinfo gives for ``name`` (None where there is no such file or field)."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(name)), None)


def cpu_name() -> str:
    return cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_kind() -> str:
    flags = (cpuinfo_field("flags") or "").split()
    return next((kind for kind, flag in KINDS if flag in flags), platform.machine())


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="The JSON file to write (default: benchmarks/newcomer-KIND.json).")
    args = parser.parse_args()
    kind = cpu_kind()
    out = args.out or REPO / "benchmarks" / f"newcomer-{kind}.json"
    if git("status", "--porcelain", "--untracked-files=no"):
        sys.exit("the checkout has uncommitted changes: a fresh clone would not hold them; commit first")
    commit = git("rev-parse", "--short", "HEAD")
    clone = Path(tempfile.mkdtemp(prefix="newcomer-", dir=REPO.parent))
    cache = Path(tempfile.mkdtemp(prefix="groundsense-cache-"))
    invocation = "python3 benchmarks/newcomer.py" + (f" --out {args.out}" if args.out else "")
    record: dict = {"command": invocation, "commit": commit, "cpu": cpu_name(), "cpu_kind": kind,
                    "logical_cores": len(os.sched_getaffinity(0)),
                    "pip_cache": "the machine's, as found", "weights_cache": "empty (converted by the demo)",
                    "chromium": "on the machine before the run" if shutil.which("chromium")
                    else "installed by make test-system (as root) or absent",
                    "commands": {}}
    try:
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        environment = {**os.environ, "GROUNDSENSE_CACHE": str(cache)}
        for name, command in COMMANDS:
            print(f"{name} in {clone} ...", file=sys.stderr, flush=True)
            begun = time.monotonic()
            done = subprocess.run(command, cwd=clone, env=environment, capture_output=True, text=True)
            seconds = time.monotonic() - begun
            runs = PYTEST_SUMMARY.findall(done.stdout)
            record["commands"][name] = {"seconds": round(seconds, 1), "exit_code": done.returncode,
                                        "last_line": (done.stdout.strip().splitlines() or [""])[-1][:300],
                                        "pytest_runs": [line for line, _ in runs],
                                        "suite_seconds": round(sum(float(s) for _, s in runs), 1)}
            print(f"{name}: {seconds:.0f} s, exit {done.returncode}", file=sys.stderr, flush=True)
            if done.returncode:
                sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
                break
    finally:
        shutil.rmtree(clone, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    if any(c["exit_code"] for c in record["commands"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
