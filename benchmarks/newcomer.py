"""What a newcomer waits for: the README's two commands, `make demo` then `make test`, timed from a
fresh clone of this repository's HEAD, beside ``../shared`` as a checkout has it.

    python3 benchmarks/newcomer.py --out benchmarks/newcomer.json

The clone goes beside this checkout (so that its ``../shared`` resolves to the same data), with
a user cache of its own for the scorer's converted weights (``GROUNDSENSE_CACHE``: the demo
converts them, as on a new machine). pip's cache is the machine's, as found: say so when quoting
the times (a machine that never built llama-cpp-python takes minutes more for `make test`'s
install). Each command's wall time and exit code, the commit, the CPU and its cores are written
to ``--out``; the clone is removed afterwards. Run it on a quiet machine: the suite's time
depends on what else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = (("make demo", ["make", "demo"]), ("make test", ["make", "test"]))


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="The JSON file to write.")
    args = parser.parse_args()
    if git("status", "--porcelain", "--untracked-files=no"):
        sys.exit("the checkout has uncommitted changes: a fresh clone would not hold them; commit first")
    commit = git("rev-parse", "--short", "HEAD")
    clone = Path(tempfile.mkdtemp(prefix="newcomer-", dir=REPO.parent))
    cache = Path(tempfile.mkdtemp(prefix="groundsense-cache-"))
    record: dict = {"command": "python3 benchmarks/newcomer.py --out " + str(args.out), "commit": commit,
                    "cpu": cpu_name(), "logical_cores": len(os.sched_getaffinity(0)),
                    "pip_cache": "the machine's, as found", "weights_cache": "empty (converted by the demo)",
                    "commands": {}}
    try:
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        environment = {**os.environ, "GROUNDSENSE_CACHE": str(cache)}
        for name, command in COMMANDS:
            print(f"{name} in {clone} ...", file=sys.stderr, flush=True)
            begun = time.monotonic()
            done = subprocess.run(command, cwd=clone, env=environment, capture_output=True, text=True)
            seconds = time.monotonic() - begun
            record["commands"][name] = {"seconds": round(seconds, 1), "exit_code": done.returncode,
                                        "last_line": (done.stdout.strip().splitlines() or [""])[-1][:300]}
            print(f"{name}: {seconds:.0f} s, exit {done.returncode}", file=sys.stderr, flush=True)
            if done.returncode:
                sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
                break
    finally:
        shutil.rmtree(clone, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    if any(c["exit_code"] for c in record["commands"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
