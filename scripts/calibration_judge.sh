#!/usr/bin/env bash
# The 1.5B judge's scores of the shipped calibration's 1,500 RAGTruth training answers (the
# sample of scripts/default_calibration.sh), into the committed, resumable cache
# results/calibration-verifiers: what the shipped fused cascade's fusion is fitted on (issue #39,
# docs/verifiers.md); the committed cache holds every one of them. 11,364 sentences at about 2.5 s
# each at 2 threads on an idle 2-core CPU (these answers' evidence is longer than TofuEval's):
# about 8 hours; a run that stops is resumed by rerunning it. Extra arguments go to `eval verify`
# (`--device cuda` on a GPU takes minutes). Then `groundsense eval fusion --fit-fusion FILE
# --train-cache results/calibration-tokens --train-judges results/calibration-verifiers` fits the
# fusion on them.
set -euo pipefail
cd "$(dirname "$0")/.."
GS="${GS:-.venv/bin/groundsense} --threads ${THREADS:-2}"
$GS eval verify ragtruth --split train --sample 1500 --verifier judge:qwen2.5-coder-1.5b-instruct \
  --cache results/calibration-verifiers "$@"
