#!/usr/bin/env bash
# The token-level feature caches (results/tokens), default scorer, in the order they are needed:
# TofuEval (dev + test), 1,500 RAGTruth train answers (the calibration set and RAGTruth's dev
# partition), the paper-style RAGTruth test sample, RAGBench validation and test. Every run is
# resumable: rerun this script to continue where a killed one stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
GS="${GS:-.venv/bin/groundsense} --threads ${THREADS:-2}"
CACHE=results/tokens
$GS eval extract tofueval --token-rows --cache $CACHE --no-progress
$GS eval extract ragtruth --split train --sample 1500 --token-rows --cache $CACHE --no-progress
$GS eval extract ragtruth --token-rows --cache $CACHE --no-progress
$GS eval extract ragbench --split validation --token-rows --cache $CACHE --no-progress
$GS eval extract ragbench --token-rows --cache $CACHE --no-progress
