#!/usr/bin/env bash
# The token-level feature caches, default scorer, in the order they are needed: TofuEval
# (dev + test) and the paper-style RAGTruth test sample (results/tokens); 1,500 RAGTruth train
# answers, the calibration set (results/calibration-tokens: the shipped threshold is refitted
# on it whichever detector is chosen); the RAGBench test sets (results/tokens: the third
# benchmark of the detector-selection protocol); with SPLIT=1, the whole RAGTruth test split
# (results/split-tokens: the protocol's rule 3, about 4 h on 2 cores). Candidate B failed rules 1
# and 2 (docs/results/selection-B.md), so rule 3 decides nothing and the split step is opt-in.
# Every run is resumable: rerun this script to continue where a killed one stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
GS="${GS:-.venv/bin/groundsense} --threads ${THREADS:-2}"
CACHE=results/tokens
$GS eval extract tofueval --token-rows --cache $CACHE
$GS eval extract ragtruth --token-rows --cache $CACHE
$GS eval extract ragtruth --split train --sample 1500 --token-rows --cache results/calibration-tokens
$GS eval extract ragbench --token-rows --cache $CACHE
[ "${SPLIT:-0}" = 1 ] || exit 0
# The whole split holds the paper-style sample's 600 answers: a new split cache starts from the
# sample's rows (the same configuration folder), so that they are not scored twice.
for sample in results/tokens/ragtruth/*-tokens-*; do
  [ -e "results/split-tokens/ragtruth/$(basename "$sample")" ] || { mkdir -p results/split-tokens/ragtruth && cp -r "$sample" results/split-tokens/ragtruth/; }
done
$GS eval extract ragtruth --sample full --token-rows --cache results/split-tokens
