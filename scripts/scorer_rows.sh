#!/usr/bin/env bash
# The rows of "which scorer, at what cost" that have no accuracy yet (docs/scorers.md, docs/results/scorer-cost.md):
# the paper-style RAGTruth sample scored by the 1.5B scorer, two-pass first. (A two-pass row with
# no set of its own takes the gap of its scorer's full set, the same two passes: the 0.5B one
# comes from the committed 0.5B full run.) Each run
# is resumable (rerun this script to continue) and lands in results/features beside the default
# scorer's sets, where it can be committed as it grows: reports leave an unfinished set out
# (docs/evaluation.md, "The cache"). When a run completes, re-render the reports they change (harness/tests/reports/test_published.py names any stale one):
#   groundsense eval scorer-cost --cache results/features --timings benchmarks/scorer_cost.json -o docs/results/scorer-cost.md
#   groundsense eval report --cache results/features -o docs/results
# On 2 CPU cores: about 2 h and 5.5 h (benchmarks/scorer_cost.json). On a GPU machine set
# DEVICE=cuda, where both take minutes (CUDA runs in bf16, so those features differ from fp32
# ones within bf16 precision; the cache key leaves the device out). Weights: `groundsense scorers`
# prints the pip lines.
set -euo pipefail
cd "$(dirname "$0")/.."
GS="${GS:-.venv/bin/groundsense} --threads ${THREADS:-2}"
DEVICE_FLAG=${DEVICE:+--device $DEVICE}
$GS eval extract ragtruth --scorer qwen2.5-coder-1.5b-instruct --mode two_pass --cache results/features $DEVICE_FLAG
$GS eval extract ragtruth --scorer qwen2.5-coder-1.5b-instruct --cache results/features $DEVICE_FLAG
