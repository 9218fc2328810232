#!/usr/bin/env bash
# Rebuild the shipped calibration of the default scorer (docs/calibration.md, "The shipped default").
# Data: a seeded sample (seed 0) of 1,500 RAGTruth *train* answers (never the test split the
# evaluation reports on), 250 with a labelled hallucination and 250 without in each of QA,
# Summary and Data2txt, scored in full mode at the default settings. The scoring run is the
# calibration step of scripts/token_rows.sh and shares its committed cache
# (results/calibration-tokens): rerun to resume a killed run; with the cache complete it scores
# nothing. The fit reads the cache in seconds: sentence thresholds at the best F1; answer
# thresholds the same unless a lower one separates the answers significantly better by Youden's J
# (docs/calibration.md, "How the answer threshold is fitted").
set -euo pipefail
cd "$(dirname "$0")/.."
GS="${GS:-.venv/bin/groundsense} --threads ${THREADS:-2}"
$GS eval extract ragtruth --split train --sample 1500 --token-rows --cache results/calibration-tokens
$GS eval calibrate --cache results/calibration-tokens -o src/groundsense/calibrations/smollm2-135m-instruct-k5.json
