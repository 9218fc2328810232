#!/usr/bin/env bash
# The token-level feature caches (results/tokens), default scorer, in the order they are needed:
# the three benchmarks' evaluation sets (TofuEval dev + test, the paper-style RAGTruth test
# sample, RAGBench test: their dev/test partitions serve the detector-selection protocol),
# then 1,500 RAGTruth train answers (the calibration set) and the whole RAGTruth test split.
# Every run is resumable: rerun this script to continue where a killed one stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
GS="${GS:-.venv/bin/groundsense} --threads ${THREADS:-2}"
CACHE=results/tokens
$GS eval extract tofueval --token-rows --cache $CACHE --no-progress
$GS eval extract ragtruth --token-rows --cache $CACHE --no-progress
$GS eval extract ragbench --token-rows --cache $CACHE --no-progress
$GS eval extract ragtruth --split train --sample 1500 --token-rows --cache results/calibration-tokens --no-progress
$GS eval extract ragtruth --sample full --token-rows --cache results/split-tokens --no-progress
